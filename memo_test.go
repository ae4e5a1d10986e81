package argocdocm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// Two tenants commit a CTF tgz (and a CTF directory) of the same name,
// component and version, whose charts differ by one byte (archives of the
// same size and modification time), and render through one Engine shared as the render
// server shares it (its Unpacker, descriptor, chart and CRD caches, the blob cache):
// every generation renders its own Application's chart, however often and
// in whichever order. (Identities that collide are simulated in package
// ctf, TestUnpackMemoIsPerApplicationFile; this holds the pipeline to the
// same with real files.)
func TestEngineArchivesStayWithTheirApplication(t *testing.T) {
	base := t.TempDir()
	e := argocdocm.NewEngine(argocdocm.WithSharing(0), argocdocm.WithBlobCacheDir(filepath.Join(base, "cache")))
	mtime := time.Unix(1_700_000_000, 0)
	type app struct {
		dir, want string
		root      *argocdocm.Root
	}
	var apps []*app
	var size int64
	for _, v := range []string{"A", "B"} {
		chart, err := ocmbuild.PackageChart(map[string][]byte{
			"Chart.yaml":          []byte("apiVersion: v2\nname: tenant\nversion: 1.0.0\n"),
			"templates/data.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: data\ndata:\n  tenant: " + v + "\n"),
		})
		if err != nil {
			t.Fatal(err)
		}
		c := &ocmbuild.Component{Name: "example.com/tenant/app", Version: "1.0.0", Resources: []ocmbuild.Resource{
			{Name: "chart", Type: "helmChart", MediaType: ocmbuild.MediaTypeHelmChart, Data: chart}}}
		dir := filepath.Join(base, "app-"+v)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Gzipped without compression: the two archives have one size.
		tgz, err := ocmbuild.StoredCTFTgz(c)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "ctf.tgz")
		if err := os.WriteFile(p, tgz, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(p); err != nil || (len(apps) > 0 && fi.Size() != size) {
			t.Fatalf("archive sizes differ (%v, %v): the test needs two of one size", size, err)
		} else {
			size = fi.Size()
		}
		// And as a directory: its descriptors are kept by the engine as
		// well (by the verified digest of their layer).
		if err := ocmbuild.WriteCTF(filepath.Join(dir, "ctf"), c); err != nil {
			t.Fatal(err)
		}
		root, err := argocdocm.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { root.Close() })
		apps = append(apps, &app{dir: dir, want: v, root: root})
	}
	A, B := apps[0], apps[1]
	for i, g := range []struct {
		a    *app
		repo string
	}{{A, "ctf.tgz"}, {B, "ctf.tgz"}, {A, "ctf.tgz"}, {B, "ctf.tgz"}, {B, "ctf.tgz"}, {A, "ctf.tgz"},
		{A, "ctf"}, {B, "ctf"}, {B, "ctf"}, {A, "ctf"}, {A, "ctf.tgz"}, {B, "ctf"}} {
		a, repo := g.a, g.repo
		r, err := e.Renderer(argocdocm.Generation{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Render(context.Background(), argocdocm.Request{Repository: repo, Dir: a.dir, Root: a.root,
			Component: "example.com/tenant/app", Version: "1.0.0", ReleaseName: "x", Namespace: "x"})
		if err != nil {
			t.Fatalf("generation %d of tenant %s: %v", i, a.want, err)
		}
		if len(res.Objects) != 1 {
			t.Fatalf("generation %d of tenant %s: %d objects", i, a.want, len(res.Objects))
		}
		data, _ := res.Objects[0]["data"].(map[string]any)
		if got := data["tenant"]; got != a.want {
			t.Fatalf("generation %d of tenant %s (%s) rendered tenant %v's chart", i, a.want, repo, got)
		}
	}
}
