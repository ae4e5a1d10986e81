package helm

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// hostileChart's templates change what they can reach of the chart they
// are rendered from, for tenant A only, after printing it: the metadata's
// slices (sortAlpha sorts a []string in place), the values; tenant A
// enables a subchart (Helm removes disabled subcharts from the chart it
// renders) and an aliased one is disabled; import-values rewrite the
// chart's Values and its dependencies.
func hostileChart(t testing.TB) []byte {
	t.Helper()
	tgz, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml": []byte("apiVersion: v2\nname: top\nversion: 1.0.0\nkeywords: [zeta, alpha, mid]\nmaintainers:\n- name: m\n" +
			"dependencies:\n- name: sub\n  version: 1.0.0\n  condition: sub.enabled\n  tags: [t2, t1]\n  import-values:\n  - child: exported\n    parent: imported\n" +
			"- name: sub\n  alias: other\n  version: 1.0.0\n  condition: other.enabled\n"),
		"values.yaml": []byte("tenant: none\nnested:\n  a: 1\n  list: [3, 1, 2]\nsub:\n  enabled: false\nother:\n  enabled: true\n"),
		"templates/cm.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: top
data:
  chart: {{ toJson .Chart | quote }}
  values: {{ toJson .Values | quote }}
  subcharts: {{ keys .Subcharts | sortAlpha | toJson | quote }}
{{- if eq .Values.tenant "A" }}
  {{- $_ := sortAlpha .Chart.Keywords }}
  {{- $_ := set .Values.nested "written" "by A" }}
  {{- $_ := set .Values "imported" "by A" }}
  {{- range .Chart.Dependencies }}{{ $_ := sortAlpha .Tags }}{{ end }}
{{- end }}
`),
		"charts/sub/Chart.yaml":  []byte("apiVersion: v2\nname: sub\nversion: 1.0.0\nkeywords: [b, a]\n"),
		"charts/sub/values.yaml": []byte("exported:\n  x: 1\nown: sub\n"),
		"charts/sub/templates/cm.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Chart.Name }}-{{ .Values.own }}
data:
  chart: {{ toJson .Chart | quote }}
  values: {{ toJson .Values | quote }}
{{- if eq (.Values.global | default dict).tenant "A" }}
  {{- $_ := sortAlpha .Chart.Keywords }}
  {{- $_ := set .Values "own" "by A" }}
{{- end }}
`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tgz
}

