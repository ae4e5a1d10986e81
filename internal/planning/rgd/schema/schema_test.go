package schema_test

import (
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/schema"
)

// TestParameters: kro's SimpleSchema becomes typed, defaulted parameters;
// float is kro's number type; custom types expand; the instance spec holds
// integers where JSON would.
func TestParameters(t *testing.T) {
	s := &schema.Schema{Kind: "X",
		Types: map[string]any{"Owner": map[string]any{"team": "string | default=core"}},
		Spec: map[string]any{"ratio": "float | default=1.5", "ports": "[]integer | default=[80,443]", "owner": "Owner",
			"app": map[string]any{"name": "string | required=true minLength=2"}}}
	inst, err := s.Parameters("test")
	if err != nil {
		t.Fatal(err)
	}
	ps := inst.Definition.Spec.Parameters
	for name, typ := range map[string]string{"ratio": "number", "ports": "array", "owner.team": "string", "app.name": "string"} {
		if ps[name] == nil || ps[name].Type != typ {
			t.Errorf("parameter %s: want type %s, got %+v", name, typ, ps[name])
		}
	}
	vals, err := inst.Definition.ResolveParameters(map[string]string{"app.name": "shop"})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := inst.Spec(vals, map[string]string{"app.name": "shop"})
	if err != nil {
		t.Fatal(err)
	}
	ports, _ := spec["ports"].([]any)
	if len(ports) != 2 || ports[0] != int64(80) {
		t.Errorf("ports: want int64s, got %#v", spec["ports"])
	}
	if spec["ratio"] != 1.5 {
		t.Errorf("ratio: %#v", spec["ratio"])
	}
	_, err = inst.Definition.ResolveParameters(map[string]string{"app.name": "x"})
	if err == nil || !strings.Contains(err.Error(), "app.name") {
		t.Errorf("minLength: want a refusal naming the parameter, got %v", err)
	}
	var _ []explain.ParamValue = vals
}

// TestKroRefusals: what kro's SimpleSchema refuses is refused in its words.
func TestKroRefusals(t *testing.T) {
	for want, spec := range map[string]map[string]any{
		"unknown type: number":                  {"n": "number"},
		"default value must be a valid integer": {"n": "integer | default=x"},
	} {
		_, err := (&schema.Schema{Kind: "X", Spec: spec}).Parameters("test")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q, got %v", want, err)
		}
	}
}
