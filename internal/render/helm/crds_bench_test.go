package helm

import (
	"context"
	"io"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// largeCRDChart is the bench harness's crds-10mb chart: n CRDs of size
// bytes each in crds/ and a ConfigMap.
func largeCRDChart(tb testing.TB, n, size int) []byte {
	tb.Helper()
	tgz, err := ocmbuild.PackageChart(examples.CRDChartFiles(n, size))
	if err != nil {
		tb.Fatal(err)
	}
	return tgz
}

// BenchmarkRenderLargeCRDsServer renders the bench harness's crds-10mb
// chart (20 CRDs of 0.5 MB) as the render server does: shared caches,
// JSON out.
func BenchmarkRenderLargeCRDsServer(b *testing.B) {
	chart := largeCRDChart(b, 20, 512<<10)
	opts := Options{CRDs: NewCRDCache(0), Charts: NewChartCache(0)}
	for b.Loop() {
		objs, err := Render(context.Background(), chart, opts)
		if err != nil {
			b.Fatal(err)
		}
		if err := manifests.EncodeJSON(io.Discard, objs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(chart)), "archive-bytes")
}

// BenchmarkCloneCRDObjects copies the objects of the crds-10mb chart's
// CRDs, as every render of it gets them from the CRDCache.
func BenchmarkCloneCRDObjects(b *testing.B) {
	c, err := LoadArchive(largeCRDChart(b, 20, 512<<10))
	if err != nil {
		b.Fatal(err)
	}
	var objs []manifests.Object
	for _, crd := range c.CRDObjects() {
		o, err := manifests.Decode("x", crdText(crd.Filename, crd.File.Data))
		if err != nil {
			b.Fatal(err)
		}
		objs = append(objs, o...)
	}
	for b.Loop() {
		cloneObjects(objs)
	}
}

// BenchmarkRenderLargeCRDsProcess renders the crds-10mb chart as one
// `argocd-ocm-plugin render` process does: no caches, YAML out.
func BenchmarkRenderLargeCRDsProcess(b *testing.B) {
	chart := largeCRDChart(b, 20, 512<<10)
	for b.Loop() {
		objs, err := Render(context.Background(), chart, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := manifests.Encode(io.Discard, objs); err != nil {
			b.Fatal(err)
		}
	}
}
