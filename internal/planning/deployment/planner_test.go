package deployment_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

const testComponent = "example.com/test/app"

// testCTF writes one component with the podinfo-mini chart, its image and
// the given extra resources.
func testCTF(t *testing.T, extra ...ocmbuild.Resource) string {
	t.Helper()
	chart, err := os.ReadFile(fixtures.Path(t, "inputs", "podinfo-mini-0.1.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	c := &ocmbuild.Component{Name: testComponent, Version: "1.0.0", Resources: append([]ocmbuild.Resource{
		{Name: "chart", Type: "helmChart", Data: chart, MediaType: ocmbuild.MediaTypeHelmChart},
		{Name: "image", Type: "ociImage", Version: "6.7.0", Access: map[string]any{"type": "ociArtifact", "imageReference": "mirror.example:5000/podinfo:6.7.0"}},
	}, extra...)}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, c); err != nil {
		t.Fatal(err)
	}
	return dir
}

func yamlRes(name, typ, body string) ocmbuild.Resource {
	return ocmbuild.Resource{Name: name, Type: typ, MediaType: ocmbuild.MediaTypeYAML, Data: []byte(body)}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "def.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func defWithMessage(msg string) string {
	return header + "spec:\n  renders:\n  - resource: {name: chart}\n    values: {ui: {message: '" + msg + "'}}\n"
}

// Precedence: an explicit definition file replaces the shipped one; a
// shipped one is used when there is no file; resource:NAME picks one of
// several shipped definitions.
func TestDefinitionPrecedence(t *testing.T) {
	repo := testCTF(t,
		yamlRes("deploy", deployment.ResourceType, defWithMessage("from the component")),
		yamlRes("deploy-alt", "yaml", defWithMessage("from the alternative")))
	req := argocdocm.Request{Repository: repo, Component: testComponent, Version: "1.0.0"}
	check := func(req argocdocm.Request, want string) {
		t.Helper()
		if s := encode(t, render(t, req)); !strings.Contains(s, "value: "+want) {
			t.Errorf("want message %q:\n%s", want, s)
		}
	}
	check(req, "from the component")
	req.DefinitionFile = writeFile(t, defWithMessage("from git"))
	check(req, "from git")
	req.DefinitionFile = "resource:deploy-alt"
	check(req, "from the alternative")

	// Two shipped definitions: the plugin refuses to pick one.
	repo2 := testCTF(t, yamlRes("a", deployment.ResourceType, defWithMessage("a")), yamlRes("b", deployment.ResourceType, defWithMessage("b")))
	_, err := renderer(nil).Render(context.Background(), argocdocm.Request{Repository: repo2, Component: testComponent, Version: "1.0.0"})
	if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "2 deployment definitions (a, b)") || !strings.Contains(err.Error(), "resource:NAME") {
		t.Fatalf("got %v", err)
	}
}