// One Application's render through a ChartCache cannot change another's:
// renders of a hostile chart by two tenants, one after the other and at
// once, give what renders without the cache give.
func TestChartCacheIsolatesRenders(t *testing.T) {
	tgz := hostileChart(t)
	tenants := map[string]map[string]any{
		"A": {"tenant": "A", "global": map[string]any{"tenant": "A"}, "sub": map[string]any{"enabled": true, "exported": map[string]any{"x": 2}},
			"other": map[string]any{"enabled": false}, "nested": map[string]any{"secret": "A only"}},
		"B": {"tenant": "B"},
	}
	want := map[string][]manifests.Object{}
	for name, vals := range tenants {
		objs, err := Render(context.Background(), tgz, Options{Values: manifests.DeepCopy(vals)})
		if err != nil {
			t.Fatal(err)
		}
		want[name] = objs
	}
	if keys(want["A"]) != "/ConfigMap//sub-sub /ConfigMap//top" || keys(want["B"]) != "/ConfigMap//other-sub /ConfigMap//top" || reflect.DeepEqual(want["A"], want["B"]) {
		t.Fatalf("the tenants' renders do not differ: %s and %s", keys(want["A"]), keys(want["B"]))
	}
	cache := NewChartCache(0)
	check := func(name string) error {
		got, err := Render(context.Background(), tgz, Options{Values: manifests.DeepCopy(tenants[name]), Charts: cache})
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want[name]) {
			return fmt.Errorf("tenant %s through the cache:\n%v\nwithout:\n%v", name, got, want[name])
		}
		return nil
	}
	for _, name := range []string{"A", "B", "A", "A", "B", "B", "A"} {
		if err := check(name); err != nil {
			t.Fatal(err)
		}
	}
	if cache.kept.Len() != 1 {
		t.Fatalf("%d charts kept, want 1", cache.kept.Len())
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- check([]string{"A", "B"}[i%2])
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A copy shares nothing a render could change with its chart.
func TestCopyChartIsDeep(t *testing.T) {
	c, err := LoadArchive(hostileChart(t))
	if err != nil {
		t.Fatal(err)
	}
	cp := copyChart(c, nil)
	if !reflect.DeepEqual(cp, c) {
		t.Fatal("the copy differs from the chart")
	}
	cp.Metadata.Keywords[0] = "changed"
	cp.Metadata.Dependencies[0].Tags[0] = "changed"
	cp.Metadata.Dependencies[0].ImportValues[0].(map[string]any)["child"] = "changed"
	cp.Metadata.Dependencies[0].Enabled = true
	cp.Metadata.Maintainers[0].Name = "changed"
	cp.Values["nested"].(map[string]any)["list"].([]any)[0] = "changed"
	cp.Dependencies()[0].Metadata.Keywords[0] = "changed"
	cp.Dependencies()[0].Values["own"] = "changed"
	cp.SetDependencies()
	again, err := LoadArchive(hostileChart(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, again) {
		t.Fatal("changing the copy changed the chart")
	}
	if cp.Dependencies() != nil || len(c.Dependencies()) != 1 || c.Dependencies()[0].Parent() != c {
		t.Fatal("the copy's subcharts are the chart's")
	}
}

// The cache holds at most its bound of unpacked charts, least recently
// used out first; an archive that does not load is not kept, nor one over
// the bound; a chart is checked once, and renders like one not kept.
func TestChartCacheBound(t *testing.T) {
	chartOf := func(i int) []byte {
		tgz, err := ocmbuild.PackageChart(map[string][]byte{
			"Chart.yaml":         fmt.Appendf(nil, "apiVersion: v2\nname: c%d\nversion: 1.0.0\n", i),
			"values.schema.json": []byte(`{"type": "object"}`),
			"templates/cm.yaml":  fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i),
		})
		if err != nil {
			t.Fatal(err)
		}
		return tgz
	}
	_, size, err := loadArchive(chartOf(0))
	if err != nil {
		t.Fatal(err)
	}
	cache := NewChartCache(3 * entryCost(size))
	for _, i := range []int{0, 1, 2, 0, 3} { // 3 evicts 1
		objs, err := Render(context.Background(), chartOf(i), Options{Charts: cache})
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 1 || manifests.Key(objs[0]) != fmt.Sprintf("/ConfigMap//c%d", i) {
			t.Fatalf("chart %d rendered %v", i, objs)
		}
	}
	for i, held := range []bool{true, false, true, true} {
		e, ok := cache.kept.Peek(sha(chartOf(i)))
		if ok != held {
			t.Errorf("chart %d held: %v, want %v", i, ok, held)
		}
		if ok && (e.schemas.Load() == nil || len(*e.schemas.Load()) != 1) {
			t.Errorf("chart %d: schemas not kept compiled", i)
		}
	}
	if cache.kept.Size() > cache.kept.Max() || cache.kept.Len() != 3 {
		t.Fatalf("%d charts, %d bytes (bound %d)", cache.kept.Len(), cache.kept.Size(), cache.kept.Max())
	}
	if _, err := Render(context.Background(), []byte("not a chart"), Options{Charts: cache}); err == nil || !strings.Contains(err.Error(), "loading chart") {
		t.Fatalf("error %v", err)
	}
	small := NewChartCache(size - 1)
	if _, err := Render(context.Background(), chartOf(0), Options{Charts: small}); err != nil {
		t.Fatal(err)
	}
	if cache.kept.Len() != 3 || small.kept.Len() != 0 {
		t.Fatalf("kept what does not load or is over the bound: %d, %d", cache.kept.Len(), small.kept.Len())
	}
}

func keys(objs []manifests.Object) string {
	var k []string
	for _, o := range objs {
		k = append(k, manifests.Key(o))
	}
	return strings.Join(k, " ")
}

// One tenant's many tiny charts and CRDs fill a cache only to its bound at
// minEntryCost each, not to hundreds of thousands of entries whose heap is
// many times the bytes they were counted at.
func TestCachesCountEntriesAtLeastMinEntryCost(t *testing.T) {
	charts := NewChartCache(64 * minEntryCost)
	crds := NewCRDCache(16 * minEntryCost)
	for i := range 200 {
		tgz, err := ocmbuild.PackageChart(map[string][]byte{
			"Chart.yaml":    fmt.Appendf(nil, "apiVersion: v2\nname: c%d\nversion: 1.0.0\n", i),
			"crds/crd.yaml": fmt.Appendf(nil, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: k%d.example.com\n", i),
		})
		if err != nil {
			t.Fatal(err)
		}
		objs, err := Render(context.Background(), tgz, Options{Charts: charts, CRDs: crds})
		if err != nil || len(objs) != 1 {
			t.Fatalf("chart %d: %d objects, %v", i, len(objs), err)
		}
	}
	if charts.kept.Len() != 64 || charts.kept.Size() > charts.kept.Max() {
		t.Errorf("chart cache: %d entries, %d bytes counted (bound %d), want 64", charts.kept.Len(), charts.kept.Size(), charts.kept.Max())
	}
	if crds.kept.Len() != 16 || crds.kept.Size() > crds.kept.Max() {
		t.Errorf("CRD cache: %d entries, %d bytes counted (bound %d), want 16", crds.kept.Len(), crds.kept.Size(), crds.kept.Max())
	}
}
