package argocdocm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

func registryRenderer(t *testing.T, cacheDir string) *argocdocm.Renderer {
	t.Helper()
	src, err := resolve.NewSource(oci.WithCache(cache.Open(cacheDir)))
	if err != nil {
		t.Fatal(err)
	}
	return argocdocm.NewSourceRenderer(src)
}

// The same component versions render identically from a CTF, from a registry
// they were pushed to, and from a registry after `ocm transfer --copy-resources`
// (charts moved out to their own OCI artifacts).
func TestRegistryRendersLikeCTF(t *testing.T) {
	ctx := context.Background()
	comps, err := examples.Demo("testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	reg.Push(t, "ocm", comps...)
	reg.PushTransferred(t, "moved", comps...)

	for _, c := range []struct{ component, version string }{
		{examples.Podinfo, "1.0.0"},
		{examples.Podinfo, "1.1.0+build.7"},
		{examples.Catalog, "2.3.0"},
		{examples.Extras, "1.0.0"},
	} {
		t.Run(c.component+":"+c.version, func(t *testing.T) {
			base := argocdocm.Request{Component: c.component, Version: c.version, ReleaseName: "demo", Namespace: "demo"}
			fromCTF := base
			fromCTF.Repository = demoCTF(t)
			want, err := (&argocdocm.Renderer{}).Render(ctx, fromCTF)
			if err != nil {
				t.Fatal(err)
			}
			for _, repo := range []string{"http://" + reg.Host + "/ocm", "http://" + reg.Host + "/moved"} {
				req := base
				req.Repository = repo
				got, err := registryRenderer(t, t.TempDir()).Render(ctx, req)
				if err != nil {
					t.Fatalf("%s: %v", repo, err)
				}
				manifeststest.Equal(t, got.Objects, want.Objects)
			}
		})
	}
}

func TestRegistryVersionConstraint(t *testing.T) {
	comps, _ := examples.Demo("testdata/src")
	reg := registrytest.Start(t)
	reg.Push(t, "ocm", comps...)
	var log strings.Builder
	r := registryRenderer(t, t.TempDir())
	r.Log = &log
	res, err := r.Render(context.Background(), argocdocm.Request{Repository: "http://" + reg.Host + "/ocm", Component: examples.Podinfo, Version: "^1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != "1.1.0+build.7" || !strings.Contains(log.String(), `"^1.0.0" resolved to 1.1.0+build.7`) {
		t.Fatalf("resolved %s, log %q", res.Version, log.String())
	}
	_, err = r.Render(context.Background(), argocdocm.Request{Repository: "http://" + reg.Host + "/ocm", Component: examples.Podinfo, Version: ">=2"})
	if err == nil || !strings.Contains(err.Error(), "1.0.0") {
		t.Fatalf("unmatched constraint: %v", err)
	}
}

// The registry the OCM CLI itself wrote with `ocm transfer --copy-resources`:
// transferred charts (ociArtifact with http://, tag and digest) and local ones.
func TestRenderFromOCMCLITransferredRegistry(t *testing.T) {
	reg := registrytest.ServeFixture(t)
	want := manifeststest.ReadFile(t, fixtures.Path(t, "golden", "podinfo-mini-defaults.yaml"))
	for _, c := range []struct{ component, version string }{
		{"example.com/fixtures/podinfo-app", "1.0.0"},
		{"example.com/fixtures/podinfo-app-v3", "1.0.0"},
		{"example.com/fixtures/podinfo-app-plainchart", "1.0.0"},
		{"example.com/fixtures/signed-app", "1.0.0"},
	} {
		t.Run(c.component, func(t *testing.T) {
			res, err := registryRenderer(t, t.TempDir()).Render(context.Background(), argocdocm.Request{
				Repository: reg.URL + "/" + registrytest.FixtureBase, Component: c.component, Version: c.version,
				Resources: []string{"chart"}, ReleaseName: "demo", Namespace: "demo", KubeVersion: "1.31.0",
			})
			if err != nil {
				t.Fatal(err)
			}
			manifeststest.Equal(t, res.Objects, want)
		})
	}
}
