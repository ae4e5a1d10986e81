package deployment_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

const overlayComponent = "example.com/test/overlay"

var overlayTree = filepath.Join(repoRoot, "testdata", "kustomize", "overlay", "tree")

// dirTar packs a directory of the repository as a directoryTree blob.
func dirTar(t *testing.T, dir string) []byte {
	t.Helper()
	files := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tarFiles(t, files)
}

func overlayCTF(t *testing.T, resources ...ocmbuild.Resource) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, &ocmbuild.Component{Name: overlayComponent, Version: "1.0.0", Resources: resources}); err != nil {
		t.Fatal(err)
	}
	return dir
}

const overlayDefinition = header + `spec:
  parameters:
    logLevel: {type: string, default: info}
  renders:
  - resource: {name: app}
    path: overlays/prod
    patches:
    - target: {kind: ConfigMap, name: app-config}
      path: data.LOG_LEVEL
      value: '${parameters.logLevel}'
    - target: {kind: Deployment, name: worker}
      path: metadata.annotations.owner
      value: platform
`

// A definition patch of a data key of a ConfigMap the tree's
// configMapGenerator generates is built by kustomize as a configMapGenerator
// with behavior merge: the output is what the real kustomize CLI (v5.8.2)
// builds from the same overlay written by hand, with a new hash suffix and
// the Deployment's envFrom following it, so Pods roll. The other patch is
// applied after rendering, as before, and --explain shows the overlay.
func TestKustomizeConfigMapPatchAsOverlay(t *testing.T) {
	repo := overlayCTF(t, ocmbuild.Resource{Name: "app", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: dirTar(t, overlayTree)})
	var report *explain.Report
	out, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), argocdocm.Request{
		Repository: repo, Component: overlayComponent, Version: "1.0.0",
		DefinitionFile: writeFile(t, overlayDefinition), Parameters: map[string]string{"logLevel": "debug"}})
	if err != nil {
		t.Fatal(err)
	}
	want := manifeststest.ReadFile(t, filepath.Join(repoRoot, "testdata", "kustomize", "overlay-configmap.golden.yaml"))
	for _, o := range want {
		if o["kind"] == "Deployment" && o["metadata"].(map[string]any)["name"] == "worker" {
			o["metadata"].(map[string]any)["annotations"] = map[string]any{"owner": "platform"}
		}
	}
	manifeststest.Equal(t, out.Objects, want)

	// Without the patch, the hash suffix is the tree's own: it did change.
	plain := header + "spec:\n  renders:\n  - resource: {name: app}\n    path: overlays/prod\n"
	base := render(t, argocdocm.Request{Repository: repo, Component: overlayComponent, Version: "1.0.0", DefinitionFile: writeFile(t, plain)})
	if got, old := configMapName(t, out.Objects), configMapName(t, base); got == old || !strings.HasPrefix(old, "app-config-") {
		t.Errorf("ConfigMap name %q with the patch, %q without: want a new hash suffix", got, old)
	}

	if report == nil || len(report.Renders) != 1 || !strings.Contains(report.Renders[0].Overlay, "behavior: merge") ||
		!strings.Contains(report.Renders[0].Overlay, "LOG_LEVEL=debug") {
		t.Fatalf("--explain does not show the overlay: %+v", report)
	}
	var text strings.Builder
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"kustomize overlay", "configMapGenerator app-config (behavior merge)", "LOG_LEVEL=debug"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("--explain misses %q:\n%s", s, text.String())
		}
	}
}

func configMapName(t *testing.T, objs []manifests.Object) string {
	t.Helper()
	for _, o := range objs {
		if o["kind"] == "ConfigMap" {
			return o["metadata"].(map[string]any)["name"].(string)
		}
	}
	t.Fatal("no ConfigMap in the output")
	return ""
}

