package manifests_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// FuzzDecode: whatever a chart, a kustomization or a directory of manifests
// produces is decoded without panicking, within the structure limits; a
// refusal wraps ErrInvalidInput (and ErrLimitExceeded when a limit is hit);
// every accepted object has an apiVersion and a kind, and encoding the
// objects and decoding them again gives the same objects.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := manifests.Decode("fuzz.yaml", data)
		if err != nil {
			if objs != nil {
				t.Fatal("objects returned with an error")
			}
			if !errors.Is(err, errdef.ErrInvalidInput) {
				t.Fatalf("error without ErrInvalidInput: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if yamlfile.StructureCount(data) > manifests.MaxStreamNodes || len(objs) > manifests.MaxObjects {
			t.Fatalf("accepted %d structural characters, %d objects", yamlfile.StructureCount(data), len(objs))
		}
		for i, o := range objs {
			if a, _ := o["apiVersion"].(string); a == "" {
				t.Fatalf("object %d has no apiVersion: %v", i, o)
			}
			if k, _ := o["kind"].(string); k == "" {
				t.Fatalf("object %d has no kind: %v", i, o)
			}
		}
		var buf bytes.Buffer
		if err := manifests.Encode(&buf, objs); err != nil {
			// Only a mapping key longer than YAML readers accept (from
			// JSON, or an explicit "? " key) cannot be written at all;
			// EncodeJSON says so. Objects nested deeper than
			// MaxEncodeDepth are not written as YAML.
			if errors.Is(err, errdef.ErrLimitExceeded) && strings.Contains(err.Error(), "levels deep") {
				return
			}
			if jerr := manifests.EncodeJSON(&buf, objs); jerr == nil || !strings.Contains(jerr.Error(), "more than the 1024 YAML readers accept") {
				t.Fatalf("accepted objects do not encode: %v (EncodeJSON: %v)", err, jerr)
			}
			return
		}
		again, err := manifests.Decode("again.yaml", buf.Bytes())
		if err != nil {
			t.Fatalf("encoded objects do not decode: %v\n%s", err, buf.Bytes())
		}
		a, _ := json.Marshal(objs)
		b, _ := json.Marshal(again)
		if len(objs) == 0 && len(again) == 0 {
			return
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the objects:\n%s\n%s", a, b)
		}
		buf.Reset()
		if err := manifests.EncodeJSON(&buf, objs); err != nil {
			t.Fatalf("accepted objects do not encode as JSON: %v", err)
		}
		viaJSON, err := manifests.Decode("again.json", buf.Bytes())
		if err != nil {
			t.Fatalf("JSON-encoded objects do not decode: %v\n%s", err, buf.Bytes())
		}
		if !reflect.DeepEqual(viaJSON, objs) || !reflect.DeepEqual(viaJSON, again) {
			t.Fatalf("JSON round trip changed the objects:\n%#v\n%#v", objs, viaJSON)
		}
	})
}

const (
	seedNumbers   = "apiVersion: v1\nkind: K\nv: [1.0, -0.0, 1e3, 1e19, -9223372036854775808, 9223372036854775807, 9223372036854775808, 18446744073709551615, 1e-7, 0.1, 1e21, 0x1F, 0o17, 017, 1_000, +5, .5, 5., 1e400]\n"
	seedInf       = "apiVersion: v1\nkind: K\nv: .inf\n"
	seedNaN       = "apiVersion: v1\nkind: K\nv: [-.Inf, .NaN]\n"
	seedKeys      = "apiVersion: v1\nkind: K\ndata: {1: a, true: b, 1.5: c, 0x10: d, yes: e, 1e40: g}\n"
	seedNullKey   = "apiVersion: v1\nkind: K\ndata: {~: a}\n"
	seedUint64Key = "apiVersion: v1\nkind: K\ndata: {18446744073709551615: a}\n"
)

