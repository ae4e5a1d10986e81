package manifests

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
)

// checkWriteYAML fails t unless writeYAML gives what yaml.v2's Marshal gives
// for o, or declines; it reports whether writeYAML wrote o.
func checkWriteYAML(t testing.TB, o Object) bool {
	t.Helper()
	got, ok := writeYAML(o)
	if !ok {
		return false
	}
	want, err := yamlv2.Marshal(o)
	if err != nil {
		t.Fatalf("object %#v: yaml.v2 fails (%v), writeYAML wrote:\n%s", o, err, got)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("object %#v:\nwriteYAML:\n%s\nyaml.v2:\n%s", o, got, want)
	}
	return true
}

// scalarCorpus: trickyStrings plus strings around the line width, with
// runs of spaces, quotes, escapes and characters outside ASCII at the
// points where the emitter folds.
func scalarCorpus() []string {
	out := append([]string{}, trickyStrings...)
	words := []string{"a", "bb", "ccc", "dddddddddd", "  ", "   ", "'q'", `"d"`, "\\", "é", "日本", "🎉", "\t", "\u00a0", "\u0085", "\u2028",
		"\r", "\n", "\n\n", ": ", " #", "-", "x:", "\ufeff", "\x01", "\x7f", "0", "1.5", "true"}
	r := rand.New(rand.NewPCG(7, 8))
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		for l := 20 + r.IntN(200); b.Len() < l; {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(3) > 0 {
				b.WriteByte(' ')
			}
		}
		out = append(out, b.String())
	}
	for _, p := range []string{"", " ", "\n", "a\n", " a", "\ufeff"} {
		for _, s := range []string{"x", "x\n", "x\n\n", "\n", "é\n", "🎉"} {
			out = append(out, p+s)
		}
	}
	return out
}