// Plain manifests keep post-render patches: the ConfigMap is named as
// written, and a patch by that name sets its data as before.
func TestPlainManifestsPatchAfterRendering(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  LOG_LEVEL: info\n"
	repo := overlayCTF(t, ocmbuild.Resource{Name: "app", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: tarFiles(t, map[string]string{"cm.yaml": cm})})
	def := header + "spec:\n  renders:\n  - resource: {name: app}\n    patches:\n    - target: {kind: ConfigMap, name: app-config}\n      path: data.LOG_LEVEL\n      value: debug\n"
	var report *explain.Report
	out, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), argocdocm.Request{
		Repository: repo, Component: overlayComponent, Version: "1.0.0", DefinitionFile: writeFile(t, def)})
	if err != nil {
		t.Fatal(err)
	}
	want, err := manifests.Decode("cm.yaml", []byte(cm))
	if err != nil {
		t.Fatal(err)
	}
	want[0]["data"] = map[string]any{"LOG_LEVEL": "debug"}
	manifeststest.Equal(t, out.Objects, want)
	if report.Renders[0].Overlay != "" || len(report.Patches) != 1 || len(report.Patches[0].Objects) != 1 || report.Patches[0].Objects[0] != "ConfigMap app-config" {
		t.Errorf("plain manifests: overlay %q, patches %+v", report.Renders[0].Overlay, report.Patches)
	}
}

// Automatic localisation of a kustomization is built by kustomize as the
// overlay's images field: the images come out of kustomize at the
// component's location (localisation after rendering finds nothing left to
// rewrite), a tag@digest location included; --explain shows the images.
func TestKustomizeImagesAsOverlay(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	repo := overlayCTF(t,
		ocmbuild.Resource{Name: "app", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: dirTar(t, overlayTree)},
		ocmbuild.Resource{Name: "web", Type: "ociImage", Version: "1.0.0", Access: map[string]any{"type": "ociArtifact", "imageReference": "mirror.example:5000/copy/web:1.0.0"}},
		ocmbuild.Resource{Name: "worker", Type: "ociImage", Version: "1.0.0", Access: map[string]any{"type": "ociArtifact", "imageReference": "mirror.example:5000/copy/worker:1.0.0@" + digest}})
	var report *explain.Report
	def := header + "spec:\n  localization: {automatic: true}\n  renders:\n  - resource: {name: app}\n    path: overlays/prod\n"
	out, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), argocdocm.Request{
		Repository: repo, Component: overlayComponent, Version: "1.0.0", DefinitionFile: writeFile(t, def)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"web/web":       "mirror.example:5000/copy/web:1.0.0",
		"web/sidecar":   "docker.io/library/busybox:1.36", // no image resource: left alone
		"worker/worker": "mirror.example:5000/copy/worker:1.0.0@" + digest,
	}
	got := map[string]string{}
	for _, o := range out.Objects {
		if o["kind"] != "Deployment" {
			continue
		}
		name := o["metadata"].(map[string]any)["name"].(string)
		for _, c := range o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any) {
			cm := c.(map[string]any)
			got[name+"/"+cm["name"].(string)] = cm["image"].(string)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("images %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: image %q, want %q", k, got[k], v)
		}
	}
	ov := report.Renders[0].Overlay
	for _, s := range []string{"name: ghcr.io/example/web", "newName: mirror.example:5000/copy/web", "digest: " + digest} {
		if !strings.Contains(ov, s) {
			t.Errorf("overlay misses %q:\n%s", s, ov)
		}
	}
	if !report.Localized || len(report.Images) != 3 {
		t.Fatalf("localisation after rendering: %+v", report.Images)
	}
	for _, c := range report.Images {
		if c.Rewritten() {
			t.Errorf("rewritten after rendering, not by kustomize: %s", c)
		}
	}
}

