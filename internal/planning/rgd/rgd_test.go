package rgd_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/graph"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
)

const srcRoot = "../../../testdata/src"

// kroCTF writes the kro example components for one test.
func kroCTF(t testing.TB) string {
	t.Helper()
	comps, err := examples.KroDemo(srcRoot)
	if err != nil {
		t.Fatal(err)
	}
	return writeCTF(t, comps...)
}

// writeCTF writes components of one test.
func writeCTF(t testing.TB, comps ...*ocmbuild.Component) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, comps...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// renderRGD renders through the pipeline with the RGD planner, as the CLI does.
func renderRGD(req argocdocm.Request) ([]manifests.Object, *explain.Report, error) {
	var rep *explain.Report
	r := &argocdocm.Renderer{Explain: func(x argocdocm.Explanation) { rep, _ = x.(*explain.Report) }}
	res, err := r.Render(context.Background(), req)
	if err != nil {
		return nil, nil, err
	}
	return res.Objects, rep, nil
}

// renderPlain renders a resource with values without any planner: the
// golden the RGD's interpretation must equal.
func renderPlain(t *testing.T, req argocdocm.Request) []manifests.Object {
	t.Helper()
	res, err := (&argocdocm.Renderer{}).Render(context.Background(), req)
	if err != nil {
		t.Fatalf("plain render: %v", err)
	}
	return res.Objects
}

func mustRender(t *testing.T, req argocdocm.Request) ([]manifests.Object, *explain.Report) {
	t.Helper()
	objs, rep, err := renderRGD(req)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs, rep
}

func explainText(t *testing.T, rep *explain.Report) string {
	t.Helper()
	if rep == nil {
		t.Fatal("no report")
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func contains(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// The Argo CD block of OCM's helm-configuration-localization RGD renders
// exactly what the chart renders with the block's values: the image from
// the OCM Resource node's computed status, the instance's message.
func TestArgoCDHelmBlock(t *testing.T) {
	repo := kroCTF(t)
	objs, rep := mustRender(t, argocdocm.Request{Repository: repo, Component: examples.KroHelm, Version: "1.0.0",
		Application: "shop", Namespace: "apps", Parameters: map[string]string{"podinfo.message": "hi from argo", "podinfo.replicas": "3"}})
	want := renderPlain(t, argocdocm.Request{Repository: repo, Component: examples.KroHelm, Version: "1.0.0", Resources: []string{"helm-resource"},
		ReleaseName: "helm-configuration-localization", Namespace: "default-argocd",
		Values: map[string]any{"replicaCount": 3, "image": map[string]any{"repository": "ghcr.io/stefanprodan/podinfo", "tag": "6.9.1"},
			"ui": map[string]any{"message": "hi from argo", "color": "#ff0000"}}})
	manifeststest.Equal(t, objs, want)
	text := explainText(t, rep)
	contains(t, "explain", text, "ResourceGraphDefinition helm-configuration-localization (resource kro-rgd)", "podinfo.message", "hi from argo",
		"status.additional", `"repository":"stefanprodan/podinfo"`, "the Argo CD block (argocdApplication) is rendered; the Flux block (helmrelease) is not",
		"OCM Resource node resourceChart: resource helm-resource", "ctf.invalid")
}

// The Flux block of the same RGD, when asked for: its own release name and
// namespace (the HelmRelease's), its values.
func TestFluxHelmBlock(t *testing.T) {
	repo := kroCTF(t)
	objs, rep := mustRender(t, argocdocm.Request{Repository: repo, Component: examples.KroHelm, Version: "1.0.0",
		DefinitionFile: "rgd:@flux", Namespace: "apps"})
	want := renderPlain(t, argocdocm.Request{Repository: repo, Component: examples.KroHelm, Version: "1.0.0", Resources: []string{"helm-resource"},
		ReleaseName: "podinfo-flux", Namespace: "apps",
		Values: map[string]any{"replicaCount": 1, "image": map[string]any{"repository": "ghcr.io/stefanprodan/podinfo", "tag": "6.9.1"},
			"ui": map[string]any{"message": "hello world"}}})
	manifeststest.Equal(t, objs, want)
	contains(t, "explain", explainText(t, rep), "the Flux block (helmrelease) is rendered, as asked", "helmrelease (Flux HelmRelease, source ocirepository)")
}

func TestParameterValidation(t *testing.T) {
	repo := kroCTF(t)
	for _, tc := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"podinfo.replicas": "9"}, "parameter podinfo.replicas: 9 is greater than the maximum 5"},
		{map[string]string{"podinfo.replicas": "two"}, "parameter podinfo.replicas: want an integer"},
		{map[string]string{"podinfo.mesage": "x"}, "parameter podinfo.mesage: not declared (declared: podinfo.message, podinfo.releaseName, podinfo.replicas, prefix)"},
	} {
		_, _, err := renderRGD(argocdocm.Request{Repository: repo, Component: examples.KroHelm, Version: "1.0.0", Parameters: tc.params})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v, want %q", tc.params, err, tc.want)
		}
	}
}

