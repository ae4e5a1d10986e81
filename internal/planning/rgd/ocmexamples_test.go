package rgd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// ocmExamples is testdata/ocm-examples: OCM's own kro examples packed by the
// OCM CLI v0.13, with goldens made without the plugin (README.md there).
const ocmExamples = "../../../testdata/ocm-examples"

const examplePrefix = "ocm.software/ocm-k8s-toolkit/examples/"

var ocmExampleComponents = []struct{ dir, component string }{
	{"helm-simple", examplePrefix + "helm-simple"},
	{"helm-configuration-localization", examplePrefix + "helm-configuration-localization"},
	{"kustomize-configuration-localization", examplePrefix + "kustomize-configuration-localization"},
	{"helm-nested", examplePrefix + "helm-nested"},
	{"helm-simple-nested-status", examplePrefix + "helm-simple-nested-status"},
	{"chained-rgds", "ocm.software/ocm-k8s-toolkit/system"},
}

// exampleRequest is the request every golden corresponds to: Application
// demo, destination namespace default, no parameters.
func exampleRequest(t *testing.T, dir, component, definition string) argocdocm.Request {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join(ocmExamples, dir, "ctf"))
	if err != nil {
		t.Fatal(err)
	}
	return argocdocm.Request{Repository: repo, Component: component, Version: "1.0.0", Application: "demo", ReleaseName: "demo",
		Namespace: "default", DefinitionFile: definition}
}

func exampleGolden(t *testing.T, dir, block string) []manifests.Object {
	t.Helper()
	g := filepath.Join(ocmExamples, dir, "golden-"+block+".yaml")
	if _, err := os.Stat(g); err != nil {
		g = filepath.Join(ocmExamples, dir, "golden-argocd.yaml")
	}
	return manifeststest.ReadFile(t, g)
}

// TestOCMExamples renders every example with the Argo CD block (the
// default) and the Flux block, as packed by today's OCM CLI, and compares
// with the goldens.
func TestOCMExamples(t *testing.T) {
	for _, ex := range ocmExampleComponents {
		for _, b := range []struct{ block, def string }{{"argocd", "rgd:"}, {"flux", "rgd:@flux"}} {
			t.Run(ex.dir+"/"+b.block, func(t *testing.T) {
				objs, _ := mustRender(t, exampleRequest(t, ex.dir, ex.component, b.def))
				manifeststest.Equal(t, objs, exampleGolden(t, ex.dir, b.block))
			})
		}
	}
}

// TestOCMExampleNested: helm-nested ships its RGD in the referenced
// component nested-rgd and its chart in nested-chart (referencePath). Without
// a definition it is not a platform: the RGD renders; rgd:nested-rgd/kro-rgd
// names it; rgd:kro-rgd (a resource of the root) does not.
func TestOCMExampleNested(t *testing.T) {
	const dir, comp = "helm-nested", examplePrefix + "helm-nested"
	want := exampleGolden(t, dir, "argocd")
	for _, def := range []string{"", "rgd:nested-rgd/kro-rgd", "rgd:nested-rgd/kro-rgd@argocd"} {
		objs, rep := mustRender(t, exampleRequest(t, dir, comp, def))
		manifeststest.Equal(t, objs, want)
		if rep == nil || !strings.Contains(rep.Definition, "reference nested-rgd") {
			t.Errorf("definition %q: report does not name the referenced RGD: %+v", def, rep)
		}
		var notes string
		if rep != nil {
			notes = strings.Join(rep.Notes, "\n")
		}
		contains(t, "notes", notes, "referencePath nested-chart", "helm-nested/chart:1.0.0")
	}
	_, _, err := renderRGD(exampleRequest(t, dir, comp, "rgd:kro-rgd"))
	if err == nil || !strings.Contains(err.Error(), "nested-rgd/kro-rgd (kind HelmNested)") {
		t.Errorf("rgd:kro-rgd: want a refusal listing nested-rgd/kro-rgd, got %v", err)
	}
	_, _, err = renderRGD(exampleRequest(t, dir, comp, "rgd:nope/kro-rgd"))
	if err == nil || !strings.Contains(err.Error(), "no reference nope") {
		t.Errorf("rgd:nope/kro-rgd: want a refusal naming the reference, got %v", err)
	}
}

