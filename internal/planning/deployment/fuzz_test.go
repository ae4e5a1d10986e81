package deployment_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
)

// FuzzDecodeDefinition: the deployment definition decoder never panics; it
// refuses with ErrInvalidInput, or returns a definition that validates, has
// the format's apiVersion and kind and at least one render naming a
// resource, and that survives a round trip through JSON unchanged.
// Seeds: the documented examples (docs/examples) and hostile shapes.
func FuzzDecodeDefinition(f *testing.F) {
	ents, _ := filepath.Glob(filepath.Join("..", "..", "..", "docs", "examples", "*.yaml"))
	for _, p := range ents {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	head := "apiVersion: " + deployment.APIVersion + "\nkind: " + deployment.Kind + "\nmetadata: {name: x}\n"
	for _, s := range []string{
		head + "spec:\n  renders:\n  - resource: {name: chart}\n",
		head + "spec:\n  parameters:\n    replicas: {type: integer, default: 2, minimum: 1}\n  renders:\n  - resource: {name: chart}\n    values: {replicas: '${parameters.replicas}'}\n",
		head + "spec:\n  renders:\n  - resource: {name: chart}\n    when: '${true}'\n    patches:\n    - target: {kind: Deployment}\n      path: spec.replicas\n      value: 3\n",
		head + "spec:\n  renders:\n  - resource: {name: chart}\n  - resource: {name: chart}\n",
		head + "spec:\n  renders: []\n  unknown: 1\n",
		head + "spec: {renders: [{resource: {name: c}}]}\n---\n" + head,
		"apiVersion: v1\nkind: ConfigMap\n",
		"a: &a [x, x]\nb: [*a, *a]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := deployment.Decode("fuzz.yaml", data)
		if err != nil {
			if d != nil {
				t.Fatal("definition returned with an error")
			}
			if !errors.Is(err, errdef.ErrInvalidInput) {
				t.Fatalf("error without ErrInvalidInput: %v", err)
			}
			return
		}
		if d.APIVersion != deployment.APIVersion || d.Kind != deployment.Kind || len(d.Spec.Renders) == 0 {
			t.Fatalf("accepted %+v", d)
		}
		for i, r := range d.Spec.Renders {
			if r.Resource["name"] == "" {
				t.Fatalf("render %d names no resource", i)
			}
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("accepted definition does not validate: %v", err)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("accepted definition does not marshal: %v", err)
		}
		d2, err := deployment.Decode("fuzz.yaml", b)
		if err != nil {
			t.Fatalf("round trip: %v\n%s", err, b)
		}
		b2, _ := json.Marshal(d2)
		if !reflect.DeepEqual(b, b2) {
			t.Fatalf("round trip changed the definition:\n%s\n%s", b, b2)
		}
	})
}
