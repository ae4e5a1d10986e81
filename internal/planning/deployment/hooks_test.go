package deployment_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// hooksCTF writes the ordering and hooks example component into a temporary CTF.
func hooksCTF(t *testing.T) string {
	t.Helper()
	comps, err := examples.HooksComponents(filepath.Join(repoRoot, "testdata", "src"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, comps...); err != nil {
		t.Fatal(err)
	}
	return dir
}

func hooksRequest(repo, def string) argocdocm.Request {
	return argocdocm.Request{Repository: repo, Component: examples.Hooks, Version: "1.0.0",
		ReleaseName: "shop", Namespace: "shop", KubeVersion: "1.31.0", DefinitionFile: def}
}

func object(t *testing.T, objs []manifests.Object, kind, name string) manifests.Object {
	t.Helper()
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		if o["kind"] == kind && md["name"] == name {
			return o
		}
	}
	t.Fatalf("no %s %s in the output", kind, name)
	return nil
}

func annotations(o manifests.Object) map[string]any {
	md, _ := o["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	return ann
}

// wantAnnotations checks the Argo CD annotations of an object; "" means absent.
func wantAnnotations(t *testing.T, o manifests.Object, wave, hook, policy string) {
	t.Helper()
	ann := annotations(o)
	for _, c := range []struct{ key, want string }{
		{hooks.AnnotationSyncWave, wave}, {hooks.AnnotationHook, hook}, {hooks.AnnotationHookDeletePolicy, policy},
	} {
		got, ok := ann[c.key]
		if c.want == "" && ok || c.want != "" && got != c.want {
			t.Errorf("%s: %s = %v, want %q", hooks.Describe(o), c.key, got, c.want)
		}
	}
}

// The documented example: waves per render and per object, CRDs before
// every wave, the chart's Helm hook kept, and Jobs from the component's own
// (relocated, digest-pinned) image with arguments from parameters.
func TestExampleHooks(t *testing.T) {
	repo := hooksCTF(t)
	objs := render(t, hooksRequest(repo, filepath.Join(examplesDir, "hooks.yaml")))

	// widgets: wave 1; catalog: wave 2, its Product 3; CRDs before every wave.
	wantAnnotations(t, object(t, objs, "Widget", "default-widget"), "1", "", "")
	wantAnnotations(t, object(t, objs, "ConfigMap", "widget-settings"), "1", "", "")
	wantAnnotations(t, object(t, objs, "CustomResourceDefinition", "widgets.platform.example.com"), "0", "", "")
	wantAnnotations(t, object(t, objs, "CustomResourceDefinition", "products.catalog.example.com"), "0", "", "")
	wantAnnotations(t, object(t, objs, "Deployment", "shop-catalog"), "2", "", "")
	wantAnnotations(t, object(t, objs, "StatefulSet", "shop-cache"), "2", "", "")
	wantAnnotations(t, object(t, objs, "Product", "shop-default"), "3", "", "")

	// The chart's Helm hook: untouched, PreSync wave -5 for Argo CD.
	migrate := object(t, objs, "Job", "shop-migrate")
	wantAnnotations(t, migrate, "", "", "")
	if types, _, w, isHook := hooks.ArgoHooks(migrate); !isHook || types[0] != hooks.PreSync || w != -5 {
		t.Errorf("chart migration hook: %q wave %d", types, w)
	}

	// Jobs from the image resource, localised as automatic localisation does.
	image := examples.MirrorRegistry + "/mirror/catalog/api:2.3.0@" + examples.HooksAPIDigest
	schema := object(t, objs, "Job", "shop-schema")
	wantAnnotations(t, schema, "-1", "PreSync", "BeforeHookCreation")
	wantJob := manifests.Object{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "shop-schema", "namespace": "shop", "annotations": map[string]any{
			"argocd.argoproj.io/sync-wave": "-1", "argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"}},
		"spec": map[string]any{
			"backoffLimit": int64(2), "activeDeadlineSeconds": int64(600),
			"template": map[string]any{"spec": map[string]any{
				"restartPolicy":   "Never",
				"securityContext": map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
				"containers": []any{map[string]any{
					"name": "shop-schema", "image": image,
					"args": []any{"migrate-schema", "--to=7", "--namespace=shop"},
					"env":  []any{map[string]any{"name": "CATALOG_COMPONENT_VERSION", "value": "1.0.0"}},
					"securityContext": map[string]any{"allowPrivilegeEscalation": false,
						"capabilities": map[string]any{"drop": []any{"ALL"}}},
				}},
			}},
		},
	}
	manifeststest.Equal(t, []manifests.Object{schema}, []manifests.Object{wantJob})
	smoke := object(t, objs, "Job", "shop-smoke-test")
	wantAnnotations(t, smoke, "", "PostSync", "BeforeHookCreation,HookSucceeded")

	// Automatic localisation moved the chart's images to the mirror too.
	s := encode(t, objs)
	for _, want := range []string{"image: " + image, "image: " + examples.MirrorRegistry + "/mirror/library/redis:7.4@" + examples.HooksCacheDigest} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}

	// Parameters reach the Jobs; when switches one off.
	objs = render(t, func() argocdocm.Request {
		r := hooksRequest(repo, filepath.Join(examplesDir, "hooks.yaml"))
		r.Parameters = map[string]string{"schemaVersion": "9", "smokeTest": "false"}
		return r
	}())
	args := object(t, objs, "Job", "shop-schema")["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["args"]
	if !reflect.DeepEqual(args, []any{"migrate-schema", "--to=9", "--namespace=shop"}) {
		t.Errorf("args %v", args)
	}
	for _, o := range objs {
		if hooks.Describe(o) == "Job shop/shop-smoke-test" {
			t.Error("the smoke test is switched off")
		}
	}

	// Rendering one resource: the jobs of other renders, and those of no
	// render, are left out.
	for _, tc := range []struct {
		resource string
		jobs     []string
	}{{"widgets", nil}, {"chart", []string{"Job shop/shop-schema"}}} {
		r := hooksRequest(repo, filepath.Join(examplesDir, "hooks.yaml"))
		r.Resources = []string{tc.resource}
		var jobs []string
		for _, o := range render(t, r) {
			if o["kind"] == "Job" && annotations(o)[hooks.AnnotationHook] != nil {
				jobs = append(jobs, hooks.Describe(o))
			}
		}
		if !reflect.DeepEqual(jobs, tc.jobs) {
			t.Errorf("--resource %s: jobs %q, want %q", tc.resource, jobs, tc.jobs)
		}
	}
}