// podinfoDeployment is the Deployment of the kustomize example after OCM's
// patches: the image from the computed status, the instance's message.
func podinfoDeployment(name, namespace, message string) manifests.Object {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return manifests.Object{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "podinfo"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "podinfo"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "podinfod",
					"image": "ghcr.io/stefanprodan/podinfo@sha256:262578cde928d5c9eba3bce079976444f624c13ed0afb741d90d5423877496cb",
					"env":   []any{map[string]any{"name": "PODINFO_UI_COLOR", "value": "#34577c"}, map[string]any{"name": "PODINFO_UI_MESSAGE", "value": message}}}}}}}}
}

// The kustomize example: Argo CD's kustomize.patches (JSON strings and a
// delete) and namePrefix over the tree; Flux's patches (regex targets) and
// targetNamespace. The HPA is deleted by both.
func TestKustomizeBlocks(t *testing.T) {
	repo := kroCTF(t)
	objs, rep := mustRender(t, argocdocm.Request{Repository: repo, Component: examples.KroKustomize, Version: "1.0.0",
		Parameters: map[string]string{"podinfo.message": "hi kustomize"}})
	manifeststest.Equal(t, objs, []manifests.Object{podinfoDeployment("argo-podinfo", "", "hi kustomize")})
	contains(t, "explain", explainText(t, rep), "argocdApplication (Argo CD Application)", "namePrefix: argo-")

	objs, _ = mustRender(t, argocdocm.Request{Repository: repo, Component: examples.KroKustomize, Version: "1.0.0", DefinitionFile: "rgd:kro-rgd@flux"})
	manifeststest.Equal(t, objs, []manifests.Object{podinfoDeployment("podinfo", "flux-ns", "hello world")})
}

// helm-nested: the chart is a resource of a referenced component
// (referencePath), rendered from that component.
func TestReferencePath(t *testing.T) {
	repo := kroCTF(t)
	objs, rep := mustRender(t, argocdocm.Request{Repository: repo, Component: examples.KroNested, Version: "1.0.0", DefinitionFile: "rgd:", Parameters: map[string]string{"prefix": "nest"}})
	want := renderPlain(t, argocdocm.Request{Repository: repo, Component: examples.KroNestedChart, Version: "1.0.0", ReleaseName: "nest", Namespace: "nested"})
	manifeststest.Equal(t, objs, want)
	contains(t, "explain", explainText(t, rep), "referencePath nested-chart", examples.KroNestedChart+":1.0.0", `"oci":{`)
}

