package engine_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	helmengine "helm.sh/helm/v4/pkg/engine"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm/engine"
)

// realCharts are the real-world charts of the repository (testdata/realworld)
// and, when it is beside the repository, the team's full set.
func realCharts(t *testing.T) []string {
	var out []string
	for _, dir := range []string{"../../../../testdata/realworld/charts", "../../../../../shared/fixtures/realworld/charts"} {
		m, _ := filepath.Glob(filepath.Join(dir, "*.tgz"))
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatal("no real-world charts in testdata/realworld/charts")
	}
	return out
}

// renderValues prepares vals for c as the plugin's render does (helm
// template's install action): dependencies processed, then the values
// Helm's engine renders with.
func renderValues(t *testing.T, c *chart.Chart, vals map[string]any) common.Values {
	t.Helper()
	if vals == nil {
		vals = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		t.Fatal(err)
	}
	caps := common.DefaultCapabilities.Copy()
	rv, err := commonutil.ToRenderValuesWithSchemaValidation(c, vals, common.ReleaseOptions{Name: "rel", Namespace: "ns", Revision: 1, IsInstall: true}, caps, true)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

// outcome is a render's files, or its error.
type outcome struct {
	files map[string]string
	err   string
}

func helmRender(c *chart.Chart, v common.Values) outcome {
	var e helmengine.Engine
	files, err := e.RenderWithContext(context.Background(), c, v)
	return result(files, err)
}

func ourRender(e engine.Engine, c *chart.Chart, v common.Values) outcome {
	files, err := e.RenderWithContext(context.Background(), c, v)
	return result(files, err)
}

func result(files map[string]string, err error) outcome {
	if err != nil {
		return outcome{err: err.Error()}
	}
	return outcome{files: files}
}

// same compares got with Helm's outcome want; files that two of Helm's own
// renders give differently (random names, generated certificates) are
// compared by presence only.
func same(t *testing.T, what string, got, want, want2 outcome) {
	t.Helper()
	if got.err != want.err {
		t.Fatalf("%s: error %q, Helm's %q", what, got.err, want.err)
	}
	if len(got.files) != len(want.files) {
		t.Fatalf("%s: %d files, Helm's %d", what, len(got.files), len(want.files))
	}
	for name, w := range want.files {
		g, ok := got.files[name]
		if !ok {
			t.Fatalf("%s: no %s", what, name)
		}
		if w != want2.files[name] {
			continue // random in Helm's own renders
		}
		if g != w {
			t.Fatalf("%s: %s differs from Helm's:\n%s\n--- Helm:\n%s", what, name, g, w)
		}
	}
}

// engineCase is a chart and the values a test renders it with.
type engineCase struct {
	name  string
	chart func() *chart.Chart // a chart of its own each call
	vals  map[string]any
}

// engineCases are the real-world charts, and the corner charts with each
// of their values.
func engineCases(t *testing.T) []engineCase {
	var cases []engineCase
	for _, p := range realCharts(t) {
		cases = append(cases, engineCase{name: filepath.Base(p), chart: func() *chart.Chart {
			c, err := loader.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}})
	}
	for name, sc := range cornerCharts() {
		for i, vals := range sc.vals {
			cases = append(cases, engineCase{name: fmt.Sprintf("%s/%d", name, i), chart: sc.chart, vals: vals})
		}
	}
	return cases
}

// TestSameAsHelm renders real charts and charts written to reach the
// engine's corners with Helm's engine and this one (without Templates, with
// new ones, and again with the ones a render filled), and wants the same
// files or the same error each time.
func TestSameAsHelm(t *testing.T) {
	for _, c := range engineCases(t) {
		t.Run(c.name, func(t *testing.T) {
			v := func(ch *chart.Chart) common.Values { return renderValues(t, ch, deepCopy(c.vals)) }
			ch := c.chart()
			want, want2 := helmRender(ch, v(ch)), helmRender(ch, v(ch))
			same(t, "no Templates", ourRender(engine.Engine{}, ch, v(ch)), want, want2)
			ts := engine.NewTemplates(1 << 30)
			same(t, "new Templates", ourRender(engine.Engine{Templates: ts}, ch, v(ch)), want, want2)
			same(t, "kept Templates", ourRender(engine.Engine{Templates: ts}, ch, v(ch)), want, want2)
			ch2 := c.chart() // a chart loaded again: its own slices, same text
			same(t, "kept Templates, chart loaded again", ourRender(engine.Engine{Templates: ts}, ch2, v(ch2)), want, want2)
		})
	}
}

type cornerChart struct {
	chart func() *chart.Chart
	vals  []map[string]any
}

func tplChart(name string, files map[string]string, deps ...*chart.Chart) *chart.Chart {
	c := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: name, Version: "1.0.0"}, Values: map[string]any{}}
	for n, text := range files {
		c.Templates = append(c.Templates, &common.File{Name: n, Data: []byte(text)})
	}
	for _, d := range deps {
		c.AddDependency(d)
	}
	return c
}

