package examples

import (
	"fmt"
	"strings"
)

// LargeCRD is a CRD whose schema nests depth levels of width properties
// each (real operator CRDs are often hundreds of KiB): the synthetic CRD of
// the bench's large chart and of the manifests benchmarks.
func LargeCRD(depth, width int) []byte {
	var b strings.Builder
	b.WriteString(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.platform.example.com
spec:
  group: platform.example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
`)
	var props func(indent string, level int)
	props = func(indent string, level int) {
		if level == depth {
			b.WriteString(indent + "type: string\n" + indent + "description: a leaf field of the synthetic widget schema\n")
			return
		}
		b.WriteString(indent + "type: object\n" + indent + "description: a nested level of the synthetic widget schema\n" + indent + "properties:\n")
		for i := 0; i < width; i++ {
			fmt.Fprintf(&b, "%s  field%d:\n", indent, i)
			props(indent+"    ", level+1)
		}
	}
	props("              ", 2)
	return []byte(b.String())
}