// Chained RGDs: the system RGD (the root: no other RGD instantiates its
// kind) computes the image and instantiates the app RGD's kind, which is
// expanded; the OCM Repository node is dropped; nodes are placed in sync
// waves by their order.
func TestChainedRGDs(t *testing.T) {
	repo := kroCTF(t)
	objs, rep := mustRender(t, argocdocm.Request{Repository: repo, Component: examples.KroChained, Version: "1.0.0",
		Application: "sys", Namespace: "prod", Parameters: map[string]string{"replicas": "3"}})
	image := "ghcr.io/stefanprodan/podinfo@sha256:262578cde928d5c9eba3bce079976444f624c13ed0afb741d90d5423877496cb"
	wave := func(w string) map[string]any {
		return map[string]any{"argocd.argoproj.io/sync-wave": w}
	}
	want := []manifests.Object{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "sys-config", "annotations": wave("0")},
			"data": map[string]any{"image": image}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "sys-podinfo", "namespace": "prod", "annotations": wave("0")},
			"spec": map[string]any{"replicas": 3, "selector": map[string]any{"matchLabels": map[string]any{"app": "sys-podinfo"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "sys-podinfo"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "podinfo", "image": image,
						"env": []any{map[string]any{"name": "PODINFO_UI_MESSAGE", "value": "from the system"}}}}}}}},
		{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "sys-podinfo", "namespace": "prod", "annotations": wave("1")},
			"spec": map[string]any{"selector": map[string]any{"app": "sys-podinfo"}, "ports": []any{map[string]any{"port": 9898}}}},
	}
	manifeststest.Equal(t, objs, want)
	contains(t, "explain", explainText(t, rep), "node repository (OCM Repository) dropped", "node app expanded: ResourceGraphDefinition podinfo-app (resource app-rgd)",
		"sync wave 1: node service")

	// The app RGD alone, chosen by name: image (optional in its schema, as
	// in kro) is read but not set.
	_, _, err := renderRGD(argocdocm.Request{Repository: repo, Component: examples.KroChained, Version: "1.0.0", DefinitionFile: "rgd:app-rgd"})
	if err == nil || !strings.Contains(err.Error(), "node deployment") || !strings.Contains(err.Error(), "no such key: image") {
		t.Errorf("app RGD without image: %v", err)
	}
}

// rgdComponent is a component holding a chart, a tree, an image and the
// given RGD documents (blobs; the first with the RGD media type).
func rgdComponent(t testing.TB, rgds ...string) *ocmbuild.Component {
	t.Helper()
	comps, err := examples.KroDemo(srcRoot)
	if err != nil {
		t.Fatal(err)
	}
	c := &ocmbuild.Component{Name: "example.com/kro/test", Version: "1.0.0", Provider: "test"}
	c.Resources = append(c.Resources, comps[0].Resources[:2]...)
	c.Resources = append(c.Resources, comps[1].Resources[0])
	for i, doc := range rgds {
		mt := ocmbuild.MediaTypeYAML
		if i == 0 {
			mt = examples.KroRGDMediaType
		}
		c.Resources = append(c.Resources, ocmbuild.Resource{Name: "rgd" + string(rune('a'+i)), Type: "blob", Version: "1.0.0", Data: []byte(doc), MediaType: mt})
	}
	return c
}

// graphDoc is an RGD of kind K with the given resources (YAML list items).
func graphDoc(kind, spec, resources string) string {
	return "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: " + strings.ToLower(kind) + "}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: " + kind +
		"\n    spec:\n" + spec + "  resources:\n" + resources
}

const chartNode = `    - id: chart
      template:
        apiVersion: delivery.ocm.software/v1alpha1
        kind: Resource
        metadata: {name: chart}
        spec:
          componentRef: {name: c}
          resource: {byReference: {resource: {name: helm-resource}}}
          additionalStatusFields: {registry: resource.access.toOCI().registry, repository: resource.access.toOCI().repository}
`

func renderDoc(t *testing.T, params map[string]string, docs ...string) ([]manifests.Object, error) {
	t.Helper()
	repo := writeCTF(t, rgdComponent(t, docs...))
	objs, _, err := renderRGD(argocdocm.Request{Repository: repo, Component: "example.com/kro/test", Version: "1.0.0", Application: "app", Namespace: "ns", Parameters: params})
	return objs, err
}

