package manifests

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// trickyStrings are scalars the YAML writer must quote, fold or escape.
var trickyStrings = []string{
	"", " ", "yes", "No", "on", "OFF", "y", "n", "true", "null", "~", "Null", "1", "-1", "1.5", "1e3", "1e+21", "0x1F", "0o17", "017",
	".inf", "-.Inf", ".nan", "1_000", "190:20:30", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "=", "<<", ":", "a: b", "- a", "#x", "x #y",
	"[a]", "{a}", "*a", "&a", "!a", "%a", "@a", "`a", "'a'", `"a"`, "a\nb", "a\nb\n", "a\n\nb\n\n", " lead", "trail ", "\ttab", "a\tb",
	"line\r\nbreak", "\x7f", "\u0085", "\u0080x", "\u009f", "\u2028", "\u2029", "\ufeff", "\ufffe", "\uffff", "\x00", "\x1b[0m", "<>&",
	"ünïcödé", "日本語", "emoji 🎉", strings.Repeat("long ", 40), strings.Repeat("x", 200), "---", "...", "--- a", "a\n---\nb",
	"{{ .Values.x }}", "key=value,other", "0.0.0.0/0", "image:tag@sha256:abc", "-", "?", "? a", "|", ">", "|-\n a",
}

func randomValue(r *rand.Rand, depth int) any {
	switch n := r.IntN(12); {
	case depth > 4 || n < 3:
		return trickyStrings[r.IntN(len(trickyStrings))]
	case n == 3:
		return nil
	case n == 4:
		return r.IntN(2) == 0
	case n == 5:
		return int64(r.Uint64())
	case n == 6:
		return []float64{0.1, -2.5, 1e-7, 1.5e300, 3.25, 1e-300, 123456.789, -0.000001, 5e-324}[r.IntN(9)]
	case n < 9:
		m := map[string]any{}
		for i := r.IntN(5); i > 0; i-- {
			m[trickyStrings[r.IntN(len(trickyStrings))]] = randomValue(r, depth+1)
		}
		return m
	default:
		l := []any{}
		for i := r.IntN(4); i > 0; i-- {
			l = append(l, randomValue(r, depth+1))
		}
		return l
	}
}

// The direct YAML writer gives byte for byte what the JSON detour
// (sigs.k8s.io/yaml.Marshal, the reference) gives, for tricky scalars and
// keys, random nesting, and every object of the fixtures and of the
// real-world goldens.
func TestMarshalYAMLDirectSameAsViaJSON(t *testing.T) {
	check := func(o Object) {
		t.Helper()
		want, werr := marshalYAMLViaJSON(o)
		got, gerr := marshalYAML(o)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("object %v:\ndirect (%v):\n%s\nvia JSON (%v):\n%s", o, gerr, got, werr, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	direct := 0
	for i := 0; i < 5000; i++ {
		o := Object{"apiVersion": "v1", "kind": "ConfigMap", "data": randomValue(r, 0)}
		if directYAML(o, 0) {
			direct++
		}
		check(o)
	}
	if direct < 2500 {
		t.Fatalf("only %d of 5000 random objects took the direct path", direct)
	}
	for _, s := range trickyStrings {
		check(Object{s: s, "l": []any{s, map[string]any{s: []any{}}}, "m": map[string]any{}})
	}
	// Values that must take the detour and still give its text.
	for _, v := range []any{float64(3), float64(1e6), math.Copysign(0, -1), []any(nil), map[string]any(nil), []string{"a"},
		map[string]string{"b": "c"}, int32(4), uint64(math.MaxUint64), "\xff", struct{ A int }{1}, strings.Repeat("k", maxDirectKey+1)} {
		check(Object{"v": v, "w": []any{v}})
	}
	check(Object{strings.Repeat("k", maxDirectKey+1): 1})
	check(Object{strings.Repeat("\x01", maxDirectKey): 1})

	files, _ := fixtureFiles(t)
	objects := 0
	for _, f := range files {
		objs, err := Decode(f.name, f.data)
		if err != nil {
			continue // not manifests
		}
		for _, o := range objs {
			if !directYAML(o, 0) {
				t.Errorf("%s: %s does not take the direct path", f.name, Key(o))
			}
			check(o)
			objects++
		}
	}
	t.Logf("%d fixture objects", objects)
}

// Encoding in parallel gives the stream encoding one object after the other
// gives, and the error of the first failing object.
func TestEncodeParallelSameAsSequential(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var objs []Object
	for i := 0; i < 200; i++ {
		objs = append(objs, Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprint("cm-", i)}, "data": randomValue(r, 0)})
	}
	for name, enc := range map[string]struct {
		stream func(io.Writer, []Object) error
		doc    func(Object) ([]byte, error)
		suffix string
	}{"yaml": {Encode, marshalYAML, ""}, "json": {EncodeJSON, jsonDoc, "\n"}} {
		var want bytes.Buffer
		for _, o := range objs {
			b, err := enc.doc(o)
			if err != nil {
				t.Fatal(err)
			}
			want.WriteString("---\n")
			want.Write(b)
			want.WriteString(enc.suffix)
		}
		var got bytes.Buffer
		if err := enc.stream(&got, objs); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%s: parallel stream differs from the sequential one", name)
		}
		// Objects 50 and 120 cannot be encoded: the error names 50, and
		// nothing is written.
		bad := slices.Clone(objs)
		bad[50] = Object{"kind": "Bad", "v": math.NaN()}
		bad[120] = Object{"kind": "Bad", "v": math.Inf(1)}
		got.Reset()
		err := enc.stream(&got, bad)
		if err == nil || !strings.Contains(err.Error(), "encoding object 50 (/Bad//)") || got.Len() != 0 {
			t.Fatalf("%s: error %v, %d bytes written", name, err, got.Len())
		}
	}
}
