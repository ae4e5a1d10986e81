package access_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// chartSet writes a component whose one resource is chartTgz as the OCM
// CLI stores a chart (an OCI artifact set in a local blob) to a CTF of its
// own, and returns the component version and the resource.
func chartSet(tb testing.TB, chartTgz []byte) (ocm.ComponentVersion, *ocm.Resource) {
	tb.Helper()
	set, err := ocmbuild.ChartArtifactSet(chartTgz, "1.0.0", false)
	if err != nil {
		tb.Fatal(err)
	}
	comp := &ocmbuild.Component{Name: "example.com/app", Version: "1.0.0", Provider: "example.com",
		Resources: []ocmbuild.Resource{{Name: "chart", Type: "helmChart", Data: set, MediaType: ocmbuild.MediaTypeArtifactSet}}}
	dir := tb.TempDir()
	if err := ocmbuild.WriteCTF(dir, comp); err != nil {
		tb.Fatal(err)
	}
	repo, err := ctf.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { repo.Close() })
	cv, err := repo.LookupComponentVersion(context.Background(), comp.Name, comp.Version)
	if err != nil {
		tb.Fatal(err)
	}
	return cv, &cv.Descriptor().Resources[0]
}

func chartTgz(tb testing.TB, name, text string) []byte {
	tb.Helper()
	tgz, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n"),
		"templates/cm.yaml": []byte(text),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return tgz
}

func readChart(tb testing.TB, r *access.Resolver, cv ocm.ComponentVersion, res *ocm.Resource) []byte {
	tb.Helper()
	c, err := r.Read(context.Background(), cv, res)
	if err != nil {
		tb.Fatal(err)
	}
	data, err := access.ChartArchive(c)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// What an ArtifactSets keeps is found only by the content of the set: two
// tenants' components with the same names (component, version, resource)
// and different charts each get their own chart, however often and in
// whatever order they are read; what a generation does with the chart it
// got (it is its own copy) never reaches what the next one gets.
func TestArtifactSetsKeptByContent(t *testing.T) {
	sets := access.NewArtifactSets(0)
	r := &access.Resolver{Sets: sets}
	tgzA, tgzB := chartTgz(t, "app", "a: tenant-a\n"), chartTgz(t, "app", "b: tenant-b\n")
	cvA, resA := chartSet(t, tgzA)
	cvB, resB := chartSet(t, tgzB)
	for i, step := range []struct {
		cv   ocm.ComponentVersion
		res  *ocm.Resource
		want []byte
		kept int
	}{{cvA, resA, tgzA, 1}, {cvA, resA, tgzA, 1}, {cvB, resB, tgzB, 2}, {cvA, resA, tgzA, 2}, {cvB, resB, tgzB, 2}} {
		got := readChart(t, r, step.cv, step.res)
		if !bytes.Equal(got, step.want) {
			t.Fatalf("read %d: another chart than the set's", i)
		}
		clear(got) // a render's own copy
		if n := sets.Len(); n != step.kept {
			t.Fatalf("read %d: %d sets kept, want %d", i, n, step.kept)
		}
	}
	if got := readChart(t, &access.Resolver{}, cvA, resA); !bytes.Equal(got, tgzA) {
		t.Fatal("without ArtifactSets: another chart than the set's")
	}
}

// An ArtifactSets keeps at most its bound of chart layers: the least
// recently used go first, a layer larger than the bound is never kept, and
// what is not kept is read from the set again.
func TestArtifactSetsBound(t *testing.T) {
	noise := make([]byte, 8<<10)
	rand.NewChaCha8([32]byte{1}).Read(noise)
	big := chartTgz(t, "big", "# "+hex.EncodeToString(noise)+"\n")
	tgzA, tgzB := chartTgz(t, "a", "a: 1\n"), chartTgz(t, "b", "b: 1\n")
	cvA, resA := chartSet(t, tgzA)
	cvB, resB := chartSet(t, tgzB)
	// Room for one small layer (each is counted at least 1 KiB), not two.
	sets := access.NewArtifactSets(1<<10 + 512)
	r := &access.Resolver{Sets: sets}
	readChart(t, r, cvA, resA)
	readChart(t, r, cvB, resB)
	if n := sets.Len(); n != 1 {
		t.Fatalf("%d sets kept in room for one", n)
	}
	if got := readChart(t, r, cvA, resA); !bytes.Equal(got, tgzA) {
		t.Fatal("a set read again after it was dropped: another chart")
	}
	tiny := access.NewArtifactSets(len64(big) - 1)
	cvBig, resBig := chartSet(t, big)
	if got := readChart(t, &access.Resolver{Sets: tiny}, cvBig, resBig); !bytes.Equal(got, big) || tiny.Len() != 0 {
		t.Fatalf("a layer over the bound: kept %d", tiny.Len())
	}
}

func len64(b []byte) int64 { return int64(len(b)) }

// BenchmarkChartArchive reads a real chart stored as an artifact set and
// takes the chart out of it, as every generation of a chart component
// does: without ArtifactSets (a process) and with them (a render-server
// worker, where the same component is rendered again).
func BenchmarkChartArchive(b *testing.B) {
	for _, name := range []string{"redis-23.1.1.tgz", "ingress-nginx-4.15.1.tgz"} {
		tgz, err := os.ReadFile("../../../testdata/realworld/charts/" + name)
		if err != nil {
			b.Fatal(err)
		}
		cv, res := chartSet(b, tgz)
		for _, mode := range []struct {
			name string
			r    *access.Resolver
		}{{"unpacked", &access.Resolver{}}, {"kept", &access.Resolver{Sets: access.NewArtifactSets(0)}}} {
			b.Run(name+"/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					readChart(b, mode.r, cv, res)
				}
			})
		}
	}
}
