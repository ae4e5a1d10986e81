package localize_test

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
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

var digest = "sha256:" + strings.Repeat("c", 64)

func imageRes(name, version, ref string, d *ocm.Digest) ocm.Resource {
	return ocm.Resource{ElementMeta: ocm.ElementMeta{Name: name, Version: version}, Type: "ociImage",
		Access: ocm.Access{Type: "ociArtifact", Fields: map[string]any{"type": "ociArtifact", "imageReference": ref}}, Digest: d}
}

func descriptor() *ocm.Descriptor {
	return &ocm.Descriptor{Name: "example.com/a", Version: "1.0.0", Resources: []ocm.Resource{
		imageRes("app", "6.7.0", "mirror.example:5000/copy/stefanprodan/podinfo:6.7.0", nil),
		imageRes("worker", "1.2.0", "mirror.example:5000/copy/acme/worker:1.2.0", &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: strings.Repeat("c", 64)}),
		imageRes("redis", "7.4", "mirror.example:5000/copy/library/redis:7.4", nil),
		{ElementMeta: ocm.ElementMeta{Name: "chart", Version: "1.0.0"}, Type: "helmChart", Access: ocm.Access{Type: "localBlob"}},
		{ElementMeta: ocm.ElementMeta{Name: "local-image", Version: "1.0.0"}, Type: "ociImage", Access: ocm.Access{Type: "localBlob"}},
	}}
}

func decode(t *testing.T, s string) []manifests.Object {
	t.Helper()
	objs, err := manifests.Decode("test.yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

var workloads = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: ghcr.io/stefanprodan/podinfo:6.7.0}]
  ephemeralContainers: [{name: debug, image: busybox:1.36}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns}