// TestOCMExampleArgoNamespace: the Argo CD block's destination.namespace
// (default-argocd) is the nested Application's; the release namespace is
// the rendering Application's destination namespace, and --explain says
// so. Values are explained with the field that set them (valuesObject).
func TestOCMExampleArgoNamespace(t *testing.T) {
	const dir, comp = "helm-configuration-localization", examplePrefix + "helm-configuration-localization"
	req := exampleRequest(t, dir, comp, "rgd:")
	req.Namespace = "team-a"
	_, rep := mustRender(t, req)
	if len(rep.Renders) != 1 {
		t.Fatalf("renders: %+v", rep.Renders)
	}
	r := rep.Renders[0]
	if r.Namespace != "team-a" || r.ReleaseName != "helm-configuration-localization" {
		t.Errorf("release %s in %s, want helm-configuration-localization in team-a", r.ReleaseName, r.Namespace)
	}
	contains(t, "notes", strings.Join(rep.Notes, "\n"), "destination.namespace default-argocd is not used")
	var msg *explain.Leaf
	for i := range r.Values {
		if r.Values[i].Path == "ui.message" {
			msg = &r.Values[i]
		}
	}
	if msg == nil || len(msg.History) == 0 {
		t.Fatalf("ui.message not explained: %+v", r.Values)
	}
	h := msg.History[len(msg.History)-1]
	if !strings.Contains(h.Source, "spec.source.helm.valuesObject.ui.message") || h.Expr != "${schema.spec.podinfo.message}" {
		t.Errorf("ui.message origin: %+v", h)
	}
}

// TestOCMExamplesConvert: convert of the examples whose block renders a
// resource of the component itself, rendered as a ComponentDeployment,
// equals the golden.
func TestOCMExamplesConvert(t *testing.T) {
	for _, ex := range ocmExampleComponents {
		switch ex.dir {
		case "helm-nested", "chained-rgds":
			continue // resources of referenced components, objects of their own: listed, not converted
		}
		for _, b := range []struct{ block, def string }{{"argocd", "rgd:"}, {"flux", "rgd:@flux"}} {
			t.Run(ex.dir+"/"+b.block, func(t *testing.T) {
				req := exampleRequest(t, ex.dir, ex.component, b.def)
				r := &argocdocm.Renderer{}
				found, err := r.Resolve(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				defer found.Close()
				out, err := r.Convert(context.Background(), found.Component, req)
				if err != nil {
					t.Fatalf("convert: %v", err)
				}
				f := filepath.Join(t.TempDir(), "deploy.yaml")
				if err := os.WriteFile(f, out, 0o600); err != nil {
					t.Fatal(err)
				}
				req.DefinitionFile = f
				objs, _ := mustRender(t, req)
				manifeststest.Equal(t, objs, exampleGolden(t, ex.dir, b.block))
			})
		}
	}
}

// TestForEachCustomType: forEach over a list parameter of a custom
// SimpleSchema type expands a node per item (cartesian product over two
// iterators), item defaults filled in; refusals stay one line.
func TestForEachCustomType(t *testing.T) {
	const doc = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: workers}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Workers
    types:
      Worker:
        name: string | required=true
        replicas: integer | default=1 minimum=0
      Owner:
        team: string | default="platform"
    spec:
      owner: Owner
      workers: "[]Worker"
      zones: "[]string | default=[\"a\"]"
  resources:
    - id: cms
      forEach:
        - worker: ${schema.spec.workers}
        - zone: ${schema.spec.zones}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${worker.name + "-" + zone}
          labels: {team: "${schema.spec.owner.team}"}
        data:
          replicas: ${string(worker.replicas)}
    - id: summary
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: summary}
        data:
          count: ${string(size(cms))}
