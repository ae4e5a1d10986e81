package argocdocm_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

const distroBundle = "testdata/distro/idp-bundle.tgz"

// The committed bundle holds exactly what the generator makes (compared after
// decompression: gzip bytes may differ between Go releases).
func TestCommittedDistroBundleIsUpToDate(t *testing.T) {
	comps, err := examples.DistroComponents("testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "bundle.tgz")
	if err := ocmbuild.WriteCTFArchive(fresh, true, comps...); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gunzip(t, fresh), gunzip(t, distroBundle)) {
		t.Fatal("testdata/distro/idp-bundle.tgz differs from the generator's: run make testdata")
	}
}

func gunzip(t *testing.T, p string) []byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func kindsOf(objs []manifests.Object) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		out[o["kind"].(string)]++
	}
	return out
}

// The whole distro renders from one offline tgz: the platform, its nested
// platform, and every package, with no registry.
func TestDistroFromOfflineBundle(t *testing.T) {
	ctx := context.Background()
	r := &argocdocm.Renderer{}
	src := argocdocm.PlatformSource{RepoURL: "https://git.example.com/idp.git", Path: "prod", TargetRevision: "main"}
	render := func(component, version string) *argocdocm.Result {
		t.Helper()
		res, err := r.Render(ctx, argocdocm.Request{Repository: distroBundle, Component: component, Version: version,
			ReleaseName: "idp", Namespace: "idp", Platform: argocdocm.PlatformRequest{Source: src, Project: "idp"}})
		if err != nil {
			t.Fatalf("%s: %v", component, err)
		}
		return res
	}
	top := render(examples.Distro, "1.0.0")
	if k := kindsOf(top.Objects); k["Application"] != 3 || len(k) != 1 {
		t.Fatalf("distro children %v", k)
	}
	children := map[string]map[string]any{}
	for _, app := range top.Objects {
		children[app["metadata"].(map[string]any)["name"].(string)] = params(app)
	}
	for name, comp := range map[string]string{"idp-shop": examples.DistroShop, "idp-widgets": examples.DistroWidgets, "idp-core": examples.DistroCore} {
		p := children[name]
		if p == nil || p["component"] != comp || p["repository"] != distroBundle {
			t.Fatalf("child %s: %v", name, p)
		}
		// Every child renders from the same bundle, as Argo CD would render it.
		res := render(comp, p["version"].(string))
		if len(res.Objects) == 0 {
			t.Fatalf("child %s rendered nothing", name)
		}
		switch comp {
		case examples.DistroCore:
			if k := kindsOf(res.Objects); k["Application"] != 1 {
				t.Fatalf("nested platform: %v", k)
			}
		case examples.DistroShop:
			if !hasHook(res.Objects, "Job", "pre-install,pre-upgrade") {
				t.Fatalf("shop lacks its pre-install migration Job: %v", kindsOf(res.Objects))
			}
		case examples.DistroWidgets:
			if k := kindsOf(res.Objects); k["CustomResourceDefinition"] != 1 || k["Widget"] != 1 {
				t.Fatalf("widgets: %v", k)
			}
		}
	}
}

func hasHook(objs []manifests.Object, kind, hook string) bool {
	for _, o := range objs {
		ann, _ := o["metadata"].(map[string]any)["annotations"].(map[string]any)
		if o["kind"] == kind && ann["helm.sh/hook"] == hook {
			return true
		}
	}
	return false
}

func params(app manifests.Object) map[string]any {
	out := map[string]any{}
	src := app["spec"].(map[string]any)["source"].(map[string]any)
	for _, p := range src["plugin"].(map[string]any)["parameters"].([]any) {
		m := p.(map[string]any)
		for _, k := range []string{"string", "array", "map"} {
			if v, ok := m[k]; ok {
				out[m["name"].(string)] = v
			}
		}
	}
	return out
}