// What a configMapGenerator literal cannot carry unchanged stays a
// post-render patch (which matches no generated name: the error says so),
// and a tree that needs an entry path still gets the render's hint.
func TestKustomizeOverlayFallbacks(t *testing.T) {
	repo := overlayCTF(t, ocmbuild.Resource{Name: "app", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: dirTar(t, overlayTree)})
	patch := func(path, value string) string {
		return header + "spec:\n  renders:\n  - resource: {name: app}\n    path: overlays/prod\n    patches:\n" +
			"    - target: {kind: ConfigMap, name: app-config}\n      path: " + path + "\n      value: " + value + "\n"
	}
	for _, tc := range []struct{ name, def, msg string }{
		{"quoted value", patch("data.LOG_LEVEL", `"'debug'"`), "no rendered object matches ConfigMap app-config"},
		{"number", patch("data.LOG_LEVEL", "3"), "no rendered object matches ConfigMap app-config"},
		{"not a data key", patch("metadata.labels.a", "b"), "no rendered object matches ConfigMap app-config"},
		{"key kubernetes refuses", patch(`data["a=b"]`, "c"), "no rendered object matches ConfigMap app-config"},
		{"no entry path", header + "spec:\n  renders:\n  - resource: {name: app}\n    patches:\n    - target: {kind: ConfigMap, name: app-config}\n      path: data.A\n      value: b\n", "with --path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := renderer(nil).Render(context.Background(), argocdocm.Request{
				Repository: repo, Component: overlayComponent, Version: "1.0.0", DefinitionFile: writeFile(t, tc.def)})
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %q", err, tc.msg)
			}
			if out != nil && len(out.Objects) > 0 {
				t.Errorf("objects on failure: %d", len(out.Objects))
			}
		})
	}
}

// A definition patch of a stringData key of a Secret the tree's
// secretGenerator generates is built by kustomize as a secretGenerator with
// behavior merge (new hash suffix, the Deployment's secretRef following):
// the kustomize CLI's build of testdata/kustomize/features/handwritten-secret.
// The value is in the output, as kustomize encodes it, and nowhere in
// --explain: not in the patches, not in the overlay, not in the
// expression's result.
func TestKustomizeSecretPatchAsOverlay(t *testing.T) {
	const password = "correct-horse-battery"
	featuresTree := filepath.Join(repoRoot, "testdata", "kustomize", "features", "tree")
	repo := overlayCTF(t, ocmbuild.Resource{Name: "app", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: dirTar(t, featuresTree)})
	def := header + `spec:
  parameters:
    dbPassword: {type: string}
  renders:
  - resource: {name: app}
    path: overlays/prod
    patches:
    - target: {kind: Secret, name: app-secret}
      path: stringData.PASSWORD
      value: '${parameters.dbPassword}'
`
	var report *explain.Report
	out, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), argocdocm.Request{
		Repository: repo, Component: overlayComponent, Version: "1.0.0",
		DefinitionFile: writeFile(t, def), Parameters: map[string]string{"dbPassword": password}})
	if err != nil {
		t.Fatal(err)
	}
	manifeststest.Equal(t, out.Objects, manifeststest.ReadFile(t, filepath.Join(repoRoot, "testdata", "kustomize", "features-secret.golden.yaml")))
	var text strings.Builder
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	explained := strings.ReplaceAll(text.String(), "dbPassword = \""+password+"\"", "") // the parameter, as the Application passed it
	for _, s := range []string{"secretGenerator app-secret (behavior merge)", "PASSWORD=(secret value, not shown)"} {
		if !strings.Contains(explained, s) {
			t.Errorf("--explain misses %q:\n%s", s, explained)
		}
	}
	if strings.Contains(explained, password) || strings.Contains(explained, base64.StdEncoding.EncodeToString([]byte(password))) {
		t.Errorf("--explain shows the secret value:\n%s", explained)
	}
}

