package helm

import (
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// What renders of a cached chart share (the files' bytes, the Lock, the
// schema's bytes, the templates) stays as it was loaded whatever a
// template does with what it reaches of them (.Files.GetBytes and Glob
// give the shared bytes; sortAlpha sorts a []string in place; set writes
// into maps) or with the values, and whether the render fails: after
// tenants' renders the cached chart equals a fresh load of the archive,
// and each tenant's render is what it is without the cache.
func TestChartCacheSharedPartsUnchanged(t *testing.T) {
	tgz, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml":         []byte("apiVersion: v2\nname: shared\nversion: 1.0.0\nannotations:\n  a: b\ndependencies:\n- name: sub\n  version: 1.0.0\n"),
		"Chart.lock":         []byte("dependencies:\n- name: sub\n  version: 1.0.0\n  repository: \"\"\ndigest: sha256:0\ngenerated: \"2024-01-01T00:00:00Z\"\n"),
		"values.yaml":        []byte("tenant: none\nlist: [b, a]\n"),
		"values.schema.json": []byte(`{"type": "object", "properties": {"tenant": {"type": "string"}}}`),
		"files/data.txt":     []byte("zeta\nalpha\nmid\n"),
		"files/more.txt":     []byte("second file\n"),
		"templates/cm.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: shared-{{ .Values.tenant }}
data:
  data: {{ .Files.Get "files/data.txt" | quote }}
  sum: {{ .Files.GetBytes "files/data.txt" | toString | sha256sum }}
  glob: "{{ range $k, $v := .Files.Glob "files/*" }}{{ $k }} {{ end }}"
  caps: {{ .Capabilities.APIVersions | len | quote }}
  schema: {{ .Chart.Annotations | toJson | quote }}
{{- if ne .Values.tenant "B" }}
  {{- $b := .Files.GetBytes "files/data.txt" }}
  {{- $_ := sortAlpha $b }}
  {{- $_ := sortAlpha (.Files.Lines "files/data.txt") }}
  {{- range $k, $v := .Files.Glob "files/*" }}{{ $_ := sortAlpha $v }}{{ end }}
  {{- $_ := set .Values "bytes" $b }}
  {{- $_ := set .Subcharts "sub" dict }}
  {{- $_ := sortAlpha .Capabilities.APIVersions }}
  {{- $_ := set .Values "list" (.Values.list | sortAlpha) }}
{{- end }}
{{- if eq .Values.tenant "C" }}
  {{- $_ := set .Chart.Annotations "a" "by C" }}
{{- end }}
`),
		"templates/_helpers.tpl":       []byte(`{{- define "x" }}{{ .Files.Get "files/more.txt" }}{{ end }}`),
		"charts/sub/Chart.yaml":        []byte("apiVersion: v2\nname: sub\nversion: 1.0.0\n"),
		"charts/sub/files/sub.txt":     []byte("sub file\n"),
		"charts/sub/templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\ndata:\n  f: {{ .Files.Get \"files/sub.txt\" | quote }}\n{{- $_ := sortAlpha (.Files.GetBytes \"files/sub.txt\") }}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]manifests.Object{}
	for _, tenant := range []string{"A", "B"} {
		objs, err := Render(context.Background(), tgz, Options{Values: map[string]any{"tenant": tenant}})
		if err != nil {
			t.Fatal(err)
		}
		want[tenant] = objs
	}
	if _, err := Render(context.Background(), tgz, Options{Values: map[string]any{"tenant": "C"}}); err == nil {
		t.Fatal("a template wrote into .Chart.Annotations (a map[string]string)")
	}
	cache := NewChartCache(0)
	for _, tenant := range []string{"A", "C", "B", "A", "C", "B"} {
		got, err := Render(context.Background(), tgz, Options{Values: map[string]any{"tenant": tenant}, Charts: cache})
		if tenant == "C" {
			if err == nil {
				t.Fatal("tenant C's render through the cache did not fail")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want[tenant]) {
			t.Fatalf("tenant %s through the cache:\n%v\nwithout:\n%v", tenant, got, want[tenant])
		}
	}
	fresh, err := LoadArchive(tgz)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := cache.kept.Peek(sha256.Sum256(tgz))
	if e == nil {
		t.Fatal("the chart is not kept")
	}
	if e.chart.Lock == nil || len(e.chart.Schema) == 0 || len(e.chart.Files) < 2 {
		t.Fatalf("the chart lacks the parts under test: lock %v, schema %q, %d files", e.chart.Lock, e.chart.Schema, len(e.chart.Files))
	}
	if !reflect.DeepEqual(e.chart, fresh) {
		t.Fatal("renders changed the cached chart")
	}
	for _, o := range want["A"] {
		if o["metadata"].(map[string]any)["name"] == "shared-A" {
			if data, _ := o["data"].(map[string]any)["data"].(string); !strings.HasPrefix(data, "zeta\n") {
				t.Fatalf("the file's lines were sorted: %q", data)
			}
		}
	}
}

// Each render's API versions are its own: a render's Options.APIVersions
// never reach the spare capacity of Helm's default set (Capabilities.Copy
// shares its slice), where every other render's set would see them.
func TestRenderAPIVersionsNotShared(t *testing.T) {
	orig := common.DefaultCapabilities.APIVersions
	defer func() { common.DefaultCapabilities.APIVersions = orig }()
	spare := slices.Grow(slices.Clone(orig), 4)
	common.DefaultCapabilities.APIVersions = spare
	tgz, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: caps\nversion: 1.0.0\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n  a: {{ .Capabilities.APIVersions.Has \"a.example.com/v1\" | quote }}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	has := func(versions []string) any {
		objs, err := Render(context.Background(), tgz, Options{APIVersions: versions})
		if err != nil {
			t.Fatal(err)
		}
		return objs[0]["data"].(map[string]any)["a"]
	}
	if got := has([]string{"a.example.com/v1"}); got != "true" {
		t.Fatalf("the render's own API version: %v", got)
	}
	if tail := spare[len(spare):cap(spare)]; slices.Contains(tail, "a.example.com/v1") {
		t.Fatalf("a render wrote its API versions into the default set's spare capacity: %q", tail)
	}
	if got := has(nil); got != "false" {
		t.Fatalf("another render's API version: %v", got)
	}
}

// A ChartCache counts the parsed templates it keeps within its bound: after
// a render the chart is kept with its templates parsed, counted beside its
// unpacked size; a cache too small for both keeps the chart only as long
// as it fits, never more than its bound.
func TestChartCacheCountsParsedTemplates(t *testing.T) {
	files := map[string][]byte{
		"Chart.yaml":  []byte("apiVersion: v2\nname: counted\nversion: 1.0.0\n"),
		"values.yaml": []byte("n: 3\n"),
	}
	for i := range 20 {
		files[fmt.Sprintf("templates/cm%d.yaml", i)] = []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%d\ndata:\n{{- range $i := until (int .Values.n) }}\n  k{{ $i }}: {{ $i | quote }}\n{{- end }}\n", i))
	}
	tgz, err := ocmbuild.PackageChart(files)
	if err != nil {
		t.Fatal(err)
	}
	unpacked := int64(0)
	for _, b := range files {
		unpacked += int64(len(b))
	}
	cc := NewChartCache(1 << 30)
	want, err := Render(context.Background(), tgz, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		got, err := Render(context.Background(), tgz, Options{Charts: cc})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("render %d from the cache differs from one without it", i)
		}
	}
	if n := cc.KeptTemplates(tgz); n != 20 {
		t.Fatalf("%d template files kept parsed, want 20", n)
	}
	full := cc.CacheSize()
	if full < unpacked+20*1024 {
		t.Fatalf("the cache counts the chart and its parsed templates at %d bytes: the parse trees are not counted (unpacked %d)", full, unpacked)
	}

	small := NewChartCache(full - 1)
	for range 2 {
		if _, err := Render(context.Background(), tgz, Options{Charts: small}); err != nil {
			t.Fatal(err)
		}
		if s := small.CacheSize(); s > full-1 {
			t.Fatalf("a cache bounded at %d bytes counts %d", full-1, s)
		}
	}
}

// boundCharts are two archives of the same size: "grow" has a subchart
// (sub.enabled) whose templates a render parses only when it is enabled,
// "other" is the chart another tenant renders.
func boundCharts(t *testing.T) (grow, other []byte) {
	t.Helper()
	tpl := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s%d\ndata:\n{{- range $i := until 3 }}\n  k{{ $i }}: {{ $i | quote }}{{ include \"h\" $ }}\n{{- end }}\n"
	mk := func(name string) []byte {
		files := map[string][]byte{
			"Chart.yaml":                  []byte("apiVersion: v2\nname: " + name + "\nversion: 1.0.0\ndependencies:\n- name: sub\n  version: 1.0.0\n  condition: sub.enabled\n"),
			"values.yaml":                 []byte("sub:\n  enabled: false\n"),
			"templates/_h.tpl":            []byte(`{{ define "h" }}{{ end }}`),
			"charts/sub/Chart.yaml":       []byte("apiVersion: v2\nname: sub\nversion: 1.0.0\n"),
			"charts/sub/templates/_h.tpl": []byte(`{{ define "h" }}{{ end }}`),
		}
		for i := range 10 {
			files[fmt.Sprintf("templates/cm%d.yaml", i)] = fmt.Appendf(nil, tpl, "top", i)
			files[fmt.Sprintf("charts/sub/templates/cm%d.yaml", i)] = fmt.Appendf(nil, tpl, "sub", i)
		}
		tgz, err := ocmbuild.PackageChart(files)
		if err != nil {
			t.Fatal(err)
		}
		return tgz
	}
	return mk("grow"), mk("other")
}

// A ChartCache counts every entry at what it holds when renders end, in
// whatever order they end: a render whose entry was dropped while it ran
// (another tenant's chart pushed it out) and loaded again by a later render
// must not count the new entry at its own, older, size. Before, it did:
// the entry kept holding the parse trees of the subchart while the cache
// counted it without them, for as long as no render parsed anything new
// — a tenant could so keep several bounds' worth of parse trees.
func TestChartCacheCountsReloadedEntry(t *testing.T) {
	grow, other := boundCharts(t)
	ctx := context.Background()
	withSub := Options{Values: map[string]any{"sub": map[string]any{"enabled": true}}}

	// How much the chart of grow holds with all its templates parsed.
	probe := NewChartCache(1 << 30)
	if _, err := Render(ctx, grow, withSub); err != nil {
		t.Fatal(err)
	}
	if _, err := Render(ctx, grow, Options{Charts: probe, Values: withSub.Values}); err != nil {
		t.Fatal(err)
	}
	full := probe.CacheSize()

	// Room for one chart with its templates, and not even an empty entry
	// (minEntryCost) beside it.
	bound := full + 1024
	cc := NewChartCache(bound)
	// A render of grow without its subchart, still running...
	c, running, err := cc.load(grow)
	if err != nil || running == nil {
		t.Fatalf("grow not kept: %v", err)
	}
	if _, err := renderChart(ctx, c, Options{Charts: cc}, running); err != nil {
		t.Fatal(err)
	}
	// ...while another tenant's renders push grow's entry out,
	for range 2 {
		if _, err := Render(ctx, other, Options{Charts: cc, Values: withSub.Values}); err != nil {
			t.Fatal(err)
		}
	}
	if cc.KeptTemplates(grow) != -1 {
		t.Fatal("grow's entry was not dropped: the test does not reach what it is for")
	}
	// and a render of grow with its subchart loads it again and ends.
	if _, err := Render(ctx, grow, Options{Charts: cc, Values: withSub.Values}); err != nil {
		t.Fatal(err)
	}
	// The first render ends last.
	cc.account(running)
	if counted, held := cc.CacheSize(), cc.HeldSize(); counted != held || counted > bound {
		t.Fatalf("the cache counts %d bytes, its entries hold %d (bound %d)", counted, held, bound)
	}
}

// Concurrent renders of charts that grow by different amounts (subcharts
// on and off), in a cache with room for about one of them: when all have
// ended, the cache counts exactly what its entries hold, within its bound.
func TestChartCacheCountsConcurrentRenders(t *testing.T) {
	grow, other := boundCharts(t)
	probe := NewChartCache(1 << 30)
	sub := map[string]any{"sub": map[string]any{"enabled": true}}
	if _, err := Render(context.Background(), grow, Options{Charts: probe, Values: sub}); err != nil {
		t.Fatal(err)
	}
	bound := probe.CacheSize() * 3 / 2
	for round := range 20 {
		cc := NewChartCache(bound)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Go(func() {
				archive, vals := grow, map[string]any(nil)
				if i%3 == 0 {
					archive = other
				}
				if i%2 == 0 {
					vals = map[string]any{"sub": map[string]any{"enabled": true}}
				}
				if _, err := Render(context.Background(), archive, Options{Charts: cc, Values: vals}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if counted, held := cc.CacheSize(), cc.HeldSize(); counted != held || counted > bound {
			t.Fatalf("round %d: the cache counts %d bytes, its entries hold %d (bound %d)", round, counted, held, bound)
		}
	}
}