// The layers, lowest first: chart defaults < config resources < localization
// < definition < instance values; maps merge, lists replace.
func TestValueLayering(t *testing.T) {
	repo := testCTF(t,
		yamlRes("values-a", deployment.TypeHelmValues, "replicaCount: 2\nui: {message: from config a}\nlist: [1, 2, 3]\nkeep: {a: 1, b: 2}\n"),
		yamlRes("values-b", deployment.TypeHelmValues, "ui: {message: from config b}\nlist: [9]\n"))
	def := header + `spec:
  renders:
  - resource: {name: chart}
    values:
      keep: {b: 3}
      image: {tag: from-definition}
    localization:
    - {resource: {name: image}, repository: image.repository, tag: image.tag}
`
	var report *explain.Report
	req := argocdocm.Request{Repository: repo, Component: testComponent, Version: "1.0.0", DefinitionFile: writeFile(t, def),
		Set: []string{"replicaCount=5"}}
	res, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	s := encode(t, res.Objects)
	for _, want := range []string{"replicas: 5", "value: from config b", "image: mirror.example:5000/podinfo:from-definition"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	leaves := map[string]explain.Leaf{}
	for _, l := range report.Renders[0].Values {
		leaves[l.Path] = l
	}
	layers := func(path string) string {
		var out []string
		for _, o := range leaves[path].History {
			out = append(out, o.Layer)
		}
		return strings.Join(out, " < ")
	}
	for path, want := range map[string]string{
		"replicaCount":     "chart defaults < config resource < instance",
		"ui.message":       "chart defaults < config resource < config resource",
		"image.repository": "chart defaults < localization",
		"image.tag":        "chart defaults < localization < definition",
		"keep.a":           "config resource",
		"keep.b":           "config resource < definition",
		"list":             "config resource < config resource",
	} {
		if got := layers(path); got != want {
			t.Errorf("%s: layers %q, want %q", path, got, want)
		}
	}
	if l := leaves["list"]; len(l.Value.([]any)) != 1 {
		t.Errorf("lists must replace, got %v", l.Value)
	}
	if l := leaves["keep.a"]; l.Value != int64(1) {
		t.Errorf("maps must merge, keep.a = %v", l.Value)
	}
	if o := leaves["replicaCount"].History[2]; o.Source != "--set replicaCount=5" {
		t.Errorf("instance source %q", o.Source)
	}
}

// `render --explain`'s report: every value with its layers, every expression
// with its result, and what localisation did.
func TestExplainReport(t *testing.T) {
	var report *explain.Report
	req := argocdocm.Request{
		Application: "shop", Namespace: "shop", Repository: configCTF(t), Component: examples.Shop, Version: "1.0.0",
		Parameters: map[string]string{"database": "{secretName: shop-db, key: password}", "tier": "premium"},
		Values:     map[string]any{"ingress": map[string]any{"host": "override.example.com"}},
	}
	if _, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"component: example.com/config/shop:1.0.0",
		"definition: deployment definition resource deployment (ComponentDeployment shop)",
		"database = {key: \"password\", secretName: \"shop-db\"}  (object, instance, secret reference)",
		"replicas = 2  (integer, default)",
		"render shop: resource chart (helmChart)",
		"release: shop, namespace: shop",
		"replicaCount = 4\n      <- definition: spec.renders[0].values.replicaCount  ${parameters.tier == \"premium\" ? parameters.replicas * 2 : parameters.replicas}\n      overrides chart defaults: values.yaml of the chart = 1",
		"ingress.host = \"override.example.com\"\n      <- instance: values\n      overrides definition: spec.renders[0].values.ingress.host  ${parameters.host} = \"\"",
		"database.host = \"shop-db.shop.svc\"\n      <- config resource: resource config (helmValues)",
		"image.registry = \"registry.internal.example:5000\"",
		"  spec.renders[0].values.image.registry: ${image.registry(resources[\"api-image\"].access.imageReference)} = \"registry.internal.example:5000\"",
		"automatic localization:",
		"CronJob shop-worker containers[worker]: ghcr.io/example/shop-worker:1.4.2 -> registry.internal.example:5000/mirror/example/shop-worker:1.4.2@" + examples.ShopWorkerDigest + " (resource worker-image)",
		"containers[metrics]: docker.io/prom/statsd-exporter:v0.26.0 left as is: no image resource of the component matches it",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

// Planning errors name what failed; nothing renders.
func TestPlanErrors(t *testing.T) {
	repo := testCTF(t,
		yamlRes("bad-configdata", deployment.TypeConfigData, "apiVersion: config.ocm.software/v1alpha1\nkind: ConfigData\nconfiguration:\n  defaults: {replicas: 1}\n  schema: {type: object, properties: {replicas: {type: string}}}\n"),
		yamlRes("not-values", deployment.TypeHelmValues, "- a list\n"))
	for _, tc := range []struct {
		name     string
		req      argocdocm.Request
		def      string
		sentinel error
		mentions []string
	}{
		{"parameters without a definition", argocdocm.Request{Parameters: map[string]string{"replicas": "2"}}, "", errdef.ErrInvalidInput,
			[]string{"instance parameters (replicas) need a deployment definition"}},
		{"missing definition file", argocdocm.Request{DefinitionFile: "/nonexistent/def.yaml"}, "", errdef.ErrInvalidInput,
			[]string{`definition "/nonexistent/def.yaml"`}},
		{"unknown render resource", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: chartz}}]}\n", errdef.ErrNotFound,
			[]string{"spec.renders[0].resource", "chartz"}},
		{"render of an image", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: image}}]}\n", errdef.ErrUnsupportedMediaType,
			[]string{"spec.renders[0].resource", "ociImage"}},
		{"request resource not in the definition", argocdocm.Request{Resources: []string{"other"}}, header + "spec: {renders: [{resource: {name: chart}}]}\n", errdef.ErrNotFound,
			[]string{"resource other is not rendered by"}},
		{"all renders off", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: chart}, when: '${app.name == \"x\"}'}]}\n", errdef.ErrInvalidInput,
			[]string{"nothing to render"}},
		{"when not boolean", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: chart}, when: '${app.name}'}]}\n", errdef.ErrInvalidInput,
			[]string{"spec.renders[0].when", "want true or false"}},
		{"runtime CEL error", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: chart}, valuesFrom: [], values: {a: '${resources.image.labels.nope}'}}]}\n", errdef.ErrInvalidInput,
			[]string{"spec.renders[0].values.a", "${resources.image.labels.nope}", "no such key"}},
		{"unknown resource in CEL", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: chart}, valuesFrom: [], values: {a: '${resources.imag.version}'}}]}\n", errdef.ErrInvalidInput,
			[]string{"spec.renders[0].values.a", `unknown resource "imag"`}},
		{"config schema", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: chart}, valuesFrom: [{resource: {name: bad-configdata}}]}]}\n", errdef.ErrInvalidInput,
			[]string{"bad-configdata", "schema", "replicas"}},
		{"config not a map", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: chart}, valuesFrom: [{resource: {name: not-values}}]}]}\n", errdef.ErrInvalidInput,
			[]string{"not-values", "not a YAML map"}},
		{"mapping of a non-image", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: chart}, valuesFrom: [], localization: [{resource: {name: chart}, image: a}]}]}\n", errdef.ErrInvalidInput,
			[]string{"localization[0]", "not an image"}},
		{"patch matches nothing", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: chart}, valuesFrom: [], patches: [{target: {kind: Deployment, name: nope}, path: spec.replicas, value: 1}]}]}\n", errdef.ErrNotFound,
			[]string{"spec.renders[0].patches[0]", "no rendered object matches Deployment nope"}},
		{"patch into a string", argocdocm.Request{ReleaseName: "demo"}, header + "spec: {renders: [{resource: {name: chart}, valuesFrom: [], patches: [{target: {kind: Deployment}, path: metadata.name.x, value: 1}]}]}\n", errdef.ErrInvalidInput,
			[]string{"patches[0]", "Deployment demo-podinfo", "metadata.name is a string"}},
		{"unknown digest", argocdocm.Request{}, header + "spec: {renders: [{resource: {name: chart}, valuesFrom: [], localization: [{resource: {name: image}, digest: image.digest}]}]}\n", errdef.ErrInvalidInput,
			[]string{"digest of image resource image", "not known"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Repository, req.Component, req.Version, req.Application = repo, testComponent, "1.0.0", "app"
			if tc.def != "" {
				req.DefinitionFile = writeFile(t, tc.def)
			}
			_, err := renderer(nil).Render(context.Background(), req)
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("got %v, want %v", err, tc.sentinel)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "application app: component "+testComponent+":1.0.0: ") || strings.Contains(msg, "\n") {
				t.Errorf("not one line with the context: %q", msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("%q lacks %q", msg, m)
				}
			}
		})
	}
}