// A render's kustomize field is the overlay kustomize builds, in
// kustomize's spelling, with values from instance parameters: the output
// is the kustomize CLI's build of testdata/kustomize/features/handwritten
// (namespace, nameSuffix, labels, commonAnnotations, replicas, a JSON patch
// by label selector, components, configMapGenerator and secretGenerator
// merges). --explain shows the overlay and where it comes from, and no
// secret literal.
func TestKustomizeFieldOfARender(t *testing.T) {
	featuresTree := filepath.Join(repoRoot, "testdata", "kustomize", "features", "tree")
	repo := overlayCTF(t, ocmbuild.Resource{Name: "app", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: dirTar(t, featuresTree)})
	def := header + `spec:
  parameters:
    ns: {type: string}
    replicas: {type: integer, default: 5}
    password: {type: string}
  renders:
  - resource: {name: app}
    path: overlays/prod
    kustomize:
      namespace: '${parameters.ns}'
      nameSuffix: -eu
      labels: [{pairs: {owner: platform}}]
      commonAnnotations: {example.com/team: payments}
      replicas: [{name: web, count: '${parameters.replicas}'}]
      components: [components/ha]
      patches:
      - target: {kind: Deployment, labelSelector: tier=frontend}
        patch: |
          - op: add
            path: /spec/template/spec/containers/0/args
            value: ["--verbose"]
      secretGenerator:
      - {name: app-secret, behavior: merge, literals: ['PASSWORD=${parameters.password}']}
      configMapGenerator:
      - {name: app-config, behavior: merge, literals: [LOG_LEVEL=debug]}
`
	var report *explain.Report
	out, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), argocdocm.Request{
		Repository: repo, Component: overlayComponent, Version: "1.0.0", DefinitionFile: writeFile(t, def),
		Parameters: map[string]string{"ns": "shop", "password": "from-the-definition"}})
	if err != nil {
		t.Fatal(err)
	}
	manifeststest.Equal(t, out.Objects, manifeststest.ReadFile(t, filepath.Join(repoRoot, "testdata", "kustomize", "features.golden.yaml")))
	var text strings.Builder
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	explained := strings.ReplaceAll(text.String(), `password = "from-the-definition"`, "")
	for _, s := range []string{"spec.renders[0].kustomize", "namespace: shop", "count: 5", "- <resource>/components/ha", "PASSWORD=(secret value, not shown)"} {
		if !strings.Contains(explained, s) {
			t.Errorf("--explain misses %q:\n%s", s, explained)
		}
	}
	if strings.Contains(explained, "from-the-definition") {
		t.Errorf("--explain shows the secret literal:\n%s", explained)
	}

	for _, tc := range []struct{ kust, msg string }{
		{"{nameprefix: x}", `unknown field "nameprefix"`},
		{"{replicas: [{name: web, count: many}]}", "replicas"},
		{"{patches: [{path: ../../etc/passwd}]}", "names a file"},
		{"{configMapGenerator: [{name: app-config, behavior: merge, files: [/etc/passwd]}]}", "reads files"},
		{"{components: [../../x]}", "not a directory inside the resource"},
	} {
		bad := header + "spec:\n  renders:\n  - resource: {name: app}\n    path: overlays/prod\n    kustomize: " + tc.kust + "\n"
		res, err := renderer(nil).Render(context.Background(), argocdocm.Request{Repository: repo, Component: overlayComponent, Version: "1.0.0", DefinitionFile: writeFile(t, bad)})
		if res != nil || !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an invalid input error with %q", tc.kust, err, tc.msg)
		}
	}
}