spec:
  template:
    spec:
      initContainers: [{name: init, image: acme/worker:1.2.0}]
      containers: [{name: c, image: "redis:7.4"}, {name: other, image: "redis:7.2"}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec: {template: {spec: {containers: [{name: c, image: ghcr.io/stefanprodan/podinfo:6.7.0}]}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec: {template: {spec: {containers: [{name: c, image: "docker.io/acme/worker@` + digest + `"}]}}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec: {template: {spec: {containers: [{name: c, image: ghcr.io/stefanprodan/podinfo:6.7.0}]}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec: {template: {spec: {containers: [{name: c, image: ghcr.io/stefanprodan/podinfo:6.7.0}]}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj}
spec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: ghcr.io/stefanprodan/podinfo:6.7.0}]}}}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {image: ghcr.io/stefanprodan/podinfo:6.7.0}
---
apiVersion: example.com/v1
kind: Deployment
metadata: {name: not-apps}
spec: {template: {spec: {containers: [{name: c, image: ghcr.io/stefanprodan/podinfo:6.7.0}]}}}
`

func TestRewriteWorkloads(t *testing.T) {
	objs := decode(t, workloads)
	images, notes := localize.Images(descriptor())
	if len(images) != 3 || len(notes) != 1 || !strings.Contains(notes[0], "local-image") {
		t.Fatalf("images %d, notes %v", len(images), notes)
	}
	changes, err := localize.Rewrite(objs, images)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	manifests.Encode(&buf, objs)
	out := buf.String()
	app := "mirror.example:5000/copy/stefanprodan/podinfo:6.7.0"
	worker := "mirror.example:5000/copy/acme/worker:1.2.0@" + digest
	for _, want := range []string{
		"image: " + app, // Pod, StatefulSet, ReplicaSet, Job, CronJob
		"image: " + worker,
		"image: mirror.example:5000/copy/library/redis:7.4", // Docker Hub short name, mirrored path
		"image: redis:7.2",                          // other tag: left alone
		"image: busybox:1.36",                       // not a resource: left alone
		"image: ghcr.io/stefanprodan/podinfo:6.7.0", // ConfigMap and a non-apps Deployment are untouched
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(out, "image: "+app); n != 5 {
		t.Errorf("app image rewritten %d times, want 5 (Pod, StatefulSet, ReplicaSet, Job, CronJob)", n)
	}
	if n := strings.Count(out, "image: ghcr.io/stefanprodan/podinfo:6.7.0"); n != 2 {
		t.Errorf("want exactly the ConfigMap and the non-apps Deployment left with ghcr.io, got %d", n)
	}
	if strings.Contains(out, "docker.io/acme/worker") {
		t.Errorf("the digest-only reference was not rewritten")
	}
	left := localize.Unmatched(changes)
	if len(left) != 2 {
		t.Fatalf("unmatched: %v", left)
	}
	for _, c := range left {
		if !strings.Contains(c.String(), "left as is") {
			t.Errorf("%s", c)
		}
	}
	for _, c := range changes {
		if c.Object == "DaemonSet ds" && (c.Resource != "worker" || c.To != worker) {
			t.Errorf("digest-only reference: %+v", c)
		}
		if c.Object == "Deployment ns/d" && c.Container == "initContainers[init]" && c.Path != "spec.template.spec.initContainers[0].image" {
			t.Errorf("path %s", c.Path)
		}
	}
}

func TestRewriteAmbiguous(t *testing.T) {
	d := &ocm.Descriptor{Resources: []ocm.Resource{
		imageRes("a", "1", "mirror.example/a/redis:7", nil),
		imageRes("b", "1", "mirror.example/b/redis:7", nil),
	}}
	images, _ := localize.Images(d)
	_, err := localize.Rewrite(decode(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: 'x/redis:7'}]}\n"), images)
	if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "several image resources") || !strings.Contains(err.Error(), "Pod p containers[c]") {
		t.Fatalf("got %v", err)
	}
	// The longer shared path wins over a tie.
	objs := decode(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: 'x/a/redis:7'}]}\n")
	if _, err := localize.Rewrite(objs, images); err != nil {
		t.Fatal(err)
	}
	if got := objs[0]["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]; got != "mirror.example/a/redis:7" {
		t.Fatalf("got %v", got)
	}
}

func TestRequireAll(t *testing.T) {
	objs := decode(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: 'busybox:1'}]}\n")
	var log bytes.Buffer
	_, err := localize.Run(descriptor(), objs, true, &log)
	if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "busybox:1 (Pod p containers[c])") {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(log.String(), "busybox:1 left as is") {
		t.Errorf("log: %s", log.String())
	}
}

// Automatic localisation through the pipeline, on real renders, compared with
// goldens whose images point at a relocated registry.
func TestPostProcessorRelocatedGoldens(t *testing.T) {
	fx := fixtures.Dir(t)
	chart, err := os.ReadFile(filepath.Join(fx, "inputs", "podinfo-mini-0.1.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	kfiles, err := ocmbuild.ReadDir(filepath.Join(fx, "inputs", "kustomize"))
	if err != nil {
		t.Fatal(err)
	}
	ktar, err := ocmbuild.TarFiles(kfiles, false)
	if err != nil {
		t.Fatal(err)
	}
	relocated := "registry.internal.example:5000/mirror/stefanprodan/podinfo:6.7.0"
	c := &ocmbuild.Component{Name: "example.com/relocated/podinfo", Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "chart", Type: "helmChart", Data: chart, MediaType: ocmbuild.MediaTypeHelmChart},
		{Name: "manifests", Type: "directoryTree", Data: ktar, MediaType: ocmbuild.MediaTypeTar},
		{Name: "image", Type: "ociImage", Version: "6.7.0", Access: map[string]any{"type": "ociArtifact", "imageReference": relocated}},
	}}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, c); err != nil {
		t.Fatal(err)
	}
	var reported []localize.Change
	// As the CLI wires it: the config planner plans the render and its
	// finishing work (localisation).
	r := &argocdocm.Renderer{}
	r.Explain = func(x argocdocm.Explanation) { reported = x.(*explain.Report).Images }
	req := argocdocm.Request{Repository: dir, Component: c.Name, Version: c.Version, Resources: []string{"chart"},
		ReleaseName: "demo", Namespace: "demo", KubeVersion: "1.31.0",
		Set: []string{"replicaCount=2", "ui.message=hello from the relocated registry"}}

	// Off unless the request asks for it.
	res, err := r.Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(reported) != 0 || strings.Contains(encode(t, res.Objects), "registry.internal.example") {
		t.Fatal("localisation ran without Localize")
	}

	req.Localize = true
	res, err = r.Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	manifeststest.Equal(t, res.Objects, manifeststest.ReadFile(t, fixtures.Path(t, "golden", "podinfo-mini-relocated.yaml")))
	if len(reported) != 1 || !reported[0].Rewritten() {
		t.Errorf("report: %v", reported)
	}

	req.Resources, req.Set = []string{"manifests"}, nil
	res, err = r.Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := manifeststest.ReadFile(t, fixtures.Path(t, "golden", "kustomize-app.yaml"))
	for _, o := range want { // the golden of `kustomize build`, relocated
		if o["kind"] == "Deployment" {
			o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = relocated
		}
	}
	manifeststest.Equal(t, res.Objects, want)
}

func encode(t *testing.T, objs []manifests.Object) string {
	t.Helper()
	var buf bytes.Buffer
	if err := manifests.Encode(&buf, objs); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// Automatic localisation writes the component's reference exactly as it
// stands: no tag taken from the rendered image (the chart's appVersion, the
// resource version) for a digest-only reference, and a tag@digest reference
// stays tag@digest however the chart rendered it.
func TestRewriteUsesTheComponentsReferenceAsStated(t *testing.T) {
	const mirror = "mirror.example:5000/copy/acme/"
	d := &ocm.Descriptor{Name: "example.com/a", Version: "1.0.0", Resources: []ocm.Resource{
		imageRes("app", "5.4.2", mirror+"app@"+digest, nil),
		imageRes("api", "2.0.0", mirror+"api:2.0@"+digest, nil),
		imageRes("web", "3.1.0", mirror+"web:3.1.0", nil),
	}}
	images, _ := localize.Images(d)
	for _, tc := range []struct{ rendered, want string }{
		{"ghcr.io/acme/app:5.4.2", mirror + "app@" + digest},
		{"ghcr.io/acme/app@" + digest, mirror + "app@" + digest},
		{"ghcr.io/acme/api@" + digest, mirror + "api:2.0@" + digest},
		{mirror + "api@" + digest, mirror + "api:2.0@" + digest},
		{"ghcr.io/acme/api:2.0", mirror + "api:2.0@" + digest},
		{"ghcr.io/acme/web:3.1.0", mirror + "web:3.1.0"},
	} {
		objs := decode(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: \""+tc.rendered+"\"}]}\n")
		changes, err := localize.Rewrite(objs, images)
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || changes[0].Resource == "" {
			t.Fatalf("%s: %+v", tc.rendered, changes)
		}
		got := objs[0]["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]
		if got != tc.want {
			t.Errorf("%s -> %v, want %s", tc.rendered, got, tc.want)
		}
	}
	// Already exactly the component's reference: left alone, not reported as a rewrite.
	objs := decode(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: \""+mirror+"api:2.0@"+digest+"\"}]}\n")
	changes, err := localize.Rewrite(objs, images)
	if err != nil || len(changes) != 1 || changes[0].Rewritten() {
		t.Fatalf("%v %+v", err, changes)
	}
}