// Every refusal is one line naming the RGD and the node.
func TestRefusals(t *testing.T) {
	cm := func(id, data string) string {
		return "    - id: " + id + "\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: " + id + "}\n        data: {v: " + data + "}\n"
	}
	spec := "      password: string | default=\"x\"\n"
	for _, tc := range []struct {
		name string
		doc  string
		want []string
	}{
		{"status of a non-OCM node", graphDoc("A", spec, cm("a", "x")+cm("b", `"${a.status.x}"`)), []string{"node b", "reads the status of node a (ConfigMap)"}},
		{"externalRef", graphDoc("A", spec, "    - id: ext\n      externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"), []string{"node ext", "externalRef"}},
		{"includeWhen over a node", graphDoc("A", spec, cm("a", "x")+"    - id: b\n      includeWhen: [\"${a.data.v == 'x'}\"]\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n"),
			[]string{"node b", "includeWhen[0] reads node a"}},
		{"forEach over a node", graphDoc("A", spec, cm("a", "x")+"    - id: cells\n      forEach: [{x: \"${a.data}\"}]\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n"), []string{"node cells", "forEach[0] (x) reads a"}},
		{"forEach not a list", graphDoc("A", spec, "    - id: cells\n      forEach: [{x: \"${schema.spec.password}\"}]\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n"), []string{"node cells", "forEach[0] (x) is", "want a list"}},
		{"secret from a parameter", graphDoc("A", spec, "    - id: s\n      template:\n        apiVersion: v1\n        kind: Secret\n        metadata: {name: s}\n        stringData: {password: \"${schema.spec.password}\"}\n"),
			[]string{"node s", "a Secret filled from an instance parameter", "plain text"}},
		{"flux postRenderers", graphDoc("A", spec, chartNode+"    - id: repo\n      template: {apiVersion: source.toolkit.fluxcd.io/v1, kind: OCIRepository, metadata: {name: r}, spec: {url: \"oci://${chart.status.additional.registry}/${chart.status.additional.repository}\"}}\n"+
			"    - id: hr\n      template: {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, metadata: {name: hr}, spec: {chartRef: {kind: OCIRepository, name: \"${repo.metadata.name}\"}, postRenderers: [{kustomize: {}}]}}\n"),
			[]string{"node hr", "spec.postRenderers is not supported"}},
		{"flux valuesFrom", graphDoc("A", spec, chartNode+"    - id: repo\n      template: {apiVersion: source.toolkit.fluxcd.io/v1, kind: OCIRepository, metadata: {name: r}, spec: {url: \"oci://${chart.status.additional.registry}/${chart.status.additional.repository}\"}}\n"+
			"    - id: hr\n      template: {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, metadata: {name: hr}, spec: {chartRef: {kind: OCIRepository, name: \"${repo.metadata.name}\"}, valuesFrom: [{kind: Secret, name: v}]}}\n"),
			[]string{"node hr", "spec.valuesFrom is not supported"}},
		{"cycle", graphDoc("A", spec, cm("a", `"${b.data.v}"`)+cm("b", `"${c.data.v}"`)+cm("c", `"${a.data.v}"`)), []string{"read each other in a cycle: ", "a -> b", "b -> c"}},
		{"url from no OCM resource", graphDoc("A", spec, "    - id: app\n      template: {apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: x}, spec: {source: {repoURL: \"oci://ghcr.io/x/y\", chart: y}}}\n"),
			[]string{"node app", "computed from no OCM Resource node"}},
		{"unknown resource", graphDoc("A", spec, "    - id: r\n      template: {apiVersion: delivery.ocm.software/v1alpha1, kind: Resource, metadata: {name: r}, spec: {resource: {byReference: {resource: {name: nope}}}}}\n"),
			[]string{"node r", "nope"}},
		{"unknown reference", graphDoc("A", spec, "    - id: r\n      template: {apiVersion: delivery.ocm.software/v1alpha1, kind: Resource, metadata: {name: r}, spec: {resource: {byReference: {resource: {name: x}, referencePath: [{name: missing}]}}}}\n"),
			[]string{"node r", "referencePath[0]", "no reference"}},
		{"unknown kro kind", graphDoc("A", spec, "    - id: k\n      template: {apiVersion: kro.run/v1alpha1, kind: Other, metadata: {name: k}}\n"), []string{"node k", "kind Other"}},
		{"bad marker", graphDoc("A", "      num: integer | default=x\n", cm("a", "x")), []string{"spec.schema: field num", "default value must be a valid integer"}},
		{"custom type", graphDoc("A", "      num: MyType\n", cm("a", "x")), []string{"spec.schema: field num", "unknown type: MyType"}},
		{"CEL syntax", graphDoc("A", spec, cm("a", `"${schema.spec.password +}"`)), []string{"node a", "template.data.v", "${schema.spec.password +}"}},
		{"unknown variable", graphDoc("A", spec, cm("a", `"${nosuch.x}"`)), []string{"node a", "undeclared reference to 'nosuch'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderDoc(t, nil, tc.doc)
			if err == nil {
				t.Fatal("rendered")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("more than one line: %q", msg)
			}
			contains(t, "error", msg, append(tc.want, "example.com/kro/test:1.0.0")...)
		})
	}
}