// decodeSeeds are the seed corpus of the Decode fuzz targets: the inputs of
// FuzzDecode and inputs for each conversion Decode makes.
var decodeSeeds = []string{
	"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\n",
	`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}`,
	"# only a comment\n---\n...\n--- |\n  text\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {n: 1.5e300, i: 9007199254740993, neg: -0}\n",
	"\xef\xbb\xbfapiVersion: v1\r\nkind: Pod\r\nmetadata:\r\n  name: x\r\n",
	"- apiVersion: v1\n  kind: ConfigMap\n- null\n",
	"a: &a [x, x]\nb: [*a, *a]\n",
	strings.Repeat("[", 100),
	"kind: ConfigMap\n",
	// Numbers: floats that are integers, out of int64's range, tiny, -0,
	// uint64, infinities and NaN (refused by the JSON conversion).
	seedNumbers,
	seedInf,
	seedNaN,
	// Keys that are not strings, and keys that become equal as strings.
	seedKeys,
	"apiVersion: v1\nkind: K\ndata: {1: a, \"1\": b}\n",
	seedNullKey,
	seedUint64Key,
	"apiVersion: v1\nkind: K\ndata: {? [a, b] : c}\n",
	// Tags, timestamps, binary (invalid UTF-8 after decoding), merge keys.
	"apiVersion: v1\nkind: K\nt: !!timestamp 2024-01-02\nu: 2024-01-02T03:04:05Z\nv: !!str 3\nw: !!float 3\nx: !!int \"3\"\n",
	"apiVersion: v1\nkind: K\nb: !!binary /w==\nk: {? !!binary /w== : v}\n",
	"apiVersion: v1\nkind: K\nbase: &b {x: 1, y: 2}\nm: {<<: *b, y: 3}\n",
	"apiVersion: v1\nkind: K\nv: \"\\x7f\\x85\\u2028\\uFFFE\\N\\_\"\n",
	// Separators with content, document ends, odd line ends.
	"--- {apiVersion: v1, kind: K}\r\r\n--- !!map\napiVersion: v1\nkind: K\n...\n--- # c\n---\tapiVersion: v1\n",
	"apiVersion: v1\nkind: K\nv: |\n  ---\n  ...\n---\n--- >\n x\n",
	"apiVersion: v1\rkind: K\r",
	"%YAML 1.1\n---\napiVersion: v1\nkind: K\n",
	"apiVersion: v1\nkind: K\n---\nkind: [\n---\napiVersion: v1\nkind: K\n",
	"apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: K}, 3]\n",
	// A key too long for YAML readers (Decode takes it from JSON).
	`{"apiVersion":"v1","kind":"K","data":{"` + strings.Repeat("k", 1100) + `":1}}`,
}

// FuzzDecodeReference: Decode gives exactly what the original implementation
// (refDecode: YAML to JSON text with sigs.k8s.io/yaml, then encoding/json,
// one document after the other) gives, objects and error messages alike.
func FuzzDecodeReference(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Add(platformManifest(3))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkReference(t, data)
	})
}

// checkReference fails t unless Decode and refDecode agree on data.
func checkReference(t testing.TB, data []byte) {
	t.Helper()
	got, gerr := manifests.Decode("in.yaml", data)
	same := func() bool {
		want, werr := refDecode("in.yaml", data)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			return false
		}
		if gerr != nil {
			return errors.Is(gerr, errdef.ErrInvalidInput) == errors.Is(werr, errdef.ErrInvalidInput) &&
				errors.Is(gerr, errdef.ErrLimitExceeded) == errors.Is(werr, errdef.ErrLimitExceeded)
		}
		return reflect.DeepEqual(got, want)
	}
	// The reference is not deterministic when YAMLToJSON turns two keys
	// of a mapping into the same string (1 and "1"): it keeps one of them
	// at random (Go's map order). Decode gives one of its answers.
	for range 50 {
		if same() {
			return
		}
	}
	want, werr := refDecode("in.yaml", data)
	t.Fatalf("Decode = %#v, %v\nreference = %#v, %v", got, gerr, want, werr)
}

// FuzzEncodeJSON: objects holding any strings as keys and values, and any
// numbers, come out of EncodeJSON as they come out of Encode, and Argo CD's
// splitter reads one document per object.
func FuzzEncodeJSON(f *testing.F) {
	f.Add("key", "value", int64(1), 1.5)
	f.Add("<a&b>", "\u0085\u007f\ufffe\n---\n", int64(-1<<63), 1e21)
	f.Add("\xff", "\xc2\x85", int64(0), math.Copysign(0, -1))
	f.Add("", "--- |", int64(1<<53+1), 5e-324)
	f.Fuzz(func(t *testing.T, key, value string, n int64, x float64) {
		objs := []manifests.Object{
			{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": value},
				"data": map[string]any{key: value, "n": n, "x": x}, "list": []any{key, value, n, x, nil, true, map[string]any{}}},
			{"apiVersion": "v1", "kind": "K" + value, "spec": map[string]any{key: []any{map[string]any{key: []any{}}}}},
		}
		var out bytes.Buffer
		err := manifests.EncodeJSON(&out, objs)
		var y bytes.Buffer
		yerr := manifests.Encode(&y, objs)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if err == nil || yerr == nil || out.Len() != 0 {
				t.Fatalf("non-finite number: EncodeJSON err = %v (output %q), Encode err = %v", err, out.Bytes(), yerr)
			}
			return
		}
		if err != nil {
			if !errors.Is(err, errdef.ErrInvalidInput) || yerr == nil || len(key) <= 170 /* 6 characters a byte at most, as JSON */ {
				t.Fatalf("EncodeJSON: %v (Encode: %v)", err, yerr)
			}
			return // a key too long for YAML readers
		}
		if yerr != nil {
			t.Fatalf("Encode: %v, EncodeJSON fine", yerr)
		}
		checkSameAsEncode(t, objs, out.Bytes())
	})
}