// CRD before CR: a render of the widgets (a CRD and a custom resource of it)
// in wave 3 puts the CR in 3 and the CRD before it.
func TestCRDBeforeCR(t *testing.T) {
	repo := hooksCTF(t)
	def := writeFile(t, header+"spec:\n  renders:\n  - resource: {name: widgets}\n    syncWave: 3\n")
	objs := render(t, hooksRequest(repo, def))
	crd := object(t, objs, "CustomResourceDefinition", "widgets.platform.example.com")
	cr := object(t, objs, "Widget", "default-widget")
	wantAnnotations(t, cr, "3", "", "")
	_, _, crdWave, _ := hooks.ArgoHooks(crd)
	if _, ok := annotations(crd)[hooks.AnnotationSyncWave]; !ok || crdWave >= 3 {
		t.Errorf("CRD wave %d (annotated %v), want < 3", crdWave, annotations(crd))
	}
	steps, _ := hooks.SyncOrder(objs)
	if steps[0].Object != "CustomResourceDefinition widgets.platform.example.com" {
		t.Errorf("Argo CD would apply %s first", steps[0].Object)
	}

	// A wave from an expression, and an explicit rule for the CRD.
	def = writeFile(t, header+`spec:
  parameters:
    wave: {type: integer, default: 4}
  renders:
  - resource: {name: widgets}
    syncWave: ${parameters.wave + 1}
    ordering:
    - target: {kind: CustomResourceDefinition}
      syncWave: -10
`)
	objs = render(t, hooksRequest(repo, def))
	wantAnnotations(t, object(t, objs, "Widget", "default-widget"), "5", "", "")
	wantAnnotations(t, object(t, objs, "CustomResourceDefinition", "widgets.platform.example.com"), "-10", "", "")
}