// Several root RGDs are refused with their list; one is chosen by name; a
// ComponentDeployment definition wins over the RGDs.
func TestSelection(t *testing.T) {
	cm := "    - id: a\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"${schema.metadata.name}-cm\"}, data: {k: \"${schema.spec.v}\"}}\n"
	a := graphDoc("Alpha", "      v: string | default=\"alpha\"\n", cm)
	b := graphDoc("Beta", "      v: string | default=\"beta\"\n", cm)
	_, err := renderDoc(t, nil, a, b)
	if err == nil || !strings.Contains(err.Error(), "2 root ResourceGraphDefinitions (rgda (kind Alpha), rgdb (kind Beta))") || !strings.Contains(err.Error(), "rgd:NAME") {
		t.Errorf("ambiguous: %v", err)
	}
	c := rgdComponent(t, a, b)
	repo := writeCTF(t, c)
	objs, _, err := renderRGD(argocdocm.Request{Repository: repo, Component: c.Name, Version: c.Version, Application: "app", DefinitionFile: "rgd:rgdb"})
	if err != nil || len(objs) != 1 || objs[0]["data"].(map[string]any)["k"] != "beta" {
		t.Fatalf("rgd:rgdb: %v %v", objs, err)
	}
	// resource:NAME naming an RGD resource picks it too.
	if objs, _, err = renderRGD(argocdocm.Request{Repository: repo, Component: c.Name, Version: c.Version, Application: "app", DefinitionFile: "resource:rgda"}); err != nil || objs[0]["data"].(map[string]any)["k"] != "alpha" {
		t.Fatalf("resource:rgda: %v %v", objs, err)
	}
	// A shipped ComponentDeployment wins.
	c.Resources = append(c.Resources, ocmbuild.Resource{Name: "deploy", Type: deployment.ResourceType, Version: "1.0.0", MediaType: ocmbuild.MediaTypeYAML,
		Data: []byte("apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1\nkind: ComponentDeployment\nmetadata: {name: d}\nspec:\n  renders:\n  - resource: {name: kustomize-resource}\n")})
	repo = writeCTF(t, c)
	objs, rep, err := renderRGD(argocdocm.Request{Repository: repo, Component: c.Name, Version: c.Version, Application: "app"})
	if err != nil || len(objs) != 2 || !strings.Contains(rep.Definition, "ComponentDeployment") {
		t.Fatalf("ComponentDeployment: %d objects, %v", len(objs), err)
	}
	// Parameters of an RGD are refused when the definition wins (it declares none).
	if _, _, err := renderRGD(argocdocm.Request{Repository: repo, Component: c.Name, Version: c.Version, Parameters: map[string]string{"v": "x"}}); err == nil {
		t.Error("RGD parameters accepted by the ComponentDeployment")
	}
}

