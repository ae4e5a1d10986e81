package rgd_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/application"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/plantest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// component ships each document as an RGD resource of a component version
// held in memory: the planner is tested at its own boundary (input → plan),
// reading through plantest.Reader instead of the renderer's access.
func component(docs map[string]string) *plantest.Component {
	var res []ocm.Resource
	for name := range docs {
		res = append(res, ocm.Resource{ElementMeta: ocm.ElementMeta{Name: name}, Type: "blob",
			Access: ocm.Access{Type: "localBlob/v1", Fields: map[string]any{"mediaType": rgd.MediaType, "localReference": "sha256:0"}}})
	}
	c := plantest.NewComponent("acme.org/app", "1.0.0", res...)
	maps.Copy(c.Docs, docs)
	return c
}

// planRGD plans one RGD document for an instance (parameters as an
// Application gives them) and returns the steps' objects.
func planRGD(t *testing.T, doc string, params map[string]string) ([]plan.Step, error) {
	t.Helper()
	cv := component(map[string]string{"rgd": doc})
	p := rgd.Wrap(&deployment.DefinitionPlanner{})
	pl, err := p.Plan(context.Background(), cv, plan.Input{Request: application.Request{Application: "demo", Namespace: "apps", Parameters: params}, Reader: &plantest.Reader{}})
	if err != nil {
		return nil, err
	}
	return pl.Steps, nil
}

func stepObjects(steps []plan.Step) []manifests.Object {
	var out []manifests.Object
	for _, s := range steps {
		out = append(out, s.Objects...)
	}
	return out
}

const appRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: app}
spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      name: string | default=web
      replicas: integer | default=2 minimum=1
      ports: "[]integer | default=[80,443]"
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.spec.name}-config", namespace: "${schema.metadata.namespace}"}
        data:
          app: ${schema.metadata.name}
    - id: deploy
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${schema.spec.name}"}
        spec:
          replicas: ${schema.spec.replicas}
          template:
            spec:
              containers:
                - name: app
                  image: nginx
                  envFrom: [{configMapRef: {name: "${config.metadata.name}"}}]
`

// TestPlanBoundary: an RGD document read through the reader becomes steps
// of objects, in the order their references make, each in the sync wave
// of its level; the instance parameters are typed (replicas stays an
// integer) and defaulted.
func TestPlanBoundary(t *testing.T) {
	steps, err := planRGD(t, appRGD, map[string]string{"replicas": "3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 {
		t.Fatalf("want 2 steps, got %d", len(steps))
	}
	for i, s := range steps {
		if s.Ordering == nil || s.Ordering.Placement.SyncWave == nil || *s.Ordering.Placement.SyncWave != i {
			t.Errorf("step %d: want sync wave %d, got %+v", i, i, s.Ordering)
		}
	}
	want := manifeststest.Parse(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: apps}
data: {app: demo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: app
          image: nginx
          envFrom: [{configMapRef: {name: web-config}}]
`)
	manifeststest.Equal(t, stepObjects(steps), want)
}

// TestPlanBoundaryRefusals: what the graph cannot be is refused with one
// line naming the RGD and the node, before anything is evaluated.
func TestPlanBoundaryRefusals(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"cycle": {strings.Replace(appRGD, `app: ${schema.metadata.name}`, `app: ${deploy.metadata.name}`, 1), "config -> deploy"},
		"status of a plain node": {strings.Replace(appRGD, `app: ${schema.metadata.name}`, `app: ${deploy.status.readyReplicas}`, 1),
			"reads the status of node deploy (Deployment.apps), which only a cluster has"},
		"wrong kind": {strings.Replace(appRGD, "kind: ResourceGraphDefinition", "kind: Other", 1), "is not a kro.run/v1alpha1 ResourceGraphDefinition"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := planRGD(t, tc.doc, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ResourceGraphDefinition") {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

const semanticsRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: sem}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Sem
    spec:
      ports: "[]integer | default=[80,443]"
      ratio: float | default=1.5
      backup: boolean | default=false
  resources:
    - id: backupConfig
      includeWhen: ["${schema.spec.backup}"]
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: backup}
        data: {schedule: "daily"}
    - id: backupJob
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${backupConfig.metadata.name}-job"}
    - id: svc
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: svc}
        data:
          ports: ${json.marshal(schema.spec.ports.map(p, p + 1))}
          ratio: ${string(schema.spec.ratio * 2.0)}
          kind: '${type(schema.spec.ports[0]) == type(1) ? "int" : "double"}'
