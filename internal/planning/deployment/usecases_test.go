package deployment_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
)

// Use case 1, simple helm: the OCM CLI's podinfo-app through the config
// planner, without a definition, is exactly `helm template`.
func TestUseCaseSimpleHelm(t *testing.T) {
	got := render(t, argocdocm.Request{
		Repository: fixtures.Path(t, "ctf"), Component: "example.com/fixtures/podinfo-app", Version: "1.0.0",
		ReleaseName: "demo", Namespace: "demo", KubeVersion: "1.31.0",
	})
	manifeststest.Equal(t, got, manifeststest.ReadFile(t, fixtures.Path(t, "golden", "podinfo-mini-defaults.yaml")))
}

// Use case 2, simple kustomize: the OCM CLI's kustomize-app is exactly `kustomize build`.
func TestUseCaseSimpleKustomize(t *testing.T) {
	for _, res := range []string{"manifests", "manifests-gz"} {
		t.Run(res, func(t *testing.T) {
			got := render(t, argocdocm.Request{
				Repository: fixtures.Path(t, "ctf"), Component: "example.com/fixtures/kustomize-app", Version: "1.0.0",
				Resources: []string{res},
			})
			manifeststest.Equal(t, got, manifeststest.ReadFile(t, fixtures.Path(t, "golden", "kustomize-app.yaml")))
		})
	}
}

// Use case 3, helm with configured values: values shipped in the component
// (a helmValues resource) and its image relocated to a mirror; with
// localisation on, the chart renders what `helm template` renders with
// values-relocated.yaml.
func TestUseCaseHelmConfiguredValues(t *testing.T) {
	want := manifeststest.ReadFile(t, fixtures.Path(t, "golden", "podinfo-mini-relocated.yaml"))
	req := argocdocm.Request{
		Repository: configCTF(t), Component: examples.PodinfoConfigured, Version: "1.0.0",
		ReleaseName: "demo", Namespace: "demo", KubeVersion: "1.31.0", Localize: true,
	}
	manifeststest.Equal(t, render(t, req), want)

	// Without localisation the chart default (ghcr.io) stays: the relocation is
	// what the localization-hint label did.
	req.Localize = false
	got := render(t, req)
	if s := encode(t, got); !strings.Contains(s, "image: ghcr.io/stefanprodan/podinfo:6.7.0") || !strings.Contains(s, "replicas: 2") {
		t.Errorf("without localisation want the chart's image and the config resource's replicas:\n%s", s)
	}

	// Instance values win over the config resource.
	req.Localize = true
	req.Set = []string{"replicaCount=4"}
	if s := encode(t, render(t, req)); !strings.Contains(s, "replicas: 4") {
		t.Errorf("--set does not win over the config resource:\n%s", s)
	}
}

// Use case 4, kustomization with configured values: ocm-controller's own
// backend ConfigData (defaults, rules into files, localization rule), used
// as is, with instance values on top.
func TestUseCaseKustomizeConfiguredValues(t *testing.T) {
	req := argocdocm.Request{
		Repository: configCTF(t), Component: examples.Backend, Version: "1.0.0",
		Path: "manifests", Set: []string{"replicas=3", "message=Hello from the instance"},
	}
	got := render(t, req)
	golden(t, "backend-configdata.yaml", got)
	s := encode(t, got)
	for _, want := range []string{
		"replicas: 3", // rule (( replicas )) with the instance's value
		"PODINFO_UI_MESSAGE: Hello from the instance",
		"PODINFO_CACHE_SERVER: tcp://redis:6379", // ConfigData default
		"image: " + examples.MirrorRegistry + "/mirror/stefanprodan/podinfo:6.2.3@" + examples.BackendImageDigest,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// Use case 5, the complicated one: a definition shipped in the component,
// instance parameters, a secret by reference, explicit and automatic
// localisation into a relocated registry.
func TestUseCaseShop(t *testing.T) {
	req := argocdocm.Request{
		Application: "shop", Namespace: "shop",
		Repository: configCTF(t), Component: examples.Shop, Version: "1.0.0", KubeVersion: "1.31.0",
		Parameters: map[string]string{
			"tier": "premium", "replicas": "3", "host": "shop.example.com",
			"database": "{secretName: shop-db, key: password}",
		},
	}
	var report *explain.Report
	res, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "shop.yaml", res.Objects)
	s := encode(t, res.Objects)
	for _, want := range []string{
		"replicas: 6", // premium doubles
		"image: " + examples.MirrorRegistry + "/mirror/example/shop-api:1.4.2@" + examples.ShopAPIDigest, // as the component states it
		"image: " + examples.MirrorRegistry + "/mirror/example/shop-worker:1.4.2@" + examples.ShopWorkerDigest,
		"image: docker.io/prom/statsd-exporter:v0.26.0", // not a resource: left alone
		"name: shop-db",
		"key: password",
		"host: shop.example.com",
		"ocm.software/component: example.com/config/shop:1.0.0",
		"value: shop-db.shop.svc", // config resource
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(s, "ghcr.io") {
		t.Errorf("an image still points at ghcr.io:\n%s", s)
	}
	if report == nil || len(report.Images) != 4 {
		t.Fatalf("report images: %+v", report)
	}
	left := 0
	for _, c := range report.Images {
		if c.Resource == "" {
			left++
			if !strings.Contains(c.From, "statsd-exporter") {
				t.Errorf("unexpected image left alone: %s", c)
			}
		}
	}
	if left != 1 {
		t.Errorf("want the metrics sidecar reported as left alone once, got %d", left)
	}
}

func encode(t *testing.T, objs []manifests.Object) string {
	t.Helper()
	var buf bytes.Buffer
	if err := manifests.Encode(&buf, objs); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