// Hostile RGDs fail (or render) within bounds, with one line.
func TestHostile(t *testing.T) {
	var many strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&many, "    - id: n%d\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: n%d}}\n", i, i)
	}
	var chain strings.Builder
	for i := 0; i < graph.MaxNodes; i++ {
		dep := `"x"`
		if i > 0 {
			dep = fmt.Sprintf(`"${n%d.data.v}"`, i-1)
		}
		fmt.Fprintf(&chain, "    - id: n%d\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: n%d}, data: {v: %s}}\n", i, i, dep)
	}
	spec := "      s: string | default=\"x\"\n"
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	for _, tc := range []struct {
		name string
		doc  string
		want string // "" renders
	}{
		{"1000 nodes", graphDoc("A", spec, many.String()), "1000 resources, more than the limit of 500"},
		{"500 chained nodes", graphDoc("A", spec, chain.String()), ""},
		{"costly CEL", graphDoc("A", spec, "    - id: a\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {v: \"${lists.range(50000).map(x, lists.range(50000).map(y, x + y)).size()}\"}}\n"), "limit exceeded"},
		{"deep CEL", graphDoc("A", spec, "    - id: a\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {v: \"${"+deep+"}\"}}\n"), "node a"},
		{"huge string", graphDoc("A", "      s: string | default=\""+strings.Repeat("x", 400_000)+"\"\n", "    - id: a\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {v: \"${schema.spec.s + schema.spec.s + schema.spec.s}\"}}\n"), "more than 1048576"},
		{"huge result", graphDoc("A", "      s: string | default=\""+strings.Repeat("x", 1000)+"\"\n", "    - id: a\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {v: \"${[schema.spec.s, schema.spec.s].map(a, [a,a,a,a,a,a,a,a,a,a].map(b, [b,b,b,b,b,b,b,b,b,b].map(c, [c,c,c,c,c,c,c,c,c,c].map(d, d + d))))}\"}}\n"), "node a"},
		{"long expression", graphDoc("A", spec, "    - id: a\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {v: \"${"+strings.Repeat("1+", 3000)+"1}\"}}\n"), "node a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var err error
			cpu := testutil.CPUTime(func() { _, err = renderDoc(t, nil, tc.doc) })
			runtime.ReadMemStats(&after)
			if cpu > 15*time.Second {
				t.Errorf("took %s of CPU", cpu)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 2<<30 {
				t.Errorf("allocated %d MiB", grew>>20)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("render: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
				t.Fatalf("got %v, want one line with %q", err, tc.want)
			}
			t.Logf("%s (CPU %s): %s", time.Since(start).Round(time.Millisecond), cpu.Round(time.Millisecond), errdef.Cut(fmt.Sprint(err)))
		})
	}
}

// includeWhen over the instance is evaluated: a node switched off is not
// emitted, and says so.
func TestIncludeWhen(t *testing.T) {
	doc := graphDoc("A", "      extra: boolean | default=false\n",
		"    - id: always\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: always}}\n"+
			"    - id: maybe\n      includeWhen: [\"${schema.spec.extra}\"]\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: maybe}}\n")
	objs, err := renderDoc(t, nil, doc)
	if err != nil || len(objs) != 1 {
		t.Fatalf("default: %d objects, %v", len(objs), err)
	}
	if objs, err = renderDoc(t, map[string]string{"extra": "true"}, doc); err != nil || len(objs) != 2 {
		t.Fatalf("extra=true: %d objects, %v", len(objs), err)
	}
}
