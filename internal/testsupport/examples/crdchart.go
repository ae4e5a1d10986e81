package examples

import (
	"fmt"
	"strings"
)

// CRDChartFiles is a chart of n CRDs of about size bytes each (in n files:
// Helm's loader refuses files over 5 MiB) and one ConfigMap, with long
// descriptions as real operator CRDs have: the bench's crds-10mb chart
// (20, 512 KiB) and the helm package's benchmarks of it.
func CRDChartFiles(n, size int) map[string][]byte {
	f := map[string][]byte{
		"Chart.yaml":               []byte("apiVersion: v2\nname: crds\nversion: 1.0.0\n"),
		"templates/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-crds\ndata:\n  crds: \"" + fmt.Sprint(n) + "\"\n"),
	}
	desc := "description: " + strings.Repeat("This field of the synthetic operator's resource is documented at length, as generated CRDs are. ", 2)
	for i := 0; i < n; i++ {
		var sb strings.Builder
		fmt.Fprintf(&sb, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: kind%02[1]ds.crds.example.com\nspec:\n  group: crds.example.com\n"+
			"  names: {kind: Kind%02[1]d, listKind: Kind%02[1]dList, plural: kind%02[1]ds, singular: kind%02[1]d}\n  scope: Namespaced\n  versions:\n"+
			"    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n            spec:\n              type: object\n              properties:\n", i)
		for j := 0; sb.Len() < size; j++ {
			fmt.Fprintf(&sb, "                field%04d:\n                  type: object\n                  %s\n                  properties:\n", j, desc)
			for k := 0; k < 4; k++ {
				fmt.Fprintf(&sb, "                    leaf%d:\n                      type: string\n                      %s\n", k, desc)
			}
		}
		f[fmt.Sprintf("crds/kind%02d.yaml", i)] = []byte(sb.String())
	}
	return f
}