// writeYAML writes byte for byte what yaml.v2 writes: for every scalar of
// the corpus as a key and as a value at several depths (in mappings, in
// sequences, in sequences of mappings, so that folding starts at different
// columns), for random nesting, and for every object of the fixtures and of
// the real-world goldens (../shared/fixtures/realworld), which must all
// take this path.
func TestWriteYAMLSameAsYAMLv2(t *testing.T) {
	written := 0
	for _, s := range scalarCorpus() {
		for _, o := range []Object{
			{"v": s},
			{s: s},
			{"a": map[string]any{"bb": map[string]any{s: []any{s, map[string]any{s: s, "k": []any{[]any{s}}}}}}},
			{"l": []any{s, []any{map[string]any{"x": s}}}},
			{strings.Repeat("k", 40): map[string]any{strings.Repeat("k", 30): s}},
		} {
			if checkWriteYAML(t, o) {
				written++
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 5000; i++ {
		if checkWriteYAML(t, Object{"apiVersion": "v1", "kind": "ConfigMap", "data": randomValue(r, 0)}) {
			written++
		}
	}
	// Sorting: keys that differ in letters, digits, runs of digits, leading
	// zeros and characters outside ASCII.
	ambiguous := 0
	keys := []string{"a", "b", "A", "Z", "a1", "a2", "a10", "a01", "a001", "a0", "a00", "1", "2", "10", "01", "0", "00", "x1y", "x10y", "x2y",
		"_a", "-a", ".a", "é", "e", "f", "日", "٣", "a٣", "a3", "1a", "a1b2", "a1b10", "a10b1", "", " ", "aa", "aA", "Aa", "v1beta1", "v1alpha2", "v2", "v10"}
	for i := 0; i < 500; i++ {
		m := map[string]any{}
		for j := r.IntN(len(keys)); j >= 0; j-- {
			m[keys[r.IntN(len(keys))]] = j
		}
		// Compare only where yaml.v2's order is unique (see mappingKeys):
		// every pair of the sorted keys in order.
		sorted := mappingKeys(slices.Collect(maps.Keys(m)))
		sort.Sort(sorted)
		total := true
		for i := range sorted {
			for j := i + 1; j < len(sorted); j++ {
				total = total && keyLess(sorted[i], sorted[j])
			}
		}
		if !total {
			ambiguous++
			continue
		}
		if checkWriteYAML(t, Object{"m": m}) {
			written++
		}
	}
	if ambiguous > 400 {
		t.Fatalf("%d of 500 key sets have no unique order", ambiguous)
	}
	if written < 12000 {
		t.Fatalf("only %d objects written by writeYAML", written)
	}

	files, goldens := fixtureFiles(t)
	minObjects := 500 // the testdata manifests and the real-world goldens
	if !strings.HasPrefix(realWorldDir(), "../../../../shared") {
		minObjects = 50 // the repository's subset of the goldens: ~80 objects
	}
	if !goldens {
		t.Log("SKIP part: ../shared/fixtures/realworld is absent; only the repository's testdata manifests are compared")
		minObjects = 6
	}
	objects := 0
	for _, f := range files {
		objs, err := Decode(f.name, f.data)
		if err != nil {
			continue // not manifests
		}
		for _, o := range objs {
			if !checkWriteYAML(t, o) {
				t.Errorf("%s: %s is not written by writeYAML", f.name, Key(o))
			}
			objects++
		}
	}
	if objects < minObjects {
		t.Fatalf("only %d fixture objects", objects)
	}
	t.Logf("%d corpus and random objects, %d fixture objects, %d key sets without a unique order", written, objects, ambiguous)
}

// What writeYAML declines, marshalYAML leaves to yaml.v2 or the JSON
// detour: keys the emitter writes as "? " complex keys, invalid UTF-8,
// integral floats, nil collections, other types.
func TestWriteYAMLDeclines(t *testing.T) {
	for _, o := range []Object{
		{strings.Repeat("k", yamlMaxSimpleKey+1): 1},
		{"a\nb": 1}, {"a\u2028b": 1}, {"a\rb": 1},
		{"v": "\xff"}, {"\xff": 1},
		{"v": float64(3)}, {"v": []any(nil)}, {"v": map[string]any(nil)}, {"v": []string{"a"}}, {"v": int32(1)},
	} {
		if _, ok := writeYAML(o); ok {
			t.Errorf("writeYAML wrote %#v", o)
		}
	}
	if _, ok := writeYAML(Object{strings.Repeat("k", yamlMaxSimpleKey): 1}); !ok {
		t.Error("writeYAML declined a key of 128 bytes")
	}
}

// FuzzWriteYAML: for any two strings as keys and values at a few depths,
// writeYAML gives yaml.v2's text or declines.
func FuzzWriteYAML(f *testing.F) {
	for i, s := range trickyStrings {
		f.Add(s, trickyStrings[(i+1)%len(trickyStrings)])
	}
	f.Add(strings.Repeat("word ", 30), "a  b")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		for _, o := range []Object{
			{a: b},
			{"k": []any{a, map[string]any{b: a, a: []any{b}}}},
			{"deeper": map[string]any{"x": map[string]any{a: b + " " + a}}},
		} {
			checkWriteYAML(t, o)
		}
		for _, v := range []string{a, b, a + b} {
			if v != "" && analyzeScalar(v) != analyzeScalarSlow(v) {
				t.Fatalf("%q: fast %+v, slow %+v", v, analyzeScalar(v), analyzeScalarSlow(v))
			}
		}
	})
}

// The ASCII fast path of analyzeScalar agrees with the emitter's loop.
func TestAnalyzeScalarFastSameAsSlow(t *testing.T) {
	for _, s := range scalarCorpus() {
		for _, v := range []string{s, "#" + s, "-" + s, "? " + s, s + ":", s + " #x", "---" + s, "a\n " + s, s + " \n"} {
			if v == "" {
				continue
			}
			if got, want := analyzeScalar(v), analyzeScalarSlow(v); got != want {
				t.Fatalf("%q: fast %+v, slow %+v", v, got, want)
			}
		}
	}
}

// Keys whose yaml.v2 order is not a total order ("01" < "10" < "1a" <
// "01") are written in the same order on every run, whatever order the map
// hands them out in.
func TestWriteYAMLKeyOrderDeterministic(t *testing.T) {
	m := map[string]any{}
	for _, k := range []string{"01", "10", "1a", "a1b", "a10b", "a2b", "x", "2", "02", "b"} {
		m[k] = k
	}
	first, ok := writeYAML(Object{"m": m})
	if !ok {
		t.Fatal("not written by writeYAML")
	}
	for range 200 {
		got, _ := writeYAML(Object{"m": m})
		if !bytes.Equal(got, first) {
			t.Fatalf("text depends on the map's order:\n%s\nvs\n%s", first, got)
		}
	}
}

// specialWord marks a word exactly when one of its bytes is not
// scalarOrdinary: every byte value at every position over several
// backgrounds (so that borrows and carries from the bytes around it are
// tried), two at once, and random words.
func TestSpecialWordSameAsByteClasses(t *testing.T) {
	byBytes := func(x uint64) bool {
		for k := 0; k < 8; k++ {
			if scalarClass[byte(x>>(8*k))] != scalarOrdinary {
				return true
			}
		}
		return false
	}
	check := func(x uint64) {
		if got, want := specialWord(x), byBytes(x); got != want {
			t.Fatalf("%#016x: specialWord %v, byte classes %v", x, got, want)
		}
	}
	for _, bg := range []byte{' ', '!', '"', '$', '9', ';', '@', 'a', '~', 0x1f, 0x7f, 0x80, 0xff, 0x00, ':', '#'} {
		for k := 0; k < 8; k++ {
			for c := 0; c < 256; c++ {
				for k2 := 0; k2 < 8; k2++ {
					var b [8]byte
					for i := range b {
						b[i] = bg
					}
					b[k2] = ' '
					b[k] = byte(c)
					check(binary.LittleEndian.Uint64(b[:]))
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		check(r.Uint64())
		// Mostly printable ASCII.
		var b [8]byte
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0x5f))
		}
		check(binary.LittleEndian.Uint64(b[:]))
	}
}

// analyzeScalarASCII agrees with the emitter's loop whatever the place of
// a special byte or byte pair relative to the eight-byte words it skips.
func TestAnalyzeScalarSpecialBytesAtEveryOffset(t *testing.T) {
	specials := []string{"\n", ":", "#", " ", ": ", " #", "\n#", " \n", "\n ", "\t", "\r", "\x7f", "\x00", "é", "\u2028", "::", "##", "'"}
	for _, bg := range []string{"abcdefghijklmnopqrstuvwxyz", "a b c d e f g h i j k l m", "                          "} {
		for _, sp := range specials {
			for at := 0; at <= len(bg); at++ {
				for _, v := range []string{bg[:at] + sp + bg[at:], bg[:at] + sp, sp + bg[at:]} {
					got, ascii := analyzeScalarASCII(v)
					if want := analyzeScalarSlow(v); got != want {
						t.Fatalf("%q: fast %+v, slow %+v", v, got, want)
					}
					if wantASCII := isOneLineOrLFASCII(v); ascii != wantASCII {
						t.Fatalf("%q: ascii %v, want %v", v, ascii, wantASCII)
					}
				}
			}
		}
	}
}

func isOneLineOrLFASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\n' && (c < 0x20 || c > 0x7e) {
			return false
		}
	}
	return true
}

