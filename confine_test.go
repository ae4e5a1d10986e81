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
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// A confined request opens local repositories inside its root, and hands a
// registry to OpenRepository as an explicit spec: a directory of the
// process's working directory that happens to be named like the registry
// (the render server's, another tenant's) is never opened.
func TestConfinedRepositoryNeverReachesTheProcessDisk(t *testing.T) {
	cwd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd, "registry.example.test", "ocm"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	app := t.TempDir()
	root, err := argocdocm.OpenRoot(app)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	var opened []string
	open := func(_ context.Context, spec string) (ocm.Repository, error) {
		opened = append(opened, spec)
		return nil, errdef.ErrNotFound
	}
	req := argocdocm.Request{Repository: "registry.example.test/ocm", Dir: app, Root: root}
	if _, err := argocdocm.NewOpeningRenderer(open).Open(context.Background(), req); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("open: %v", err)
	}
	if len(opened) != 1 {
		t.Fatalf("opened %q", opened)
	}
	sp, err := oci.ParseSpecIn(opened[0], func(string) bool { return true }) // even if everything existed
	if err != nil || sp.Type != oci.TypeOCIRegistry || sp.String() != "registry.example.test/ocm" {
		t.Fatalf("the renderer's open got %q (%+v, %v), want an explicit registry spec", opened[0], sp, err)
	}

	// Local forms never reach open: they are read inside the root.
	opened = nil
	for _, repo := range []string{"ctf", "./ctf", "file://ctf", "ctf::ctf", "{type: CTF, filePath: ctf}", cwd + "/registry.example.test"} {
		req.Repository = repo
		_, err := argocdocm.NewOpeningRenderer(open).Open(context.Background(), req)
		if err == nil || len(opened) != 0 {
			t.Fatalf("%s: %v, opened %q", repo, err, opened)
		}
	}
}

// Confined and unconfined requests render the same from a CTF inside the
// Application's directory.
func TestConfinedRenderMatchesUnconfined(t *testing.T) {
	app := t.TempDir()
	if err := os.CopyFS(filepath.Join(app, "ctf"), os.DirFS(fixtures.Path(t, "ctf"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "values.yaml"), []byte("replicaCount: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := argocdocm.OpenRoot(app)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	base := argocdocm.Request{Repository: "ctf", Dir: app, Component: "example.com/fixtures/podinfo-app", Version: "1.0.0",
		Resources: []string{"chart"}, ValueFiles: []string{"values.yaml"}, ReleaseName: "demo", Namespace: "demo"}
	r := &argocdocm.Renderer{}
	free, err := r.Render(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	confined := base
	confined.Root = root
	got, err := r.Render(context.Background(), confined)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Objects) == 0 || len(got.Objects) != len(free.Objects) || got.DescriptorDigest != free.DescriptorDigest {
		t.Fatalf("confined %d objects, unconfined %d", len(got.Objects), len(free.Objects))
	}
	// And an escaping value file is refused by the confined one only.
	outside := filepath.Join(t.TempDir(), "v.yaml")
	os.WriteFile(outside, []byte("replicaCount: 9\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(app, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	confined.ValueFiles = []string{"link.yaml"}
	if _, err := r.Render(context.Background(), confined); err == nil ||
		!strings.Contains(err.Error(), `value-files "link.yaml": not a file or directory inside the Application's directory`) {
		t.Fatalf("escaping value file: %v", err)
	}
}
