package deployment_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
)

// A deployment definition reads like every other YAML file of the plugin,
// as Kubernetes tools read YAML (package yamlfile; it used to be YAML 1.2,
// where yes and on were text). What changed, case by case.
func TestDefinitionYAMLDialect(t *testing.T) {
	def := func(params string) string {
		return header + "spec:\n  parameters:\n" + params + "  renders: [{resource: {name: c}}]\n"
	}
	for _, tc := range []struct {
		name, params string
		want         any    // the default of parameter p, as JSON
		err          string // or the error
	}{
		{"on is a boolean", "    p: {type: boolean, default: on}\n", true, ""},
		{"No is a boolean", "    p: {type: boolean, default: No}\n", false, ""},
		{"0777 is octal", "    p: {type: integer, default: 0777}\n", int64(511), ""},
		{"1_000 is a thousand", "    p: {type: integer, default: 1_000}\n", int64(1000), ""},
		{"quoted yes stays text", "    p: {type: string, default: \"yes\"}\n", "yes", ""},
		{"a block scalar stays text", "    p:\n      type: string\n      default: |-\n        on\n", "on", ""},
		{"a date stays text", "    p: {type: string, default: 2024-01-31}\n", "2024-01-31", ""},
		{"unquoted yes is no string", "    p: {type: string, default: yes}\n", nil, "want a string, got the boolean true"},
		{"a key Kubernetes renames is refused", "    on: {type: string}\n", nil, `key on is read by Kubernetes tools as "true": quote it`},
		{"a numeric key is refused", "    0x10: {type: string}\n", nil, `key 0x10 is read by Kubernetes tools as "16"`},
		{"a quoted key is the key", "    \"on\": {type: string, default: x}\n", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := deployment.Decode("def.yaml", []byte(def(tc.params)))
			if tc.err != "" {
				if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if _, ok := d.Spec.Parameters["on"]; !ok {
					t.Fatalf("parameters %v", d.Spec.Parameters)
				}
				return
			}
			p := d.Spec.Parameters["p"]
			if p == nil || fmt.Sprintf("%T %v", p.Default, p.Default) != fmt.Sprintf("%T %v", tc.want, tc.want) {
				t.Fatalf("default = %#v, want %#v", p, tc.want)
			}
		})
	}
}
