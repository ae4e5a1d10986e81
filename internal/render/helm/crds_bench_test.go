package helm

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// largeCRDChart is the bench harness's crds-10mb chart: n CRDs of size
// bytes each in crds/ and a ConfigMap.
func largeCRDChart(tb testing.TB, n, size int) []byte {
	tb.Helper()
	f := map[string][]byte{
		"Chart.yaml":               []byte("apiVersion: v2\nname: crds\nversion: 1.0.0\n"),
		"templates/configmap.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-crds\ndata:\n  crds: \"" + fmt.Sprint(n) + "\"\n"),
	}
	desc := "description: " + strings.Repeat("This field of the synthetic operator's resource is documented at length, as generated CRDs are. ", 2)
	for i := 0; i < n; i++ {
		var sb strings.Builder
		fmt.Fprintf(&sb, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: kind%02[1]ds.crds.example.com\nspec:\n  group: crds.example.com\n"+
			"  names: {kind: Kind%02[1]d, listKind: Kind%02[1]dList, plural: kind%02[1]ds, singular: kind%02[1]d}\n  scope: Namespaced\n  versions:\n"+
			"    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n            spec:\n              type: object\n              properties:\n", i)
		for j := 0; sb.Len() < size; j++ {
			fmt.Fprintf(&sb, "                field%04d:\n                  type: object\n                  %s\n                  properties:\n", j, desc)
			for k := 0; k < 4; k++ {
				fmt.Fprintf(&sb, "                    leaf%d:\n                      type: string\n                      %s\n", k, desc)
			}
		}
		f[fmt.Sprintf("crds/kind%02d.yaml", i)] = []byte(sb.String())
	}
	tgz, err := ocmbuild.PackageChart(f)
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