// renderOverApplicationOverlay renders the directoryTree of
// testdata/kustomize/features/tree from an Application directory that holds
// gitoverlay/app's kustomization.yaml (naming the resource as .ocm/manifests)
// and def as def.yaml.
func renderOverApplicationOverlay(t *testing.T, def string, report func(*explain.Report)) []manifests.Object {
	t.Helper()
	kdata := filepath.Join(repoRoot, "testdata", "kustomize")
	repo := overlayCTF(t, ocmbuild.Resource{Name: "manifests", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: dirTar(t, filepath.Join(kdata, "features", "tree"))})
	app := filepath.Dir(repo)
	if err := os.CopyFS(app, os.DirFS(filepath.Join(kdata, "gitoverlay", "app"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "def.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := argocdocm.OpenRoot(app)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	out, err := renderer(report).Render(context.Background(), argocdocm.Request{
		Repository: filepath.Base(repo), Dir: app, Root: root, Component: overlayComponent, Version: "1.0.0", DefinitionFile: "def.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	return out.Objects
}

// The definition's kustomize field over the Application's own
// kustomization.yaml (which names the resource as .ocm/manifests): the
// kustomize CLI's build of testdata/kustomize/gitoverlay/on-top over
// gitoverlay/app; --explain says that the Application's overlay builds the
// resource and that the definition's sits on it.
func TestKustomizeFieldOverApplicationOverlay(t *testing.T) {
	def := header + `spec:
  renders:
  - resource: {name: manifests}
    kustomize:
      images: [{name: ghcr.io/example/web, newName: "registry.internal.example:5000/mirror/web", newTag: "1.0.0"}]
      secretGenerator: [{name: app-secret, behavior: merge, literals: [PASSWORD=from-the-definition]}]
`
	var report *explain.Report
	out := renderOverApplicationOverlay(t, def, func(r *explain.Report) { report = r })
	kdata := filepath.Join(repoRoot, "testdata", "kustomize")
	manifeststest.Equal(t, out, manifeststest.ReadFile(t, filepath.Join(kdata, "gitoverlay-on-top.golden.yaml")))
	rr := report.Renders[0]
	if !strings.Contains(rr.ApplicationOverlay, ".ocm/manifests") || !strings.Contains(rr.Overlay, "<the Application's kustomization.yaml>") || strings.Contains(rr.Overlay, "from-the-definition") {
		t.Errorf("--explain: application overlay %q, overlay:\n%s", rr.ApplicationOverlay, rr.Overlay)
	}
	// the line of the Application's kustomization.yaml that names the resource
	if want := "named first at kustomization.yaml line 6, column 5: .ocm/manifests/overlays/prod"; !strings.HasSuffix(rr.ApplicationOverlay, want) {
		t.Errorf("--explain: application overlay %q, want it to end with %q", rr.ApplicationOverlay, want)
	}
	if data, err := os.ReadFile(filepath.Join(kdata, "gitoverlay", "app", "kustomization.yaml")); err != nil || strings.Split(string(data), "\n")[5] != "  - .ocm/manifests/overlays/prod" {
		t.Errorf("line 6 of the Application's kustomization.yaml is not the one naming the resource (%v)", err)
	}
}

// With the Application's overlay, a definition patch of a data key of a
// ConfigMap a generator of the tree generates still becomes a generator
// merge (over the Application's own merge of it): new hash suffix, the
// Deployment following.
func TestKustomizeConfigMapPatchOverApplicationOverlay(t *testing.T) {
	def := header + "spec:\n  renders:\n  - resource: {name: manifests}\n    patches:\n    - target: {kind: ConfigMap, name: app-config}\n      path: data.LOG_LEVEL\n      value: debug\n"
	out := renderOverApplicationOverlay(t, def, nil)
	want := manifeststest.ReadFile(t, filepath.Join(repoRoot, "testdata", "kustomize", "gitoverlay.golden.yaml"))
	var cm, ref, oldName string
	for _, o := range out {
		switch o["kind"] {
		case "ConfigMap":
			cm = o["metadata"].(map[string]any)["name"].(string)
			if o["data"].(map[string]any)["LOG_LEVEL"] != "debug" || o["data"].(map[string]any)["settings.conf"] == nil {
				t.Errorf("ConfigMap data %v", o["data"])
			}
		case "Deployment":
			spec := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			ref = spec["containers"].([]any)[0].(map[string]any)["envFrom"].([]any)[0].(map[string]any)["configMapRef"].(map[string]any)["name"].(string)
		}
	}
	for _, o := range want {
		if o["kind"] == "ConfigMap" {
			oldName = o["metadata"].(map[string]any)["name"].(string)
		}
	}
	if cm == "" || cm != ref || cm == oldName || !strings.HasPrefix(cm, "payments-app-config-") {
		t.Errorf("ConfigMap %q, referenced as %q, without the patch %q: want a new hash suffix that the Deployment follows", cm, ref, oldName)
	}
}