// cornerCharts reach what a render from kept trees must do as Helm's parse
// does: redefinitions across files (the later file wins; an empty one does
// not), defines in subcharts, tpl that defines and includes, recursion
// limits, parse and execution errors, required and fail, Files.
func cornerCharts() map[string]cornerChart {
	return map[string]cornerChart{
		"redefinitions": {chart: func() *chart.Chart {
			sub := tplChart("sub", map[string]string{
				"templates/_h.tpl":  `{{define "name"}}sub-{{.Chart.Name}}{{end}}{{define "empty"}}full{{end}}`,
				"templates/cm.yaml": "kind: ConfigMap\nname: {{include \"name\" .}} {{include \"empty\" .}}\n",
			})
			return tplChart("top", map[string]string{
				"templates/_a.tpl":    `{{define "name"}}a{{end}}{{define "empty"}}{{end}}`,
				"templates/_b.tpl":    `{{define "name"}}b-{{.Release.Name}}{{end}}`,
				"templates/x.yaml":    "kind: A\nname: {{include \"name\" .}} [{{include \"empty\" .}}] {{template \"name\" .}}\n",
				"templates/NOTES.txt": "notes {{.Values.x}}",
			}, sub)
		}, vals: []map[string]any{nil, {"x": "y"}}},
		"tpl": {chart: func() *chart.Chart {
			return tplChart("tpl", map[string]string{
				"templates/_h.tpl": `{{define "h"}}helper {{.Values.v}}{{end}}`,
				"templates/a.yaml": "a: {{tpl .Values.t .}}\n",
				"templates/b.yaml": "b: {{tpl \"{{include \\\"h\\\" .}}\" .}}\n",
			})
		}, vals: []map[string]any{
			{"t": "{{define \"h\"}}redefined{{end}}{{include \"h\" .}}", "v": 1},
			{"t": "{{include \"h\" .}}", "v": 2},
			{"t": "{{.Values.missing.deeper}}", "v": 3},
			{"t": "{{ if }}", "v": 4},
		}},
		"errors": {chart: func() *chart.Chart {
			return tplChart("errs", map[string]string{
				"templates/req.yaml":  "r: {{required \"set .Values.need\" .Values.need}}\n",
				"templates/fail.yaml": "{{if .Values.fail}}{{fail \"told to fail\"}}{{end}}\n",
				"templates/nil.yaml":  "{{if .Values.nilcall}}{{.Values.nilcall.x.y}}{{end}}\n",
				"templates/rec.yaml":  `{{define "loop"}}{{include "loop" .}}{{end}}{{if .Values.loop}}{{include "loop" .}}{{end}}`,
			})
		}, vals: []map[string]any{nil, {"need": "x"}, {"need": "x", "fail": true}, {"need": "x", "loop": true}}},
		"parse-error": {chart: func() *chart.Chart {
			return tplChart("bad", map[string]string{
				"templates/ok.yaml":  "ok: 1\n",
				"templates/bad.yaml": "bad: {{ .Values.x | nosuchfunc }}\n",
			})
		}, vals: []map[string]any{nil}},
		"unclosed": {chart: func() *chart.Chart {
			return tplChart("bad", map[string]string{"templates/bad.yaml": "{{ if .Values.x }}\n"})
		}, vals: []map[string]any{nil}},
		// The function map each render gets (sprig's without env and
		// expandenv, Helm's, the render's include and tpl) as template
		// files and tpl texts parse and call it, nested tpl included.
		"functions": {chart: func() *chart.Chart {
			return tplChart("funcs", map[string]string{
				"templates/_h.tpl": `{{define "h"}}h-{{.Values.v}}{{end}}`,
				"templates/f.yaml": "f: {{ tpl .Values.t . }}\ny: {{ toYaml .Values.m | indent 2 }} {{ .Values.m | toJson | fromJson | toToml }} {{ upper \"x\" | quote }} {{ durationSeconds \"1m\" }} {{ include \"h\" . }}\n",
			})
		}, vals: []map[string]any{
			{"t": "{{ env \"HOME\" }}", "v": 1},
			{"t": "{{ expandenv \"$HOME\" }}", "v": 2},
			{"t": "{{ required \"need r\" .Values.none }}", "v": 3},
			{"t": "{{ fail \"failed in tpl\" }}", "v": 4},
			{"t": "{{ tpl \"{{ include \\\"h\\\" . }}-{{ getHostByName \\\"example.com\\\" }}\" . }} {{ lookup \"v1\" \"Pod\" \"\" \"\" | len }}", "v": 5, "m": map[string]any{"a": []any{1, "b"}}},
		}},
		"files": {chart: func() *chart.Chart {
			c := tplChart("files", map[string]string{
				"templates/cm.yaml": "data:\n{{ (.Files.Glob \"conf/*\").AsConfig | indent 2 }}\nlines: {{ .Files.Lines \"conf/a.txt\" | len }}\nl: {{ lookup \"v1\" \"Pod\" \"ns\" \"x\" }} {{ getHostByName \"example.com\" }}\n",
			})
			c.Files = []*common.File{{Name: "conf/a.txt", Data: []byte("one\ntwo\n")}, {Name: "conf/b.txt", Data: []byte("b")}}
			return c
		}, vals: []map[string]any{nil}},
	}
}

