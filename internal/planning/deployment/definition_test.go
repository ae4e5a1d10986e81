package deployment_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
)

const header = "apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1\nkind: ComponentDeployment\nmetadata: {name: t}\n"

func TestDecodeMinimal(t *testing.T) {
	d, err := deployment.Decode("t.yaml", []byte(header+"spec:\n  renders:\n  - resource: {name: chart}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Spec.Renders) != 1 || d.Spec.Renders[0].Name != "chart" {
		t.Fatalf("render name does not default to the resource name: %+v", d.Spec.Renders)
	}
}

// Strict decoding: every mistake names the field path.
func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		mentions  []string
	}{
		{"unknown top-level field", header + "spec: {renders: [{resource: {name: c}}]}\nstatus: {}\n", []string{"status", "unknown field", "known fields: apiVersion, kind, metadata, spec"}},
		{"unknown nested field", header + "spec:\n  renders:\n  - resource: {name: c}\n    valuez: {a: 1}\n", []string{"spec.renders[0].valuez (line 7)", "unknown field"}},
		{"unknown parameter field", header + "spec:\n  parameters:\n    \"n\": {type: integer, minimun: 1}\n  renders: [{resource: {name: c}}]\n", []string{"spec.parameters.n.minimun"}},
		{"unknown mapping field", header + "spec:\n  renders:\n  - resource: {name: c}\n    localization: [{resource: {name: i}, repo: image.repository}]\n", []string{"spec.renders[0].localization[0].repo"}},
		{"wrong kind of value", header + "spec:\n  renders:\n  - resource: {name: c}\n    releaseName: [a]\n", []string{"spec.renders[0].releaseName", "want a string, got a list"}},
		{"wrong number", header + "spec:\n  parameters:\n    \"n\": {type: integer, minLength: 1.5}\n  renders: [{resource: {name: c}}]\n", []string{"spec.parameters.n.minLength", "want an integer"}},
		{"duplicate key", header + "spec:\n  renders: [{resource: {name: c}}]\n  renders: [{resource: {name: d}}]\n", []string{"line 6", `"renders"`, "defined twice", "at line 5", "keep one"}},
		{"two documents", header + "spec: {renders: [{resource: {name: c}}]}\n---\n" + header, []string{"several YAML documents", "line 5"}},
		{"not a map", "- a\n", []string{"not a YAML map"}},
		{"wrong apiVersion", "apiVersion: v1\nkind: ComponentDeployment\nspec: {renders: [{resource: {name: c}}]}\n", []string{"apiVersion", "deploy.argocd-ocm-plugin.io/v1alpha1"}},
		{"wrong kind", "apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1\nkind: Deployment\nspec: {renders: [{resource: {name: c}}]}\n", []string{"kind", "ComponentDeployment"}},
		{"no renders", header + "spec: {}\n", []string{"spec.renders", "no renders"}},
		{"render without resource name", header + "spec: {renders: [{resource: {version: '1'}}]}\n", []string{"spec.renders[0].resource", "name"}},
		{"duplicate render", header + "spec: {renders: [{resource: {name: c}}, {resource: {name: c}}]}\n", []string{"spec.renders[1].name", "twice"}},
		{"bad parameter type", header + "spec:\n  parameters: {\"n\": {type: int}}\n  renders: [{resource: {name: c}}]\n", []string{"spec.parameters.n", `"int"`}},
		{"bad parameter name", header + "spec:\n  parameters: {my-param: {type: string}}\n  renders: [{resource: {name: c}}]\n", []string{"my-param", "CEL"}},
		{"default of the wrong type", header + "spec:\n  parameters: {\"n\": {type: integer, default: two}}\n  renders: [{resource: {name: c}}]\n", []string{"spec.parameters.n", "default", "want an integer"}},
		{"default out of bounds", header + "spec:\n  parameters: {\"n\": {type: integer, default: 9, maximum: 5}}\n  renders: [{resource: {name: c}}]\n", []string{"default", "maximum 5"}},
		{"bad pattern", header + "spec:\n  parameters: {\"n\": {type: string, pattern: '('}}\n  renders: [{resource: {name: c}}]\n", []string{"pattern"}},
		{"secret of type string", header + "spec:\n  parameters: {p: {type: string, secret: true}}\n  renders: [{resource: {name: c}}]\n", []string{"secret", "object"}},
		{"secret with a literal default", header + "spec:\n  parameters: {p: {secret: true, default: {password: hunter2}}}\n  renders: [{resource: {name: c}}]\n", []string{"spec.parameters.p", "default", "secretName"}},
		{"remote schema ref", header + "spec:\n  parameters: {p: {type: object, schema: {$ref: 'https://example.com/s.json'}}}\n  renders: [{resource: {name: c}}]\n", []string{"only local references"}},
		{"mapping without paths", header + "spec:\n  renders:\n  - resource: {name: c}\n    localization: [{resource: {name: i}}]\n", []string{"localization[0]", "sets nothing"}},
		{"bad patch path", header + "spec:\n  renders:\n  - resource: {name: c}\n    patches: [{target: {kind: Deployment}, path: 'spec..replicas', value: 1}]\n", []string{"patches[0].path", "empty key"}},
		{"patch without kind", header + "spec:\n  renders:\n  - resource: {name: c}\n    patches: [{target: {name: x}, path: a, value: 1}]\n", []string{"patches[0].target.kind"}},
		{"CEL syntax error", header + "spec:\n  renders:\n  - resource: {name: c}\n    values: {replicas: '${1 +}'}\n", []string{"spec.renders[0].values.replicas", "${1 +}", "column"}},
		{"unknown parameter in CEL", header + "spec:\n  parameters: {replicas: {type: integer}}\n  renders:\n  - resource: {name: c}\n    values: {a: '${parameters.replica}'}\n",
			[]string{"spec.renders[0].values.a", "${parameters.replica}", `unknown parameter "replica"`, "known: replicas", "column 11"}},
		{"unknown variable in CEL", header + "spec:\n  renders:\n  - resource: {name: c}\n    values: {a: '${params.x}'}\n", []string{"${params.x}", "undeclared reference"}},
		{"unterminated expression", header + "spec:\n  renders:\n  - resource: {name: c}\n    values: {a: 'x ${parameters'}\n", []string{"spec.renders[0].values.a", "unterminated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := deployment.Decode("def.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, errdef.ErrInvalidInput) {
				t.Errorf("not ErrInvalidInput: %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "def.yaml") {
				t.Errorf("%q does not name the document", msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("%q lacks %q", msg, m)
				}
			}
		})
	}
}

func TestDecodeSizeLimit(t *testing.T) {
	big := header + "spec:\n  renders: [{resource: {name: c}}]\n# " + strings.Repeat("x", yamlfile.MaxDocumentSize) + "\n"
	_, err := deployment.Decode("big.yaml", []byte(big))
	if !errors.Is(err, errdef.ErrLimitExceeded) {
		t.Fatalf("got %v", err)
	}
}