`
	params := map[string]string{"workers": "[{name: web, replicas: 2}, {name: jobs}]", "zones": "[a, b]"}
	objs, err := renderDoc(t, params, doc)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range objs {
		m := o["metadata"].(map[string]any)
		d := o["data"].(map[string]any)
		if m["name"] == "summary" {
			got["summary"] = d["count"].(string)
			continue
		}
		if m["labels"].(map[string]any)["team"] != "platform" {
			t.Errorf("%s: team label %v", m["name"], m["labels"])
		}
		got[m["name"].(string)] = d["replicas"].(string)
	}
	want := map[string]string{"web-a": "2", "web-b": "2", "jobs-a": "1", "jobs-b": "1", "summary": "4"}
	if len(got) != len(want) {
		t.Errorf("objects %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}

	for _, tc := range []struct {
		name   string
		params map[string]string
		doc    string
		want   []string
	}{
		{"item of the wrong type", map[string]string{"workers": "[{name: web, replicas: many}]"}, doc, []string{"parameter workers[0].replicas", "integer"}},
		{"unknown item field", map[string]string{"workers": "[{name: web, size: 2}]"}, doc, []string{"workers[0]", "field size is not a field of type Worker"}},
		{"required item field", map[string]string{"workers": "[{replicas: 2}]"}, doc, []string{"workers[0]", "field name (type Worker) is required"}},
		{"too many items", map[string]string{"workers": "[" + strings.Repeat("{name: w},", 200) + "]", "zones": "[a, b]"}, doc, []string{"node cms", "more than 256 objects"}},
		{"forEach over a node", nil, strings.Replace(doc, "${schema.spec.zones}", "${summary.data}", 1), []string{"node cms", "forEach[1] (zone) reads summary"}},
		{"forEach over an Application", nil, strings.Replace(doc, "apiVersion: v1\n        kind: ConfigMap\n        metadata:\n          name: ${worker", "apiVersion: argoproj.io/v1alpha1\n        kind: Application\n        metadata:\n          name: ${worker", 1),
			[]string{"node cms", "forEach over a Application.argoproj.io node"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderDoc(t, tc.params, tc.doc)
			if err == nil {
				t.Fatal("rendered")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("more than one line: %q", err)
			}
			contains(t, "error", err.Error(), tc.want...)
		})
	}
}

// TestOCIArtifactTree: an ociArtifact whose OCI manifest has one Flux
// content layer renders as a directory tree when named (here: by a
// resource selector, without an RGD); an ociArtifact that is an image is
// refused with one line.
func TestOCIArtifactTree(t *testing.T) {
	const dir, comp = "kustomize-configuration-localization", examplePrefix + "kustomize-configuration-localization"
	req := exampleRequest(t, dir, comp, "")
	req.Resources = []string{"kustomize-resource"}
	res, err := (&argocdocm.Renderer{}).Render(context.Background(), req)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	kinds := map[string]bool{}
	for _, o := range res.Objects {
		kinds[o["kind"].(string)] = true
	}
	if !kinds["Deployment"] || !kinds["HorizontalPodAutoscaler"] {
		t.Errorf("kinds %v, want the kustomize tree's Deployment and HorizontalPodAutoscaler", kinds)
	}

	// An ociArtifact that is no OCI manifest: refused, one line.
	c := &ocmbuild.Component{Name: "example.com/kro/img", Version: "1.0.0", Provider: "example.com"}
	c.Resources = append(c.Resources, ocmbuild.Resource{Name: "img", Type: "ociArtifact", Version: "1.0.0", MediaType: "application/octet-stream", Data: []byte("not a tree")})
	repo := writeCTF(t, c)
	_, err = (&argocdocm.Renderer{}).Render(context.Background(), argocdocm.Request{Repository: repo, Component: c.Name, Version: c.Version, Resources: []string{"img"}})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "ociArtifact resource img") {
		t.Errorf("want a one-line refusal of the ociArtifact, got %v", err)
	}
	// Not chosen as the only renderable resource.
	_, err = (&argocdocm.Renderer{}).Render(context.Background(), argocdocm.Request{Repository: repo, Component: c.Name, Version: c.Version})
	if err == nil || !strings.Contains(err.Error(), "no renderable resource") {
		t.Errorf("an ociArtifact must not be chosen unnamed, got %v", err)
	}
}

// TestOCMExampleFromRegistry: the OCM CLI's CTF transferred into a real
// OCI registry renders as from the CTF, and toOCI() of the chart, a local
// blob, names the component's own repository in that registry (as OCM's
// controllers compute it), not the CTF placeholder.
func TestOCMExampleFromRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	for _, ex := range []struct{ dir, component string }{
		{"helm-simple-nested-status", examplePrefix + "helm-simple-nested-status"},
		{"helm-configuration-localization", examplePrefix + "helm-configuration-localization"},
	} {
		t.Run(ex.dir, func(t *testing.T) {
			local := exampleRequest(t, ex.dir, ex.component, "rgd:")
			to := "http://" + reg.Host + "/ocm"
			tr := &transfer.Transfer{From: local.Repository, To: to, Component: ex.component, Version: "1.0.0", Recursive: true}
			if _, err := tr.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			e := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(""), argocdocm.WithPlainHTTP(reg.Host), argocdocm.WithoutDockerConfig())
			r, err := e.Renderer(argocdocm.Generation{})
			if err != nil {
				t.Fatal(err)
			}
			var rep *explain.Report
			r.Explain = func(x argocdocm.Explanation) { rep, _ = x.(*explain.Report) }
			req := local
			req.Repository = to
			res, err := r.Render(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			manifeststest.Equal(t, res.Objects, exampleGolden(t, ex.dir, "argocd"))
			text := explainText(t, rep)
			contains(t, "explain", text, `"`+reg.Host+`"`, `"ocm/component-descriptors/`+ex.component+`"`)
			if strings.Contains(text, "ctf.invalid") {
				t.Errorf("toOCI() still names the CTF placeholder:\n%s", text)
			}
		})
	}
}
