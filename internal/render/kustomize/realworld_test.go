package kustomize

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
)

// realWorldDir holds third-party trees (see testdata/realworld's
// README.md): the team's full set beside the repository when it is there,
// else the subset in the repository's testdata/realworld.
var realWorldDir = func() string {
	const shared, inRepo = "../../../../shared/fixtures/realworld", realWorldGoldens
	if _, err := os.Stat(shared); err == nil {
		return shared
	}
	return inRepo
}()

// realWorldGoldens holds the outputs of the reference kustomize CLI
// (v5.8.3, Argo CD 3.6's) for every tree of the full set.
const realWorldGoldens = "../../../testdata/realworld"

// realWorldCases are the kz-* cases of commands.txt: the tree, the entry path
// inside it (the archives hold the tree under a top directory) and the golden.
var realWorldCases = []struct {
	name, archive, entry string
}{
	{"kz-argocd-cluster-install", "argocd-manifests.tgz", "argocd-manifests/cluster-install"},
	{"kz-argocd-namespace-install", "argocd-manifests.tgz", "argocd-manifests/namespace-install"},
	{"kz-podinfo-kustomize", "podinfo-kustomize.tgz", "podinfo-kustomize"},
}

// realWorldTree reads a tree of realWorldDir through the archive reader with
// its default limits, as the plugin does, or skips loudly when the shared
// fixtures are absent.
func realWorldTree(tb testing.TB, name string) *archive.Tree {
	tb.Helper()
	if _, err := os.Stat(realWorldDir); err != nil {
		tb.Skipf("SKIP: real-world kustomize trees not found at %s (the team's shared fixtures beside the repository): %v", realWorldDir, err)
	}
	f, err := os.Open(filepath.Join(realWorldDir, "kustomize", name))
	if os.IsNotExist(err) {
		tb.Skipf("SKIP: %s is not in the repository's subset of the real-world fixtures (the full set is ../shared/fixtures/realworld)", name)
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	tree, err := archive.ReadTree(f)
	if err != nil {
		tb.Fatalf("ReadTree %s: %v", name, err)
	}
	return tree
}

// Unmodified upstream trees render as `kustomize build` renders them,
// compared as sets of objects.
func TestRenderRealWorldTrees(t *testing.T) {
	for _, tc := range realWorldCases {
		t.Run(tc.name, func(t *testing.T) {
			tree := realWorldTree(t, tc.archive)
			want := manifeststest.ReadGolden(t, filepath.Join(realWorldGoldens, "golden"), tc.name)
			if len(want) < 3 {
				t.Fatalf("golden %s has %d objects", tc.name, len(want))
			}
			got, err := Render(context.Background(), tree, tc.entry)
			if err != nil {
				t.Fatal(err)
			}
			manifeststest.Equal(t, got, want)
		})
	}
}

// BenchmarkRenderRealWorld is the warm render of each real-world tree (tree
// already extracted, as in the render server's cache).
func BenchmarkRenderRealWorld(b *testing.B) {
	for _, tc := range realWorldCases {
		b.Run(tc.name, func(b *testing.B) {
			tree := realWorldTree(b, tc.archive)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Render(context.Background(), tree, tc.entry); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// resourceJSON gives what Resource.MarshalJSON gives (the JSON behind
// `kustomize build`'s YAML) for every object of the real-world trees and
// of the hostile and overlay fixtures.
func TestResourceJSONMatchesMarshalJSON(t *testing.T) {
	dirs := map[string]string{}
	for _, tc := range realWorldCases {
		dir := t.TempDir()
		if err := realWorldTree(t, tc.archive).WriteTo(dir); err != nil {
			t.Fatal(err)
		}
		dirs[tc.name] = filepath.Join(dir, filepath.FromSlash(tc.entry))
	}
	dirs["rich"] = filepath.Join(richDir, "overlays", "prod")
	dirs["features"] = filepath.Join(testdataDir, "features", "handwritten")
	dirs["hostile"] = filepath.Join(testdataDir, "hostile-names", "overlays", "release-ha-1.21+")
	n := 0
	for name, dir := range dirs {
		m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, r := range m.Resources() {
			want, err := r.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			got, err := resourceJSON(r)
			if err != nil {
				t.Fatal(err)
			}
			var w, g any
			if json.Unmarshal(want, &w) != nil || json.Unmarshal(got, &g) != nil || !reflect.DeepEqual(w, g) {
				t.Errorf("%s: %s:\n got %s\nwant %s", name, r.CurId(), got, want)
			}
			n++
		}
	}
	if n < 100 {
		t.Fatalf("compared %d objects", n)
	}
}
