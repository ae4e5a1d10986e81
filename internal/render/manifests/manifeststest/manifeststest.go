// Package manifeststest compares rendered objects in tests.
//
// Renderers are tested against golden files produced by the real tools
// (helm template, kustomize build). The tools and this project may order
// objects and format scalars differently, so objects are compared as sets
// keyed by manifests.Key, with numbers normalised, and a mismatch is reported
// as a per-object line diff of the YAML.
package manifeststest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// Equal fails t unless got and want hold the same objects, compared as sets
// keyed by manifests.Key. Duplicate keys on either side are a failure too.
// The report lists missing and unexpected objects by key and, for objects in
// both, a line diff of their YAML.
func Equal(t testing.TB, got, want []manifests.Object) {
	t.Helper()
	if diff := Diff(got, want); diff != "" {
		t.Errorf("objects differ (-want +got):\n%s", diff)
	}
}

// Diff returns a human-readable description of how got differs from want as
// sets of objects, or "" when they are equal. See Equal.
func Diff(got, want []manifests.Object) string {
	var b strings.Builder
	g, gdup := index(got)
	w, wdup := index(want)
	for _, k := range wdup {
		fmt.Fprintf(&b, "duplicate key in want: %s\n", k)
	}
	for _, k := range gdup {
		fmt.Fprintf(&b, "duplicate key in got: %s\n", k)
	}
	for _, k := range sortedKeys(w) {
		if _, ok := g[k]; !ok {
			fmt.Fprintf(&b, "missing object %s:\n%s", k, indent("- ", toYAML(w[k])))
		}
	}
	for _, k := range sortedKeys(g) {
		if _, ok := w[k]; !ok {
			fmt.Fprintf(&b, "unexpected object %s:\n%s", k, indent("+ ", toYAML(g[k])))
		}
	}
	for _, k := range sortedKeys(w) {
		gv, ok := g[k]
		if !ok {
			continue
		}
		wv := w[k]
		if reflect.DeepEqual(gv, wv) {
			continue
		}
		fmt.Fprintf(&b, "object %s differs:\n%s", k, lineDiff(toYAML(wv), toYAML(gv)))
	}
	return b.String()
}

// ReadFile decodes the manifests in a file (a golden file, typically;
// gunzipped when its name ends in .gz), failing t on error.
func ReadFile(t testing.TB, path string) []manifests.Object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	objs, err := manifests.Decode(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// Parse decodes manifests written in a test, failing t on error.
func Parse(t testing.TB, yamlText string) []manifests.Object {
	t.Helper()
	objs, err := manifests.Decode("test manifests", []byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// ReadGolden decodes the golden <name>.yaml of dir, or <name>.yaml.gz
// (large goldens are kept compressed).
func ReadGolden(t testing.TB, dir, name string) []manifests.Object {
	t.Helper()
	p := filepath.Join(dir, name+".yaml")
	if _, err := os.Stat(p); err != nil {
		p += ".gz"
	}
	return ReadFile(t, p)
}

// index normalises objects and maps them by key, returning duplicate keys.
func index(objs []manifests.Object) (map[string]any, []string) {
	m := make(map[string]any, len(objs))
	var dups []string
	for _, o := range objs {
		k := manifests.Key(o)
		if _, ok := m[k]; ok {
			dups = append(dups, k)
			continue
		}
		m[k] = normalize(o)
	}
	sort.Strings(dups)
	return m, dups
}

// normalize round-trips through JSON so that int, int64 and float64 of the
// same value compare equal and typed maps and slices become generic ones.
func normalize(o manifests.Object) any {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Sprintf("unencodable object: %v", err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Sprintf("undecodable object: %v", err)
	}
	return canonNumbers(v)
}

// canonNumbers rewrites json.Number so that 1, 1.0 and 1e0 are equal.
func canonNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if f, err := v.Float64(); err == nil {
			return f
		}
		return string(v)
	case map[string]any:
		for k, e := range v {
			v[k] = canonNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = canonNumbers(e)
		}
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func toYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v\n", v)
	}
	return string(b)
}

func indent(prefix, s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString(prefix)
		b.WriteString(strings.TrimSuffix(l, "\n"))
		b.WriteByte('\n')
	}
	return b.String()
}

// lineDiff is a small LCS line diff: "  " common, "- " want only, "+ " got only.
// Runs of more than two common lines are elided to keep reports short.
func lineDiff(want, got string) string {
	a := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	c := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	n, m := len(a), len(c)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == c[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == c[j]:
			lines = append(lines, line{' ', a[i]})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, line{'-', a[i]})
			i++
		default:
			lines = append(lines, line{'+', c[j]})
			j++
		}
	}
	const ctx = 2
	show := make([]bool, len(lines))
	for k, l := range lines {
		if l.op != ' ' {
			for d := max(0, k-ctx); d <= min(len(lines)-1, k+ctx); d++ {
				show[d] = true
			}
		}
	}
	var b strings.Builder
	for k, l := range lines {
		if !show[k] {
			if k == 0 || show[k-1] {
				b.WriteString("  ...\n")
			}
			continue
		}
		b.WriteByte(l.op)
		b.WriteByte(' ')
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}