`

// TestPlanKroSemantics: as kro runs it, a node reading a node excluded by
// includeWhen is excluded with it; an integer list default stays integers;
// float is a type (kro's; OpenAPI's number) and number is none.
func TestPlanKroSemantics(t *testing.T) {
	steps, err := planRGD(t, semanticsRGD, nil)
	if err != nil {
		t.Fatal(err)
	}
	manifeststest.Equal(t, stepObjects(steps), manifeststest.Parse(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: svc}
data: {ports: "[81,444]", ratio: "3", kind: int}
`))
	steps, err = planRGD(t, semanticsRGD, map[string]string{"backup": "true", "ratio": "0.25"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(stepObjects(steps)); n != 3 {
		t.Fatalf("with backup: want 3 objects, got %d", n)
	}
	_, err = planRGD(t, strings.Replace(semanticsRGD, "ratio: float", "ratio: number", 1), nil)
	if err == nil || !strings.Contains(err.Error(), "unknown type: number") {
		t.Fatalf("number: want kro's refusal, got %v", err)
	}
}

// appDir is an Application's directory with files, confined as generate
// and the render server confine it.
func appDir(t *testing.T, files map[string]string) *application.Root {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := application.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// TestPlanDefinitionFile: an RGD given as the definition file (render
// --definition my-rgd.yaml, the definition parameter) is read as an RGD by
// its kind and renders against the component, which ships none; a
// ComponentDeployment file is left to package deployment.
func TestPlanDefinitionFile(t *testing.T) {
	cv := component(nil)
	p := rgd.Wrap(&deployment.DefinitionPlanner{})
	root := appDir(t, map[string]string{"my-rgd.yaml": appRGD, "cd.yaml": "apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1\nkind: ComponentDeployment\nspec: {}\n",
		"bad.yaml": strings.Replace(appRGD, "replicas: ${schema.spec.replicas}", "replicas: ${schema.spec.replicas +}", 1)})
	in := plan.Input{Request: application.Request{Application: "demo", Namespace: "apps", DefinitionFile: "my-rgd.yaml", Root: root}, Reader: &plantest.Reader{}}
	pl, err := p.Plan(context.Background(), cv, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(stepObjects(pl.Steps)); got != 2 {
		t.Fatalf("want 2 objects, got %d", got)
	}
	def, err := p.LoadParameters(context.Background(), cv, in)
	if err != nil || def.Spec.Parameters["replicas"] == nil {
		t.Fatalf("parameters of the file RGD: %v, %v", def, err)
	}
	in.DefinitionFile = "cd.yaml"
	_, err = p.Plan(context.Background(), cv, in)
	if err == nil || strings.Contains(err.Error(), "ResourceGraphDefinition") {
		t.Fatalf("a ComponentDeployment file: want package deployment's answer, got %v", err)
	}
	in.DefinitionFile = "bad.yaml"
	_, err = p.Plan(context.Background(), cv, in)
	if err == nil || !strings.Contains(err.Error(), `ResourceGraphDefinition app (file "bad.yaml"): node deploy`) {
		t.Fatalf("a bad file RGD: want an error naming the file and node, got %v", err)
	}
}

// hostileRGD is an RGD of nodes nodes, each a forEach over a list of
// items strings, or a plain node when items is 0.
func hostileRGD(nodes, items int) string {
	var b strings.Builder
	b.WriteString("apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: h}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: H\n    spec:\n")
	fmt.Fprintf(&b, "      xs: '[]string | default=[%s]'\n  resources:\n", strings.TrimSuffix(strings.Repeat(`"x",`, items), ","))
	for i := range nodes {
		fmt.Fprintf(&b, "    - id: n%d\n", i)
		if items > 0 {
			b.WriteString("      forEach: [{x: \"${schema.spec.xs}\"}]\n")
		}
		fmt.Fprintf(&b, "      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"n%d-${string(x)}\"}}\n", i)
	}
	return b.String()
}

// TestPlanBudget: the objects an RGD makes are bounded like decoded YAML
// (500 nodes × 256 forEach items would be 128,000), and refused early.
func TestPlanBudget(t *testing.T) {
	_, err := planRGD(t, hostileRGD(500, 256), nil)
	if err == nil || !errors.Is(err, errdef.ErrLimitExceeded) || !strings.Contains(err.Error(), "more than 10000 objects") {
		t.Fatalf("want the object bound, got %v", err)
	}
	if _, err := planRGD(t, hostileRGD(3, 256), nil); err != nil {
		t.Fatalf("768 objects: %v", err)
	}
}

// TestPlanRefusesUnusedInputs: value files, a path and values do nothing
// for an RGD; they are refused, naming the parameter.
func TestPlanRefusesUnusedInputs(t *testing.T) {
	cv := component(map[string]string{"rgd": appRGD})
	p := rgd.Wrap(&deployment.DefinitionPlanner{})
	for want, req := range map[string]application.Request{
		`value-files "values-prod.yaml"`: {ValueFiles: []string{"values-prod.yaml"}},
		`path "overlays/prod"`:           {Path: "overlays/prod"},
		`values: `:                       {Set: []string{"a=b"}},
	} {
		in := plan.Input{Request: req, Reader: &plantest.Reader{}}
		_, err := p.Plan(context.Background(), cv, in)
		if err == nil || !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ResourceGraphDefinition app") {
			t.Errorf("want a refusal naming %s, got %v", want, err)
		}
	}
}

// TestPlanLiteralKinds: an expression in apiVersion or kind is refused (as
// kro does): it would decide after the checks what a node is; a Secret
// filled from a forEach item of the instance is refused like one filled
// from a parameter.
func TestPlanLiteralKinds(t *testing.T) {
	for name, tc := range map[string]struct{ tmpl, want string }{
		"kind":        {`{apiVersion: v1, kind: '${"Secret"}', metadata: {name: s}}`, "template.kind: ${\"Secret\"}: apiVersion and kind are literal"},
		"apiVersion":  {`{apiVersion: '${"argoproj.io/v1alpha1"}', kind: Application, metadata: {name: a}}`, "template.apiVersion"},
		"secret item": {`{apiVersion: v1, kind: Secret, metadata: {name: "s-${x}"}, stringData: {v: "${x}"}}`, "a Secret filled from an instance parameter"},
	} {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(hostileRGD(1, 2), `{apiVersion: v1, kind: ConfigMap, metadata: {name: "n0-${string(x)}"}}`, tc.tmpl, 1)
			_, err := planRGD(t, doc, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "node n0") {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

// TestPlanNesting: deep input costs no more than the nesting bound of
// every document lets it (a template 5,000 levels deep, an object
// parameter 8,000 deep, an item of a list type 3,000 deep), and the refusal
// names the bound; a self-containing type is refused as kro refuses it.
func TestPlanNesting(t *testing.T) {
	deep := func(n int, open, close string) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	typed := `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: t}
spec:
  schema:
    apiVersion: v1alpha1
    kind: T
    types:
      Node: {name: string, children: "[]object"}
    spec:
      tree: "[]Node"
      blob: object
  resources:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {v: "${json.marshal(schema.spec)}"}}
`
	for name, tc := range map[string]struct {
		doc    string
		params map[string]string
	}{
		"template":         {strings.Replace(appRGD, "data:\n          app: ${schema.metadata.name}", "data:\n          app: "+deep(5000, "[", "]"), 1), nil},
		"list type item":   {typed, map[string]string{"tree": deep(3000, `[{name: a, children: `, `}]`)}},
		"object parameter": {typed, map[string]string{"blob": deep(8000, "{a: ", "}")}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := planRGD(t, tc.doc, tc.params)
			if err == nil || !errors.Is(err, errdef.ErrLimitExceeded) || !strings.Contains(err.Error(), "nest") {
				t.Fatalf("want the nesting bound, got %.300v", err)
			}
		})
	}
	_, err := planRGD(t, strings.Replace(typed, `children: "[]object"`, `children: "[]Node"`, 1), nil)
	if err == nil || !strings.Contains(err.Error(), "self references are not allowed") {
		t.Fatalf("a self-containing type: want kro's refusal, got %v", err)
	}
}
