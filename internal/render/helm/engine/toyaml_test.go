package engine

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"sigs.k8s.io/yaml"
)

// sameAsYAMLMarshal fails t unless marshalYAML gives yaml.Marshal's bytes,
// or fails as it does. yaml.v2 orders some keys of one map differently
// from run to run ("01", "0A" and "1": its natural order is not a strict
// order, and it sorts Go's randomly ordered map keys), so bytes that
// differ must be what one of further yaml.Marshal runs gives.
func sameAsYAMLMarshal(t *testing.T, v any) {
	t.Helper()
	want, wantErr := yaml.Marshal(v)
	got, err := marshalYAML(v)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("marshalYAML(%#v) = %q, %v; yaml.Marshal: %q, %v", v, got, err, want, wantErr)
	}
	for i := 0; !bytes.Equal(got, want); i++ {
		if i == 200 {
			t.Fatalf("marshalYAML(%#v) = %q; yaml.Marshal: %q", v, got, want)
		}
		want, _ = yaml.Marshal(v)
	}
}

func TestMarshalYAMLSameAsYAMLMarshal(t *testing.T) {
	cyclic := map[string]any{"a": 1}
	cyclic["self"] = cyclic
	for name, v := range map[string]any{
		"values": common.Values{"image": map[string]any{"repository": "nginx", "tag": "1.27", "pullPolicy": nil},
			"replicas": float64(3), "resources": map[string]any{"limits": map[string]any{"cpu": 0.5, "memory": "128Mi"}},
			"tolerations": []any{}, "nodeSelector": map[string]any{}, "args": []any{"--a", "--b=1"}, "enabled": true},
		"yaml 1.1 words":      map[string]any{"yes": "no", "on": "off", "y": "n", "null": "~", "true": "false", "x": "1e3", "o": "0o17"},
		"numbers":             []any{0, -1, int64(math.MaxInt64), int64(math.MinInt64), 1.5, math.Copysign(0, -1), 1e14, 1e15, 1e20, 1e21, 1.5e300, 5e-324, 1e-7, 123456789.125, float64(1 << 53), float64(1<<63) * 2},
		"strings":             []any{"", " ", "a: b", "- x", "#c", "'q'", "\"d\"", "multi\nline\n", "tab\there", "cr\r", "é ü 中文 🎉", "\u2028\u2029", "<>&", "0123", "+1", ".5", "0x1F", "1_000", "2024-01-01", "@at", "`tick`", "{x}", "[y]", "*a", "&b", "!t", "%p", "|", ">"},
		"merge key":           map[string]any{"<<": map[string]any{"a": 1}, "b": 2},
		"string lists":        map[string]any{"keys": []string{"b", "a"}, "none": []string(nil), "empty": []string{}},
		"nil collections":     map[string]any{"l": []any(nil), "m": map[string]any(nil), "v": common.Values(nil)},
		"natural order":       map[string]any{"a10": 1, "a9": 2, "a1": 3, "B": 4, "b": 5, "1": 6, "10": 7, "2": 8, "": 9},
		"NaN":                 map[string]any{"x": math.NaN()},
		"infinity":            []any{math.Inf(1)},
		"cycle":               cyclic,
		"other types":         map[string]any{"i32": int32(1), "u": uint(2), "f32": float32(0.1), "s": struct{ A int }{1}},
		"plain":               "text",
		"nil":                 nil,
		"deep":                deep(150),
		"long string":         string(bytes.Repeat([]byte("abc "), 5000)),
		"large int as float":  float64(9007199254740993),
		"negative fractional": -0.000001,
	} {
		t.Run(name, func(t *testing.T) { sameAsYAMLMarshal(t, v) })
	}
	// One value each: a string the round trip changes must not hide
	// another's behind its fallback.
	for _, s := range []string{"del\x7f", "nel\u0085", "bom\ufeff", "c1\u0090", "nul\x00", "bell\x07", "esc\x1b",
		"invalid\xff", "\xc3", "\ufffe", "\U0010ffff", "\ud7ff\ue000", "tab\tcr\r"} {
		t.Run(strconv.Quote(s), func(t *testing.T) {
			sameAsYAMLMarshal(t, s)
			sameAsYAMLMarshal(t, map[string]any{s: s})
		})
	}
}

func deep(n int) any {
	var v any = "leaf"
	for range n {
		v = map[string]any{"d": []any{v}}
	}
	return v
}

// FuzzMarshalYAML: values built from the input (maps, lists, strings,
// numbers, bools, nil) marshal as yaml.Marshal marshals them.
func FuzzMarshalYAML(f *testing.F) {
	f.Add([]byte("\x05\x03ab\x02\x01c\x04\x00"))
	f.Add([]byte("\x06\x02\x07\x40\x09\x21\xfb\x54\x44\x2d\x18\x03\x7f\x85"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := &fuzzBuilder{data: data}
		sameAsYAMLMarshal(t, b.value(0))
	})
}

type fuzzBuilder struct {
	data []byte
	n    int
}

func (b *fuzzBuilder) byte() byte {
	if len(b.data) == 0 {
		return 0
	}
	c := b.data[0]
	b.data = b.data[1:]
	return c
}

func (b *fuzzBuilder) str() string {
	n := int(b.byte() % 12)
	if n > len(b.data) {
		n = len(b.data)
	}
	s := string(b.data[:n])
	b.data = b.data[n:]
	return s
}

func (b *fuzzBuilder) value(depth int) any {
	if b.n++; b.n > 200 || depth > 6 {
		return b.str()
	}
	switch b.byte() % 10 {
	case 0:
		return nil
	case 1:
		return b.byte()%2 == 0
	case 2:
		return int64(int8(b.byte())) * int64(b.byte())
	case 3:
		return b.str()
	case 4:
		var u [8]byte
		for i := range u {
			u[i] = b.byte()
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(u[:]))
	case 5:
		m := map[string]any{}
		for range int(b.byte() % 5) {
			m[b.str()] = b.value(depth + 1)
		}
		return m
	case 6:
		l := []any{}
		for range int(b.byte() % 5) {
			l = append(l, b.value(depth+1))
		}
		return l
	case 7:
		return float64(int16(b.byte())<<8|int16(b.byte())) / 4
	case 8:
		return []string{b.str(), b.str()}
	default:
		v := common.Values{}
		for range int(b.byte() % 3) {
			v[b.str()] = b.value(depth + 1)
		}
		return v
	}
}
