package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// encodingJSON is what jsonDoc wrote before appendJSON: json.Encoder
// without HTML escaping, less the newline.
func encodingJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func checkSameJSON(t *testing.T, v any) {
	t.Helper()
	got, ok := appendJSON(nil, v, 0)
	if !ok {
		t.Fatalf("appendJSON(%#v) refused a value of Decode's types", v)
	}
	if want := encodingJSON(t, v); !bytes.Equal(got, want) {
		t.Fatalf("appendJSON(%#v)\n = %s\nwant %s", v, got, want)
	}
}

// jsonStrings are strings with every kind of character encoding/json
// escapes or keeps: controls, quotes, HTML characters, U+007F, invalid
// UTF-8, U+2028/U+2029, U+FFFD itself, multi-byte runes cut short.
var jsonStrings = []string{"", "plain", "a\"b\\c", "<b>&amp;</b>", "\x00\x01\x07\b\f\n\r\t\x1f\x7f", "\u2028\u2029 \u2027\u202a",
	"\xff\xfe", "caf\xc3", "\xe2\x80", "\ufffd", "Grüße 世界 🎉", "line 1\n---\nline 3\n", "\xed\xa0\x80", "\xc0\xaf"}

func TestAppendJSONSameAsEncodingJSON(t *testing.T) {
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.5, 1e20, 1e21, 123456789e13, 1e-6, 9.99999e-7, 1e-7, -1e-9, 5e-324,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1.0000000000000002, 3.14159e100, 2.5e-100}
	for _, s := range jsonStrings {
		checkSameJSON(t, s)
		checkSameJSON(t, map[string]any{s: s, "k" + s: []any{s}})
	}
	for _, f := range floats {
		checkSameJSON(t, f)
		checkSameJSON(t, -f)
	}
	for _, v := range []any{nil, true, false, int64(0), int64(math.MinInt64), int64(math.MaxInt64), map[string]any{}, []any{},
		map[string]any(nil), []any(nil), map[string]any{"b": nil, "a": []any{nil, map[string]any(nil)}, "": int64(1), "A": true, "ä": 1.5, "a\x00": "x"}} {
		checkSameJSON(t, v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		checkSameJSON(t, randomJSONValue(r, 0))
	}
}

func randomJSONValue(r *rand.Rand, depth int) any {
	n := 8
	if depth > 4 {
		n = 5 // scalars only
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return int64(r.Uint64())
	case 3:
		return math.Float64frombits(r.Uint64()&^(0x7ff<<52) | uint64(r.IntN(0x7ff))<<52) // finite
	case 4:
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		if r.IntN(2) == 0 {
			return jsonStrings[r.IntN(len(jsonStrings))] + string(b)
		}
		return string(b)
	case 5, 6:
		m := map[string]any{}
		for range r.IntN(6) {
			m[jsonStrings[r.IntN(len(jsonStrings))]+string(rune('a'+r.IntN(26)))] = randomJSONValue(r, depth+1)
		}
		return m
	default:
		l := make([]any, r.IntN(5))
		for i := range l {
			l[i] = randomJSONValue(r, depth+1)
		}
		return l
	}
}

// TestAppendJSONLeavesOthers: what appendJSON does not write goes to
// encoding/json (jsonDoc), with its output or its error.
func TestAppendJSONLeavesOthers(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	deep := any("leaf")
	for range maxJSONDepth + 1 {
		deep = []any{deep}
	}
	for _, v := range []any{1, int32(1), uint64(1), float32(1.5), map[string]string{"a": "b"}, []string{"a"}, math.NaN(), math.Inf(1),
		map[string]any{"a": []any{math.Inf(-1)}}, json.Number("1"), cyclic, deep} {
		if _, ok := appendJSON(nil, map[string]any{"v": v}, 0); ok {
			t.Errorf("appendJSON took %#v, want it left to encoding/json", v)
		}
	}
	// jsonDoc gives encoding/json's text for them, or its error.
	for _, o := range []Object{{"v": 1, "w": map[string]string{"a": "<&>"}}, {"v": float32(0.1)}} {
		got, err := jsonDoc(o)
		if err != nil {
			t.Fatal(err)
		}
		if want := encodingJSON(t, o); !bytes.Equal(got, want) {
			t.Errorf("jsonDoc(%v) = %s, want %s", o, got, want)
		}
	}
	if _, err := jsonDoc(Object{"self": cyclic}); err == nil {
		t.Error("jsonDoc of a cyclic map: no error")
	}
	// Past the nesting bound: refused, as Encode refuses it.
	if _, err := jsonDoc(Object{"deep": deep}); !errors.Is(err, errdef.ErrLimitExceeded) || !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("jsonDoc of an object nested %d levels deep: %v", maxJSONDepth+2, err)
	}
}

// FuzzAppendJSON: appendJSON writes what encoding/json writes, for any
// key, string, integer and finite float.
func FuzzAppendJSON(f *testing.F) {
	f.Add("key", "value", int64(1), 1.5)
	f.Add("<a&b>", "\u2028\u007f\ufffe\n\b\x00", int64(-1<<63), 1e21)
	f.Add("\xff", "\xc2\x85\xe2\x80", int64(0), 1e-7)
	f.Fuzz(func(t *testing.T, key, value string, n int64, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if _, ok := appendJSON(nil, x, 0); ok {
				t.Fatal("appendJSON took a non-finite number")
			}
			return
		}
		checkSameJSON(t, map[string]any{key: value, value: []any{n, x, key, nil, true, map[string]any{}}})
	})
}