// Without a definition, --resource and the request's values decide alone,
// and config resources of the component apply.
func TestNoDefinitionBehavesLikeRequestPlanner(t *testing.T) {
	repo := testCTF(t)
	req := argocdocm.Request{Repository: repo, Component: testComponent, Version: "1.0.0", ReleaseName: "demo", Namespace: "demo",
		Values: map[string]any{"replicaCount": 3}}
	plain, err := (&argocdocm.Renderer{}).Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := encode(t, plain.Objects), encode(t, render(t, req)); a != b {
		t.Errorf("config planner differs from the request planner:\n%s\n---\n%s", a, b)
	}
}

// A ConfigData spiff expression beyond a reference is refused by name.
func TestConfigDataUnsupportedSpiff(t *testing.T) {
	fx := fixtures.Dir(t)
	tgz, err := os.ReadFile(filepath.Join(fx, "upstream-testdata", "ocm-controller-v1-configdata", "backend-manifests.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	cd := "apiVersion: config.ocm.software/v1alpha1\nkind: ConfigData\nconfiguration:\n  defaults: {replicas: 1}\n  rules:\n  - {value: '(( replicas * 2 ))', file: manifests/deploy.yaml, path: spec.replicas}\n"
	c := &ocmbuild.Component{Name: testComponent, Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "manifests", Type: "directoryTree", Data: tgz, MediaType: ocmbuild.MediaTypeTgz},
		yamlRes("config", deployment.TypeConfigData, cd),
	}}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, c); err != nil {
		t.Fatal(err)
	}
	_, err = renderer(nil).Render(context.Background(), argocdocm.Request{Repository: dir, Component: testComponent, Version: "1.0.0", Path: "manifests"})
	if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "(( replicas * 2 ))") || !strings.Contains(err.Error(), "configuration.rules[0]") {
		t.Fatalf("got %v", err)
	}
}
