package argocdocm_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

const guardedApp = "example.com/guarded/app"

// guardChart is a chart whose values choose the image and may add sidecars,
// init containers and whole objects, as many real charts allow.
var guardChart = map[string][]byte{
	"Chart.yaml": []byte("apiVersion: v2\nname: app\nversion: 1.0.0\n"),
	"values.yaml": []byte(`image: {repository: ghcr.io/acme/app, tag: 1.0.0, digest: ""}
sidecars: []
initContainers: []
extraObjects: []
`),
	"templates/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-app, namespace: {{ .Release.Namespace }}}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      {{- with .Values.initContainers }}
      initContainers: {{ toJson . }}
      {{- end }}
      containers:
        - name: app
          image: "{{ .Values.image.repository }}{{ if .Values.image.digest }}@{{ .Values.image.digest }}{{ else }}:{{ .Values.image.tag }}{{ end }}"
        {{- range .Values.sidecars }}
        - {{ toJson . }}
        {{- end }}
`),
	"templates/extra.yaml": []byte(`{{- range .Values.extraObjects }}
---
{{ toYaml . }}
{{- end }}
`),
}

var guardedDigest = "sha256:" + strings.Repeat("7", 64)

// guardedCTF writes the component: the chart and its image (by tag, with the
// manifest digest as resource digest); signed when key is set. Without
// images, the component declares none.
func guardedCTF(t *testing.T, key *rsa.PrivateKey, images bool) string {
	t.Helper()
	chart, err := ocmbuild.PackageChart(guardChart)
	if err != nil {
		t.Fatal(err)
	}
	c := &ocmbuild.Component{Name: guardedApp, Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "chart", Type: "helmChart", MediaType: ocmbuild.MediaTypeHelmChart, Data: chart}}}
	if images {
		c.Resources = append(c.Resources, ocmbuild.Resource{Name: "image", Type: "ociImage", Version: "1.0.0",
			Access: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/acme/app:1.0.0"},
			Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: strings.TrimPrefix(guardedDigest, "sha256:")}})
	}
	if key != nil {
		if err := c.Sign("release", key); err != nil {
			t.Fatal(err)
		}
		c.Blobs = []ocmbuild.Blob{{MediaType: ocmbuild.MediaTypeHelmChart, Data: chart}}
	}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, c); err != nil {
		t.Fatal(err)
	}
	return dir
}

// guardedRenderer is wired as the CLI wires it: the config planner plans
// the renders and their finishing work (localisation), and the guard runs
// last.
// guardOn is an operator's rule with the image origin guard on.
var guardOn = &policy.Rule{LocalArchives: true, RequireComponentImages: true}

func guardedRenderer(key *rsa.PrivateKey) *argocdocm.Renderer {
	r := &argocdocm.Renderer{}
	argocdocm.SetPlanner(r, &deployment.DefinitionPlanner{})
	if key != nil {
		r.SetSignatures(&signing.Verifier{Keys: map[string]crypto.PublicKey{"release": &key.PublicKey}})
	}
	return r
}

func imagesOf(objs []manifests.Object) []string {
	var out []string
	for _, o := range objs {
		spec, _ := o["spec"].(map[string]any)
		tmpl, _ := spec["template"].(map[string]any)
		ps, _ := tmpl["spec"].(map[string]any)
		for _, f := range []string{"initContainers", "containers"} {
			list, _ := ps[f].([]any)
			for _, c := range list {
				out = append(out, c.(map[string]any)["image"].(string))
			}
		}
	}
	return out
}

// A signed component whose values from git replace its image, add a sidecar
// or an init container, or add workloads of their own: refused, with one line
// naming Application, component, version, resource, object, container and
// image. What the component declares passes once it is pinned by digest
// (localisation does that); by tag it is refused, since a signature covers
// digests only.
func TestImageGuardSignedComponent(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	repo := guardedCTF(t, key, true)
	r := guardedRenderer(key)
	r.SetRule(guardOn)
	base := argocdocm.Request{Application: "shop", Repository: repo, Component: guardedApp, Version: "1.0.0",
		ReleaseName: "shop", Namespace: "shop"}

	prefix := "application shop: component " + guardedApp + ":1.0.0: resource chart: not allowed: image origin guard: "
	for _, tc := range []struct {
		name     string
		localize bool
		set      []string
		values   map[string]any
		want     string // "" means allowed; else the rest of the message after prefix
	}{
		{name: "localised", localize: true},
		{name: "pinned by values", set: []string{"image.digest=" + guardedDigest}},
		{name: "same digest from a mirror", set: []string{"image.repository=mirror.internal:5000/acme/app", "image.digest=" + guardedDigest}},
		{name: "by tag", want: `Deployment shop/shop-app containers[app] (spec.template.spec.containers[0].image): image "ghcr.io/acme/app:1.0.0" names image resource "image" by tag, which the component's signature does not cover`},
		{name: "evil repository", localize: true, set: []string{"image.repository=evil.example.com/miner"},
			want: `Deployment shop/shop-app containers[app] (spec.template.spec.containers[0].image): image "evil.example.com/miner:1.0.0" is not an image resource of the component`},
		{name: "evil repository, pinned", set: []string{"image.repository=evil.example.com/miner", "image.digest=sha256:" + strings.Repeat("6", 64)},
			want: `image "evil.example.com/miner@sha256:6666`},
		{name: "sidecar", localize: true, values: map[string]any{"sidecars": []any{map[string]any{"name": "miner", "image": "evil.example.com/miner:latest"}}},
			want: `Deployment shop/shop-app containers[miner] (spec.template.spec.containers[1].image): image "evil.example.com/miner:latest"`},
		{name: "init container", localize: true, values: map[string]any{"initContainers": []any{map[string]any{"name": "setup", "image": "busybox:1.36"}}},
			want: `Deployment shop/shop-app initContainers[setup] (spec.template.spec.initContainers[0].image): image "busybox:1.36"`},
		{name: "extra pod", localize: true, values: map[string]any{"extraObjects": []any{map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p"}, "spec": map[string]any{"ephemeralContainers": []any{map[string]any{"name": "dbg", "image": "evil.example.com/dbg"}}}}}},
			want: `Pod p ephemeralContainers[dbg] (spec.ephemeralContainers[0].image): image "evil.example.com/dbg"`},
		{name: "extra cronjob", localize: true, values: map[string]any{"extraObjects": []any{map[string]any{"apiVersion": "batch/v1", "kind": "CronJob",
			"metadata": map[string]any{"name": "cj", "namespace": "shop"}, "spec": map[string]any{"schedule": "* * * * *", "jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "c", "image": "evil.example.com/miner:1"}}}}}}}}}},
			want: `CronJob shop/cj containers[c] (spec.jobTemplate.spec.template.spec.containers[0].image)`},
		{name: "extra rollout", localize: true, values: map[string]any{"extraObjects": []any{map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
			"metadata": map[string]any{"name": "ro"}, "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "c", "image": "evil.example.com/miner:1"}}}}}}}},
			want: `Rollout ro containers[c] (spec.template.spec.containers[0].image)`},
		{name: "extra rollout of the component's image", localize: true, values: map[string]any{"extraObjects": []any{map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
			"metadata": map[string]any{"name": "ro"}, "spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "c", "image": "ghcr.io/acme/app:1.0.0"}}}}}}}}}, // localised, then allowed
		{name: "extra application", localize: true, values: map[string]any{"extraObjects": []any{map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": "escape", "namespace": "argocd"}, "spec": map[string]any{"project": "admin-project"}}}},
			want: `Application argocd/escape: is an Argo CD Application`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := base
			req.Localize, req.Set, req.Values = tc.localize, tc.set, tc.values
			res, err := r.Render(context.Background(), req)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				for _, img := range imagesOf(res.Objects) {
					if !strings.HasSuffix(img, "@"+guardedDigest) {
						t.Errorf("image %s is not pinned by the signed digest", img)
					}
				}
				return
			}
			if res != nil || !errors.Is(err, errdef.ErrNotAllowed) || !strings.HasPrefix(err.Error(), prefix) ||
				!strings.Contains(strings.TrimPrefix(err.Error(), prefix), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v (result %v)\nwant %s…%s", err, res != nil, prefix, tc.want)
			}
			t.Log(err)
		})
	}
}

// Without signatures the descriptor is trusted as its repository is: the
// exact reference by tag passes too; another tag, registry or repository
// does not.
func TestImageGuardUnsignedByTag(t *testing.T) {
	r := guardedRenderer(nil)
	r.SetRule(guardOn)
	req := argocdocm.Request{Repository: guardedCTF(t, nil, true), Component: guardedApp, Version: "1.0.0", ReleaseName: "a", Namespace: "a"}
	if _, err := r.Render(context.Background(), req); err != nil {
		t.Fatalf("exact reference refused: %v", err)
	}
	for _, set := range [][]string{{"image.tag=1.0.1"}, {"image.repository=ghcr.io/acme/app-debug"}, {"image.repository=docker.io/acme/app"}} {
		req.Set = set
		if _, err := r.Render(context.Background(), req); !errors.Is(err, errdef.ErrNotAllowed) {
			t.Errorf("%v: got %v", set, err)
		}
	}
}

// A component that declares no image resources: with the guard on, every
// workload is refused, and the message says why.
func TestImageGuardComponentWithoutImages(t *testing.T) {
	r := guardedRenderer(nil)
	r.SetRule(guardOn) // the generation's rule, as an operator's environment or policy sets it
	_, err := r.Render(context.Background(), argocdocm.Request{Repository: guardedCTF(t, nil, false), Component: guardedApp, Version: "1.0.0",
		Set: []string{"image.digest=" + guardedDigest}})
	if !errors.Is(err, errdef.ErrNotAllowed) || !strings.Contains(err.Error(), "the component declares no image resources (ociImage/ociArtifact), so the guard refuses every workload image") {
		t.Fatalf("got %v", err)
	}
}

// The guard off: output is what it always was, evil values included; the
// guard on: what passes is not changed by it.
func TestImageGuardOffAndUnchanged(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	repo := guardedCTF(t, key, true)
	r := guardedRenderer(key)
	req := argocdocm.Request{Repository: repo, Component: guardedApp, Version: "1.0.0", ReleaseName: "a", Namespace: "a",
		Set: []string{"image.repository=evil.example.com/miner"}}
	res, err := r.Render(context.Background(), req)
	if err != nil || strings.Join(imagesOf(res.Objects), ",") != "evil.example.com/miner:1.0.0" {
		t.Fatalf("guard off: %v %v", err, res)
	}
	req.Set, req.Localize = nil, true
	off, err := r.Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r.SetRule(guardOn)
	on, err := r.Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(off.Objects, on.Objects) {
		t.Fatalf("the guard changed the output:\n%v\n%v", off.Objects, on.Objects)
	}
}