func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = deepCopy(sub)
		}
		out[k] = v
	}
	return out
}

// TestTemplatesNeverServeOtherText: two charts (two tenants) with a
// template of the same name and different text share one Templates: each
// render gets its own text's templates, in any order, also concurrently.
func TestTemplatesNeverServeOtherText(t *testing.T) {
	mk := func(secret string) *chart.Chart {
		return tplChart("app", map[string]string{
			"templates/_h.tpl":  `{{define "who"}}` + secret + `{{end}}`,
			"templates/cm.yaml": "who: {{include \"who\" .}}\n",
		})
	}
	ts := engine.NewTemplates(1 << 30)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			secret := fmt.Sprintf("tenant-%d", i%4)
			c := mk(secret)
			files, err := engine.Engine{Templates: ts}.RenderWithContext(context.Background(), c, renderValues(t, c, nil))
			if err != nil {
				errs <- err
				return
			}
			if got := files["app/templates/cm.yaml"]; got != "who: "+secret+"\n" {
				errs <- fmt.Errorf("tenant %s got %q", secret, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := ts.Len(); n != 2 {
		t.Errorf("Templates holds %d parses, want one per name (2)", n)
	}
}

// TestKeptTreesUnchangedByRenders: what a render does with its set (tpl
// defining templates, include, redefinitions) never reaches the kept
// parse: a later render without them renders as Helm does.
func TestKeptTreesUnchangedByRenders(t *testing.T) {
	c := cornerCharts()["tpl"]
	ts := engine.NewTemplates(1 << 30)
	first := c.chart()
	// tpl redefines "h" in its clone of the set.
	got := ourRender(engine.Engine{Templates: ts}, first, renderValues(t, first, deepCopy(c.vals[0])))
	if got.err != "" || !strings.Contains(got.files["tpl/templates/a.yaml"], "redefined") {
		t.Fatalf("first render: %+v", got)
	}
	second := c.chart()
	got = ourRender(engine.Engine{Templates: ts}, second, renderValues(t, second, deepCopy(c.vals[1])))
	if want := "b: helper 2\n"; got.files["tpl/templates/b.yaml"] != want || got.files["tpl/templates/a.yaml"] != "a: helper 2\n" {
		t.Fatalf("second render sees the first's tpl definitions: %+v", got.files)
	}
}

// TestCopiedFromHelm: the engine's files are Helm's of the version go.mod
// requires. A Helm upgrade fails here until the upstream changes to
// engine.go, funcs.go and files.go are brought over (and the sums below
// updated): a render from kept templates must stay Helm's render.
func TestCopiedFromHelm(t *testing.T) {
	const version = "v4.3.2"
	upstream := map[string]string{ // sha256 of helm.sh/helm/v4@v4.3.2/pkg/engine/*
		"engine.go":      "30321655dc4abb061ca7ebe7dd8387e315aecb6f97e57a5a33f4497b5b37aeac",
		"funcs.go":       "9331d3ab10bd4bfd24bc5982186ae418a7416421e488508c83cbdf075575361f",
		"files.go":       "eb0894bfaff884d1c6580431ea9e581af505e98fc7015b2710ca7da42baad6a5",
		"lookup_func.go": "71d96271988443a6655a38be2fd0a3c4a85dd706e73d6932644c0a3f08d3480b",
		"doc.go":         "55c5a456c14dc57add494f46714e6b7b2dcc838a9b5b9d2b0a42bf4d909ec2bf",
	}
	mod, err := os.ReadFile("../../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "\thelm.sh/helm/v4 "+version+"\n") {
		t.Fatalf("go.mod does not require helm.sh/helm/v4 %s, the version internal/render/helm/engine is a copy of: bring the new version's pkg/engine changes over", version)
	}
	checkUpstream(t, version, upstream)
}

// checkUpstream compares Helm's pkg/engine in the module cache with the
// sums the copy was made from (skipped, loudly, without a module cache).
func checkUpstream(t *testing.T, version string, sums map[string]string) {
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			home, _ := os.UserHomeDir()
			gopath = filepath.Join(home, "go")
		}
		cache = filepath.Join(strings.Split(gopath, string(os.PathListSeparator))[0], "pkg", "mod")
	}
	dir := filepath.Join(cache, "helm.sh", "helm", "v4@"+version, "pkg", "engine")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("SKIP: Helm's sources are not in the module cache (%v): the copy is not compared with them", err)
	}
	for name, want := range sums {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != want {
			t.Errorf("Helm's pkg/engine/%s is not the file this package was copied from (sha256 %s, want %s)", name, got, want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && sums[n] == "" {
			t.Errorf("Helm's pkg/engine has a file this copy does not know: %s", n)
		}
	}
}

// TestTemplatesBound: kept parses are counted at least at the heap they
// hold, also for text dense in actions (a tenant's chart can be), and a
// Templates keeps no more than its bound: what does not fit is parsed again
// by the next render, which renders the same.
func TestTemplatesBound(t *testing.T) {
	var defines strings.Builder
	for i := range 40_000 {
		fmt.Fprintf(&defines, "{{define \"d%d\"}}{{end}}", i)
	}
	for name, text := range map[string]string{
		"actions": strings.Repeat("{{.Values.a}}{{ $x := 1 }}{{ if .Values.b }}x{{ end }}", 20_000), // 1 MB
		"defines": defines.String(),
		"fields":  strings.Repeat("{{ if .Values.never }}{{ .a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z }}{{ end }}", 15_000),
		"strings": strings.Repeat(`{{ "\x41\x42\x43\x44\x45\x46\x47\x48" | quote }}`, 20_000),
	} {
		c := tplChart("dense", map[string]string{"templates/a.yaml": text})
		v := renderValues(t, c, map[string]any{"a": 1})
		ts := engine.NewTemplates(1 << 30)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if got := ourRender(engine.Engine{Templates: ts}, c, v); got.err != "" {
			t.Fatal(got.err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("%s: kept parses of %d bytes of text: counted at %d bytes, holding %d", name, len(text), ts.Size(), held)
		if held < 4<<20 {
			t.Fatalf("%s: the kept parses hold %d bytes: the measurement is too noisy to mean anything", name, held)
		}
		if size := ts.Size(); size < held {
			t.Errorf("%s: kept parses counted at %d bytes, they hold %d", name, size, held)
		}
		runtime.KeepAlive(ts)
	}

	dense := strings.Repeat("{{.Values.a}}{{ $x := 1 }}{{ if .Values.b }}x{{ end }}", 2_000)
	c := tplChart("dense", map[string]string{"templates/a.yaml": dense, "templates/b.yaml": "b: 1\n"})
	ts := engine.NewTemplates(1 << 30)
	ourRender(engine.Engine{Templates: ts}, c, renderValues(t, c, nil))
	small := engine.NewTemplates(ts.Size() / 2)
	want := helmRender(c, renderValues(t, c, map[string]any{"a": 1}))
	for range 2 {
		c := tplChart("dense", map[string]string{"templates/a.yaml": dense, "templates/b.yaml": "b: 1\n"})
		same(t, "bounded Templates", ourRender(engine.Engine{Templates: small}, c, renderValues(t, c, map[string]any{"a": 1})), want, want)
	}
	if small.Size() > ts.Size()/2 || small.Len() != 1 {
		t.Errorf("a Templates bounded at %d bytes holds %d in %d parses, want only the small template", ts.Size()/2, small.Size(), small.Len())
	}
}
