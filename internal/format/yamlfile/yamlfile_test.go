package yamlfile_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
)

// plainCases are plain scalars whose reading differs between YAML 1.1 and
// 1.2, or between kinds, and ordinary ones.
var plainCases = []string{
	"yes", "Yes", "YES", "no", "No", "on", "On", "off", "OFF", "y", "Y", "n", "N",
	"true", "False", "TRUE", "null", "~", "Null",
	"0", "12", "-3", "+4", "0777", "0o17", "0x1F", "0b101", "-0b11", "1_000", "9223372036854775807", "18446744073709551615",
	"1.5", "-2.0e3", ".5", "1e3", "6.7.0", "1.2.3-rc.1",
	"2001-12-14", "2001-12-14T21:59:43.10Z", "2001-12-14 21:59:43.10", "2024-13-45",
	"hello", "ghcr.io/a/b:1", "a:b", "+", "0x", "08", "1__0",
}

// Plain reads every plain scalar as sigs.k8s.io/yaml does (compared through
// JSON, which is what both end up as).
func TestPlainReadsLikeSigsYAML(t *testing.T) {
	for _, s := range plainCases {
		want, err := yaml.YAMLToJSON([]byte("v: " + s + "\n"))
		if err != nil {
			t.Fatalf("%q: sigs.k8s.io/yaml: %v", s, err)
		}
		got, err := json.Marshal(map[string]any{"v": yamlfile.Plain(s)})
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if string(got) != string(want) {
			t.Errorf("Plain(%q) = %s, sigs.k8s.io/yaml reads %s", s, got, want)
		}
	}
	for _, s := range []string{".inf", "-.Inf", "+.INF"} {
		if f, ok := yamlfile.Plain(s).(float64); !ok || !math.IsInf(f, 0) {
			t.Errorf("Plain(%q) = %v", s, yamlfile.Plain(s))
		}
	}
	if f, ok := yamlfile.Plain(".nan").(float64); !ok || !math.IsNaN(f) {
		t.Errorf("Plain(.nan) = %v", yamlfile.Plain(".nan"))
	}
}

// Key turns a plain key into the JSON key sigs.k8s.io/yaml makes of it.
func TestKeyLikeSigsYAML(t *testing.T) {
	for _, s := range []string{"on", "yes", "No", "y", "12", "0x10", "1.5", "name", "2001-12-14"} {
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(s+": 1\n"), &doc); err != nil {
			t.Fatalf("%q: sigs.k8s.io/yaml: %v", s, err)
		}
		var want string
		for k := range doc {
			want = k
		}
		got, ok := yamlfile.Key(s)
		if !ok || got != want {
			t.Errorf("Key(%q) = %q, %v; sigs.k8s.io/yaml makes %q", s, got, ok, want)
		}
	}
	if _, ok := yamlfile.Key("null"); ok {
		t.Error("a null key was accepted")
	}
}

func TestStructureCount(t *testing.T) {
	if n := yamlfile.StructureCount([]byte("a: [1, 2]\n- {b: c}\n")); n != 8 {
		t.Errorf("StructureCount = %d, want 8", n)
	}
}

// DecodeStrictPositions names where each field is written: a key's line
// and column, a list item's first character (block, flow, alias), and an
// explicit key before the one << merges under it.
func TestDecodeStrictPositions(t *testing.T) {
	type item struct {
		Name string `json:"name"`
		Size int    `json:"size,omitempty"`
	}
	var doc struct {
		A     string          `json:"a"`
		Items []item          `json:"items"`
		Flow  []item          `json:"flow"`
		Base  map[string]any  `json:"base"`
		Over  map[string]any  `json:"over"`
		Alias []item          `json:"alias"`
		Map   map[string]item `json:"map"`
	}
	src := "a: x\n" + // 1
		"items:\n" + // 2
		"  - name: one\n" + // 3
		"    size: 1\n" + // 4
		"  - name: two\n" + // 5
		"flow: [{name: f}]\n" + // 6
		"base: &b {k: 1, j: 2}\n" + // 7
		"over:\n" + // 8
		"  k: 3\n" + // 9
		"  <<: *b\n" + // 10
		"alias: [&i {name: a}, *i]\n" + // 11
		"map:\n" + // 12
		"  \"x.y\": {name: m}\n" // 13
	pos, err := yamlfile.DecodeStrictPositions("t.yaml", []byte(src), &doc)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]yamlfile.Position{
		"a":             {1, 1},
		"items":         {2, 1},
		"items[0]":      {3, 5},
		"items[0].size": {4, 5},
		"items[1].name": {5, 5},
		"flow[0]":       {6, 8},
		"flow[0].name":  {6, 9},
		"over.k":        {9, 3},
		"over.j":        {7, 17}, // only the anchor writes it
		"alias[1]":      {11, 23},
		`map["x.y"]`:    {13, 3},
	} {
		if got, ok := pos.Of(path); !ok || got != want {
			t.Errorf("%s: %v (found %v), want %v", path, got, ok, want)
		}
	}
}