// Without any wave or hook in the definition, a chart renders exactly as
// helm template does: no annotation added, CRD and Helm hook included.
func TestNoWavesIsHelmTemplate(t *testing.T) {
	repo := hooksCTF(t)
	def := writeFile(t, header+"spec:\n  renders:\n  - resource: {name: chart}\n    valuesFrom: []\n")
	got := render(t, hooksRequest(repo, def))
	files, err := ocmbuild.ReadDir(filepath.Join(repoRoot, "testdata", "src", "charts", "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := ocmbuild.PackageChart(files)
	if err != nil {
		t.Fatal(err)
	}
	want, err := helm.Render(context.Background(), tgz, helm.Options{ReleaseName: "shop", Namespace: "shop", KubeVersion: "1.31.0", Values: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := encode(t, got), encode(t, want); a != b {
		t.Errorf("output differs from helm template:\n%s\n---- want ----\n%s", a, b)
	}
}

// Same input, same bytes: twenty renders, with the definition's maps and
// the objects' annotation maps built afresh each time (Go randomises map
// iteration), give one output; the report too.
func TestHooksDeterministic(t *testing.T) {
	repo := hooksCTF(t)
	req := hooksRequest(repo, filepath.Join(examplesDir, "hooks.yaml"))
	var first, firstReport string
	for i := 0; i < 20; i++ {
		var report *explain.Report
		res, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := report.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		out := encode(t, res.Objects)
		if i == 0 {
			first, firstReport = out, b.String()
			continue
		}
		if out != first {
			t.Fatalf("render %d differs:\n%s\n---- first ----\n%s", i, out, first)
		}
		if b.String() != firstReport {
			t.Fatalf("report %d differs:\n%s\n---- first ----\n%s", i, b.String(), firstReport)
		}
	}

	// The defaults do not depend on the order objects come in (only on the
	// waves): shuffled, the same objects get the same waves.
	objs := render(t, hooksRequest(repo, writeFile(t, header+"spec:\n  renders:\n  - resource: {name: widgets}\n    syncWave: 3\n  - resource: {name: chart}\n    syncWave: 1\n")))
	want := map[string]string{}
	for _, o := range objs {
		w, _ := annotations(o)[hooks.AnnotationSyncWave].(string)
		want[hooks.Describe(o)] = w
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		cp := make([]manifests.Object, len(objs))
		for j, o := range objs {
			c := clone(o)
			if hooks.IsCRD(c) {
				delete(annotations(c), hooks.AnnotationSyncWave)
			}
			cp[j] = c
		}
		rng.Shuffle(len(cp), func(a, b int) { cp[a], cp[b] = cp[b], cp[a] })
		hooks.ApplyDefaults(cp)
		for _, o := range cp {
			if w, _ := annotations(o)[hooks.AnnotationSyncWave].(string); w != want[hooks.Describe(o)] {
				t.Fatalf("shuffle %d: %s wave %q, want %q", i, hooks.Describe(o), w, want[hooks.Describe(o)])
			}
		}
	}
}

// --explain lists the sync order and the jobs.
func TestExplainOrdering(t *testing.T) {
	repo := hooksCTF(t)
	var report *explain.Report
	res, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), hooksRequest(repo, filepath.Join(examplesDir, "hooks.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"jobs:\n  shop-schema: image " + examples.MirrorRegistry + "/mirror/catalog/api:2.3.0@" + examples.HooksAPIDigest + " (resource api-image), hook PreSync, delete policy BeforeHookCreation, wave -1",
		"sync order (Argo CD: phase, wave, kind, name):\n  PreSync  wave -5   Job shop-migrate  (hook, delete policy BeforeHookCreation)\n  PreSync  wave -1   Job shop/shop-schema  (hook, delete policy BeforeHookCreation)\n  Sync     wave 0    CustomResourceDefinition products.catalog.example.com  (default: before every wave)",
		"  Sync     wave 3    Product shop-default\n  PostSync wave 0    Job shop/shop-smoke-test  (hook, delete policy BeforeHookCreation,HookSucceeded)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Log(out)
		t.Log(encode(t, res.Objects))
	}
}

// Hooks per render and per object, for a kustomization-like render.
func TestRenderHookAndRules(t *testing.T) {
	repo := hooksCTF(t)
	def := writeFile(t, header+`spec:
  renders:
  - resource: {name: widgets}
    hook: {type: PostSync}
    ordering:
    - target: {kind: ConfigMap, name: widget-settings}
      hook: {type: PreSync, deletePolicy: HookSucceeded}
      syncWave: -2
`)
	objs := render(t, hooksRequest(repo, def))
	wantAnnotations(t, object(t, objs, "Widget", "default-widget"), "", "PostSync", "BeforeHookCreation")
	wantAnnotations(t, object(t, objs, "ConfigMap", "widget-settings"), "-2", "PreSync", "HookSucceeded")
	// The CRD is no hook: Argo CD would delete it, and every Widget with it.
	wantAnnotations(t, object(t, objs, "CustomResourceDefinition", "widgets.platform.example.com"), "", "", "")
}

// A Job's image is the component's location of the image resource, exactly
// as automatic localisation would write it: relocated, pinned by digest when
// the component knows it, tagged with the resource version when the
// reference has no tag.
func TestJobImageLocalised(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	res := func(ref string, d *ocm.Digest) *ocm.Resource {
		acc := ocm.Access{Type: "ociArtifact", Fields: map[string]any{"type": "ociArtifact", "imageReference": ref}}
		return &ocm.Resource{ElementMeta: ocm.ElementMeta{Name: "img", Version: "1.2.3"}, Type: "ociImage", Access: acc, Digest: d}
	}
	for _, tc := range []struct {
		ref    string
		digest *ocm.Digest
		want   string
	}{
		{"mirror.example:5000/copy/app:1.2.3", nil, "mirror.example:5000/copy/app:1.2.3"},
		{"mirror.example:5000/copy/app:1.2.3", &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: strings.Repeat("ab", 32)}, "mirror.example:5000/copy/app:1.2.3@" + digest},
		{"mirror.example:5000/copy/app@" + digest, nil, "mirror.example:5000/copy/app:1.2.3@" + digest},
		{"app", nil, "docker.io/library/app:1.2.3"},
	} {
		img, err := localize.ImageOf(res(tc.ref, tc.digest))
		if err != nil {
			t.Fatal(err)
		}
		got, err := deployment.JobImageRef(img)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.ref, got, err, tc.want)
		}
	}
}

// Definition errors name the field.
func TestOrderingDefinitionErrors(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"hook type", "  renders:\n  - resource: {name: widgets}\n    hook: {type: PreInstall}\n", `spec.renders[0].hook: hook type "PreInstall" is not one of PreSync, Sync, PostSync, SyncFail, PostDelete`},
		{"delete policy", "  renders:\n  - resource: {name: widgets}\n    hook: {type: PreSync, deletePolicy: hook-succeeded}\n", `spec.renders[0].hook: delete policy "hook-succeeded" is not one of`},
		{"unknown hook field", "  renders:\n  - resource: {name: widgets}\n    hook: {type: PreSync, policy: x}\n", `spec.renders[0].hook.policy (line 7): unknown field "policy"`},
		{"wave as text", "  renders:\n  - resource: {name: widgets}\n    syncWave: \"3\"\n", `spec.renders[0].syncWave: the string "3": want an integer (3, not "3") or ${…}`},
		{"wave not integer", "  renders:\n  - resource: {name: widgets}\n    syncWave: 1.5\n", `spec.renders[0].syncWave: 1.5 is not an integer`},
		{"wave out of range", "  renders:\n  - resource: {name: widgets}\n    syncWave: 9999999999\n", `spec.renders[0].syncWave: 9.999999999e+09 is out of range`},
		{"wave expression", "  renders:\n  - resource: {name: widgets}\n    syncWave: ${parameters.nope}\n", `spec.renders[0].syncWave: expression ${parameters.nope} (column 11): unknown parameter "nope"`},
		{"rule without kind", "  renders:\n  - resource: {name: widgets}\n    ordering: [{target: {name: x}, syncWave: 1}]\n", `spec.renders[0].ordering[0].target.kind: an ordering target needs a kind`},
		{"rule sets nothing", "  renders:\n  - resource: {name: widgets}\n    ordering: [{target: {kind: Widget}}]\n", `spec.renders[0].ordering[0]: the rule sets nothing`},
		{"job name", "  renders:\n  - resource: {name: widgets}\n  jobs: [{name: Migrate_DB, image: {resource: {name: api-image}}}]\n", `spec.jobs[0].name: "Migrate_DB" is not a DNS label`},
		{"job twice", "  renders:\n  - resource: {name: widgets}\n  jobs: [{name: a, image: {resource: {name: api-image}}}, {name: a, image: {resource: {name: api-image}}}]\n", `spec.jobs[1].name: job "a" is defined twice`},
		{"job image", "  renders:\n  - resource: {name: widgets}\n  jobs: [{name: a, image: {}}]\n", `spec.jobs[0].image.resource: the resource identity needs a name`},
		{"job render", "  renders:\n  - resource: {name: widgets}\n  jobs: [{name: a, render: catalog, image: {resource: {name: i}}}]\n", `spec.jobs[0].render: no render is named "catalog" (renders: widgets)`},
		{"job env", "  renders:\n  - resource: {name: widgets}\n  jobs: [{name: a, image: {resource: {name: i}}, env: [{name: X, value: v, secretKeyRef: {name: s, key: k}}]}]\n", `spec.jobs[0].env[0]: give a value or a secretKeyRef, not both`},
		{"job args expression", "  renders:\n  - resource: {name: widgets}\n  jobs: [{name: a, image: {resource: {name: i}}, args: ['${parameters.x'] }]\n", `spec.jobs[0].args[0]: expression`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := deployment.Decode("def.yaml", []byte(header+"spec:\n"+tc.spec))
			if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// Planning errors of the new fields: nothing renders.
func TestOrderingPlanErrors(t *testing.T) {
	repo := hooksCTF(t)
	for _, tc := range []struct {
		name, spec string
		sentinel   error
		want       string
	}{
		{"rule matches nothing", "  renders:\n  - resource: {name: widgets}\n    ordering: [{target: {kind: Widget, name: nope}, syncWave: 1}]\n",
			errdef.ErrNotFound, "spec.renders[0].ordering[0] (render widgets): no object of the render matches Widget nope"},
		{"CRD as hook", "  renders:\n  - resource: {name: widgets}\n    ordering: [{target: {kind: CustomResourceDefinition}, hook: {type: PreSync}}]\n",
			errdef.ErrInvalidInput, "CustomResourceDefinition widgets.platform.example.com cannot be a hook"},
		{"wave expression not an integer", "  renders:\n  - resource: {name: widgets}\n    syncWave: '${\"3\"}'\n",
			errdef.ErrInvalidInput, `spec.renders[0].syncWave: ${"3"} is the string "3": want an integer`},
		{"job image not an image", "  renders:\n  - resource: {name: widgets}\n  jobs: [{name: a, image: {resource: {name: chart}}}]\n",
			errdef.ErrInvalidInput, "resource chart has type helmChart, not an image (ociImage)"},
		{"job image unknown", "  renders:\n  - resource: {name: widgets}\n  jobs: [{name: a, image: {resource: {name: nope}}}]\n",
			errdef.ErrNotFound, "spec.jobs[0].image.resource:"},
		{"job name evaluates badly", "  renders:\n  - resource: {name: widgets}\n  jobs: [{name: '${app.name}_x', image: {resource: {name: api-image}}}]\n",
			errdef.ErrInvalidInput, `spec.jobs[0].name: "shop_x" is not a DNS label`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := renderer(nil).Render(context.Background(), hooksRequest(repo, writeFile(t, header+"spec:\n"+tc.spec)))
			if err == nil || !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %v %q", err, tc.sentinel, tc.want)
			}
			if res != nil {
				t.Error("a result on failure")
			}
		})
	}
}

func clone(o manifests.Object) manifests.Object {
	var copyValue func(v any) any
	copyValue = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			m := make(map[string]any, len(v))
			for k, e := range v {
				m[k] = copyValue(e)
			}
			return m
		case []any:
			l := make([]any, len(v))
			for i, e := range v {
				l[i] = copyValue(e)
			}
			return l
		}
		return v
	}
	return copyValue(o).(map[string]any)
}