// The ASCII writers (writePlainASCII, writeSingleQuotedASCII,
// writeLiteralASCII) write what the general ones write, and leave the
// writer in the same state, for every scalar of the corpus they take,
// starting at columns around the line width, with and without folding.
func TestASCIIWritersSameAsGeneral(t *testing.T) {
	values := scalarCorpus()
	// The corpus's words that are printable ASCII or LF, in random strings.
	words := []string{"a", "bb", "ccc", "dddddddddd", "  ", "   ", "'q'", "''", `"d"`, "\\", "\n", "\n\n", ": ", " #", "-", "x:", "0", "1.5", "true"}
	r := rand.New(rand.NewPCG(9, 10))
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		for l := 1 + r.IntN(250); b.Len() < l; {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(3) > 0 {
				b.WriteByte(' ')
			}
		}
		values = append(values, b.String(), strings.ReplaceAll(b.String(), "\n", ""))
	}
	tried := [3]int{}
	for _, v := range values {
		if v == "" {
			continue
		}
		a, ascii := analyzeScalarASCII(v)
		if !ascii {
			continue
		}
		for _, column := range []int{0, 1, 2, 10, 40, 70, 78, 79, 80, 81, 82, 100} {
			for _, whitespace := range []bool{false, true} {
				for _, allowBreaks := range []bool{false, true} {
					start := yamlWriter{buf: []byte("x"), column: column, indent: 4, whitespace: whitespace, indention: whitespace}
					compare := func(name string, fast, general func(*yamlWriter)) {
						f, g := start, start
						f.buf, g.buf = slices.Clone(start.buf), slices.Clone(start.buf)
						fast(&f)
						general(&g)
						if !bytes.Equal(f.buf, g.buf) || f.column != g.column || f.indent != g.indent || f.whitespace != g.whitespace || f.indention != g.indention {
							t.Fatalf("%s %q from %+v:\nfast    %q %+v\ngeneral %q %+v", name, v, start, f.buf, f, g.buf, g)
						}
					}
					if !a.multiline {
						tried[0]++
						compare("plain", func(w *yamlWriter) { w.writePlainASCII(v, allowBreaks) }, func(w *yamlWriter) { w.writePlain(v, allowBreaks) })
						tried[1]++
						compare("single-quoted", func(w *yamlWriter) { w.writeSingleQuotedASCII(v, allowBreaks) }, func(w *yamlWriter) { w.writeSingleQuoted(v, allowBreaks) })
					}
					if allowBreaks {
						tried[2]++
						compare("literal", func(w *yamlWriter) { w.writeLiteralASCII(v) }, func(w *yamlWriter) { w.writeLiteral(v) })
					}
				}
			}
		}
	}
	t.Logf("tried plain, single-quoted, literal: %v", tried)
	if tried[0] < 100000 || tried[2] < 100000 {
		t.Fatalf("too few values tried: %v", tried)
	}
}