// StructureCount counts exactly the seven structural bytes, each byte value
// checked, in short texts and in long ones (counted another way), and
// random texts of every length around where the way changes.
func TestStructureCountEveryByte(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := 0
		if strings.IndexByte(",[{-:?\n", byte(c)) >= 0 {
			want = 3
		}
		if n := yamlfile.StructureCount([]byte{byte(c), 'x', byte(c), byte(c)}); n != want {
			t.Errorf("byte %#x: StructureCount = %d, want %d", c, n, want)
		}
		long := bytes.Repeat([]byte{byte(c), 'x', byte(c), byte(c)}, 1000)
		if n := yamlfile.StructureCount(long); n != want*1000 {
			t.Errorf("byte %#x, 4000 bytes: StructureCount = %d, want %d", c, n, want*1000)
		}
	}
	byByte := func(b []byte) int {
		n := 0
		for _, c := range b {
			if strings.IndexByte(",[{-:?\n", c) >= 0 {
				n++
			}
		}
		return n
	}
	r := rand.New(rand.NewPCG(1, 2))
	for size := 0; size < 2000; size++ {
		b := make([]byte, size)
		for i := range b {
			if r.IntN(3) == 0 {
				b[i] = ",[{-:?\n"[r.IntN(7)]
			} else {
				b[i] = byte(r.IntN(256))
			}
		}
		if got, want := yamlfile.StructureCount(b), byByte(b); got != want {
			t.Fatalf("%d random bytes: StructureCount = %d, want %d", size, got, want)
		}
	}
}

// A document nested deeper than the nesting bound is refused, naming it,
// before it is converted; one at the bound reads. The work for one nested
// 8,000 deep (40 KB; 550 MiB and 1.6 s before the bound, when the converter
// kept a copied field path and its text for every node) is a few MiB.
func TestStrictRefusesDeepDocuments(t *testing.T) {
	flow := func(n int) string { return strings.Repeat("{a: ", n) + "1" + strings.Repeat("}", n) }
	if _, err := yamlfile.ParseStrict("value", []byte(flow(nesting.MaxDepth))); err != nil {
		t.Fatalf("a document %d levels deep: %v", nesting.MaxDepth, err)
	}
	for _, n := range []int{nesting.MaxDepth + 1, 1000, 8000} {
		var err error
		alloc := allocated(func() { _, err = yamlfile.ParseStrict("value", []byte(flow(n))) })
		if !errors.Is(err, errdef.ErrLimitExceeded) || !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "value: nested more than 128 levels deep") {
			t.Errorf("a document %d levels deep: %v", n, err)
		}
		if alloc > 16<<20 {
			t.Errorf("a document %d levels deep: %d MiB allocated", n, alloc>>20)
		}
		var out struct{}
		if err := yamlfile.DecodeStrict("def.yaml", []byte(flow(n)), &out); !errors.Is(err, errdef.ErrLimitExceeded) {
			t.Errorf("DecodeStrict of a document %d levels deep: %v", n, err)
		}
	}
}

// Strict decoding costs memory linear in the document: twice the nodes at
// the deepest nesting allowed allocate about twice as much (a field path
// per node made it grow with the depth as well).
func TestStrictMemoryLinear(t *testing.T) {
	doc := func(width int) []byte {
		// width chains of maps, each nesting.MaxDepth-1 deep, under one key.
		var b strings.Builder
		b.WriteString("{")
		for i := range width {
			fmt.Fprintf(&b, "k%d: %s%d%s, ", i, strings.Repeat("{a: ", nesting.MaxDepth-2), i, strings.Repeat("}", nesting.MaxDepth-2))
		}
		b.WriteString("z: 1}")
		return []byte(b.String())
	}
	measure := func(width int) uint64 {
		d := doc(width)
		return allocated(func() {
			if _, err := yamlfile.ParseStrict("value", d); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := measure(200), measure(400)
	t.Logf("%d nodes: %d KiB; %d nodes: %d KiB", 200*nesting.MaxDepth, small>>10, 400*nesting.MaxDepth, large>>10)
	if float64(large) > 2.5*float64(small) {
		t.Errorf("allocations grow x%.1f for twice the nodes", float64(large)/float64(small))
	}
	// Per byte of input, not per node times depth.
	if per := large / uint64(len(doc(400))); per > 200 {
		t.Errorf("%d bytes allocated per byte of input", per)
	}
}

// allocated returns the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A key given twice with the same value reads as Kubernetes tools read it
// (sigs.k8s.io/yaml keeps the last); with another value it is refused,
// naming both lines.
func TestStrictRepeatedKeys(t *testing.T) {
	for _, doc := range []string{
		"spec:\n  selector:\n    app: dns\n  ports: [53]\n  selector:\n   app: dns\n", // kro's core-dns example
		"a: 1\nb: x\na: 1\n",
		"a: {b: [1, {c: d}]}\na:\n  b:\n  - 1\n  - c: d\n",
		"a: null\na: ~\n",
	} {
		got, err := yamlfile.ParseStrict("doc.yaml", []byte(doc))
		if err != nil {
			t.Errorf("%q: %v", doc, err)
			continue
		}
		want, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(got); string(b) != string(want) {
			t.Errorf("%q: read as %s, sigs.k8s.io/yaml reads %s", doc, b, want)
		}
	}
	for doc, lines := range map[string]string{
		"a: 1\nb: x\na: 2\n":                     "line 3: key \"a\" is defined twice in \"the document\", with another value than at line 1",
		"m:\n  a: [1]\n  a: [1, 2]\n":            "line 3: key \"a\" is defined twice in \"m\", with another value than at line 2",
		"m:\n  a: {b: c}\n  x: 1\n  a: {b: d}\n": "line 4: key \"a\" is defined twice in \"m\", with another value than at line 2",
		"a: 1\na: \"1\"\n":                       "line 2: key \"a\" is defined twice",
	} {
		_, err := yamlfile.ParseStrict("doc.yaml", []byte(doc))
		if err == nil || !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), lines) {
			t.Errorf("%q: want %q, got %v", doc, lines, err)
		}
	}
}
