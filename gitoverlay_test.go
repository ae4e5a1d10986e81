package argocdocm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

var kustomizeTestdata = filepath.Join("testdata", "kustomize")

// gitOverlayApp is an Application directory holding a CTF whose component
// ships testdata/kustomize/features/tree as the directoryTree "manifests",
// and the team's overlay testdata/kustomize/gitoverlay/app.
func gitOverlayApp(t *testing.T) (string, argocdocm.Request) {
	t.Helper()
	files, err := ocmbuild.ReadDir(filepath.Join(kustomizeTestdata, "features", "tree"))
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := ocmbuild.TarFiles(files, true)
	if err != nil {
		t.Fatal(err)
	}
	app := t.TempDir()
	if err := os.CopyFS(app, os.DirFS(filepath.Join(kustomizeTestdata, "gitoverlay", "app"))); err != nil {
		t.Fatal(err)
	}
	c := &ocmbuild.Component{Name: "example.com/test/gitoverlay", Version: "1.0.0", Provider: "example.com", Resources: []ocmbuild.Resource{
		{Name: "manifests", Type: "directoryTree", Data: tgz, MediaType: ocmbuild.MediaTypeTgz},
		{Name: "other", Type: "directoryTree", Data: tgz, MediaType: ocmbuild.MediaTypeTgz},
	}}
	if err := ocmbuild.WriteCTF(filepath.Join(app, "ctf"), c); err != nil {
		t.Fatal(err)
	}
	root, err := argocdocm.OpenRoot(app)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return app, argocdocm.Request{Application: "team", Repository: "ctf", Dir: app, Root: root, Component: c.Name, Version: c.Version, Resources: []string{"manifests"}, Path: "overlays/prod"}
}

// generate builds the Application's kustomization.yaml over the resource it
// names (.ocm/manifests): the kustomize CLI's output of the same layout
// (testdata/kustomize/gitoverlay.golden.yaml). render, unconfined, does not
// read the working directory's kustomization.
func TestApplicationOverlayThroughThePipeline(t *testing.T) {
	_, req := gitOverlayApp(t)
	r := &argocdocm.Renderer{}
	got, err := r.Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	manifeststest.Equal(t, got.Objects, manifeststest.ReadFile(t, filepath.Join(kustomizeTestdata, "gitoverlay.golden.yaml")))

	free := req
	free.Root = nil
	plain, err := r.Render(context.Background(), free)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range plain.Objects {
		if name := o["metadata"].(map[string]any)["name"].(string); strings.HasPrefix(name, "payments-") {
			t.Errorf("unconfined render used the overlay: %s", name)
		}
	}

	// The other resource is rendered as it is; the overlay applies to the one it names.
	other := req
	other.Resources = []string{"manifests", "other"}
	both, err := r.Render(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	if len(both.Objects) != len(got.Objects)+len(plain.Objects) {
		t.Errorf("two resources: %d objects, want %d + %d", len(both.Objects), len(got.Objects), len(plain.Objects))
	}
}

// An overlay that names no resource, or one this render does not have, is
// refused with one line and nothing rendered.
func TestApplicationOverlayNamesWhatIsRendered(t *testing.T) {
	for _, tc := range []struct{ kust, msg string }{
		{"resources: [cm.yaml]\n", "names no resource of the component"},
		{"resources: [.ocm/nope/overlays/prod]\n", `names .ocm/"nope", but this render has the directoryTree resources manifests`},
		{"resources: [.ocm/other]\n", `names .ocm/"other"`},
	} {
		app, req := gitOverlayApp(t)
		if err := os.WriteFile(filepath.Join(app, "kustomization.yaml"), []byte(tc.kust), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := (&argocdocm.Renderer{}).Render(context.Background(), req)
		if res != nil || !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", tc.kust, err, tc.msg)
		}
	}
}
