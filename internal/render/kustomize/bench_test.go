package kustomize

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// BenchmarkRender renders the rich overlay the way the plugin does: from an
// archive held in memory, pre-scan, in-memory kustomize build, decode.
func BenchmarkRender(b *testing.B) {
	data := tarDir(b, richDir)
	b.Run("tree", func(b *testing.B) {
		tree := readTree(b, data)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Render(context.Background(), tree, "overlays/prod"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tar", func(b *testing.B) { // archive.ReadTree included
		b.ReportAllocs()
		for b.Loop() {
			tree, err := archive.ReadTree(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Render(context.Background(), tree, "overlays/prod"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPlainKrustyOnDisk is the reference: plain krusty (what
// `kustomize build` runs, minus process start) over an on-disk copy of the
// same tree, producing YAML text.
func BenchmarkPlainKrustyOnDisk(b *testing.B) {
	dir := b.TempDir()
	if err := readTree(b, tarDir(b, richDir)).WriteTo(dir); err != nil {
		b.Fatal(err)
	}
	entry := filepath.Join(dir, "overlays", "prod")
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // as kustomize build
	b.ReportAllocs()
	for b.Loop() {
		m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), entry)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.AsYaml(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderViaTempDir is the design not taken: write the tree to a
// temporary directory each time and build from disk.
func BenchmarkRenderViaTempDir(b *testing.B) {
	tree := readTree(b, tarDir(b, richDir))
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.Reorder = krusty.ReorderOptionLegacy
	b.ReportAllocs()
	for b.Loop() {
		dir := b.TempDir()
		if err := tree.WriteTo(dir); err != nil {
			b.Fatal(err)
		}
		m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(dir, "overlays", "prod"))
		if err != nil {
			b.Fatal(err)
		}
		out, err := m.AsYaml()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := manifests.Decode("out", out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRealWorldKrustyOnDisk is BenchmarkRenderRealWorld's reference:
// plain krusty, as `kustomize build` runs it, over an on-disk copy.
func BenchmarkRealWorldKrustyOnDisk(b *testing.B) {
	for _, tc := range realWorldCases {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			if err := realWorldTree(b, tc.archive).WriteTo(dir); err != nil {
				b.Fatal(err)
			}
			opts := krusty.MakeDefaultOptions()
			opts.Reorder = krusty.ReorderOptionLegacy
			b.ReportAllocs()
			for b.Loop() {
				m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(dir, filepath.FromSlash(tc.entry)))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := m.AsYaml(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// largeServices is the size of the bench harness's large synthetic tree
// (its default -kustomize-apps 30: 90 services).
const largeServices = 90

func largeTree(b *testing.B) *archive.Tree {
	b.Helper()
	tgz, err := ocmbuild.TarFiles(examples.LargeKustomizeTree(largeServices), true)
	if err != nil {
		b.Fatal(err)
	}
	tree, err := archive.ReadTree(bytes.NewReader(tgz))
	if err != nil {
		b.Fatal(err)
	}
	return tree
}

// BenchmarkRenderLarge renders the bench harness's large synthetic tree
// (examples.LargeKustomizeTree) as the plugin does; compare with
// BenchmarkLargeKrustyOnDisk, `kustomize build` minus process start.
func BenchmarkRenderLarge(b *testing.B) {
	tree := largeTree(b)
	b.ReportAllocs()
	start := cpuNanos()
	for b.Loop() {
		if _, err := Render(context.Background(), tree, "overlays/prod"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkLargeKrustyOnDisk is BenchmarkRenderLarge's reference: plain
// krusty over an on-disk copy of the tree, producing YAML text.
func BenchmarkLargeKrustyOnDisk(b *testing.B) {
	dir := b.TempDir()
	if err := largeTree(b).WriteTo(dir); err != nil {
		b.Fatal(err)
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	b.ReportAllocs()
	start := cpuNanos()
	for b.Loop() {
		m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(dir, "overlays", "prod"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.AsYaml(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op")
}
