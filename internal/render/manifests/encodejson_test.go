package manifests_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

func encodeJSON(t testing.TB, objs []manifests.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := manifests.EncodeJSON(&b, objs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestEncodeJSON(t *testing.T) {
	objs := []manifests.Object{
		{"kind": "ConfigMap", "apiVersion": "v1", "metadata": map[string]any{"name": "a"},
			"data": map[string]any{"z": "1", "a": "Grüße <b>&amp;</b>", "multi": "line 1\n---\nline 3\n"}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "num": int64(9007199254740993),
			"f": 1.5, "big": 1e21, "small": 1e-7, "list": []any{true, nil, int64(-1), map[string]any{}}},
	}
	got := string(encodeJSON(t, objs))
	want := `---
{"apiVersion":"v1","data":{"a":"Grüße <b>&amp;</b>","multi":"line 1\n---\nline 3\n","z":"1"},"kind":"ConfigMap","metadata":{"name":"a"}}
---
{"apiVersion":"v1","big":1e+21,"f":1.5,"kind":"Secret","list":[true,null,-1,{}],"metadata":{"name":"s"},"num":9007199254740993,"small":1e-7}
`
	if got != want {
		t.Errorf("EncodeJSON =\n%s\nwant\n%s", got, want)
	}
	back, err := manifests.Decode("out", []byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, objs) {
		t.Errorf("round trip = %#v\nwant %#v", back, objs)
	}

	var empty bytes.Buffer
	if err := manifests.EncodeJSON(&empty, nil); err != nil || empty.Len() != 0 {
		t.Errorf("EncodeJSON(nil) = %q, %v; want nothing", empty.String(), err)
	}
}

// TestEncodeJSONYAMLCharacters: characters a YAML stream may not hold (or
// reads as a line break) are escaped, in keys and values, and everything
// else that YAML treats specially survives.
func TestEncodeJSONYAMLCharacters(t *testing.T) {
	odd := []string{"\u007f", "\u0080", "\u0085", "\u009f", "\ufffe", "\uffff", "\u2028", "\u2029", "\u00a0", "\ufeff", "\u00e9\u00c2",
		"\x00", "\t", "\r\n", "\n--- |\n", "# x", "key: value", "'\"\\", "\U0010ffff", "ï¿½", "\xff\xc2"}
	var objs []manifests.Object
	for i, s := range odd {
		objs = append(objs, manifests.Object{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": string(rune('a' + i))}, "data": map[string]any{"v": s, "k" + s: "x" + s}})
	}
	out := encodeJSON(t, objs)
	for _, esc := range []string{`\u007f`, `\u0080`, `\u0085`, `\u009f`, `\ufffe`, `\uffff`, `\u2028`, `\u2029`} {
		if !bytes.Contains(out, []byte(esc)) {
			t.Errorf("output lacks %s:\n%s", esc, out)
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2*len(objs) {
		t.Fatalf("%d lines for %d objects:\n%s", len(lines), len(objs), out)
	}
	for i, l := range lines {
		if (i%2 == 0) != (l == "---") || (i%2 == 1 && !strings.HasPrefix(l, "{")) {
			t.Fatalf("line %d = %q, want separators and JSON objects alternating", i+1, l)
		}
	}
	checkSameAsEncode(t, objs, out)
}

// checkSameAsEncode fails unless the stream out (EncodeJSON of objs) decodes
// to what Encode's stream of objs decodes to and to what encoding/json reads
// from json.Marshal(objs), both with Decode and with the splitter Argo CD's
// cmp server uses.
func checkSameAsEncode(t testing.TB, objs []manifests.Object, out []byte) {
	t.Helper()
	var y bytes.Buffer
	if err := manifests.Encode(&y, objs); err != nil {
		t.Fatal(err)
	}
	want, err := manifests.Decode("yaml", y.Bytes())
	if err != nil {
		t.Fatalf("Encode output does not decode: %v", err)
	}
	if j, _ := json.Marshal(objs); len(objs) > 0 { // a JSON array: decoded by encoding/json
		viaJSON, err := manifests.Decode("json", j)
		if err != nil || !reflect.DeepEqual(viaJSON, want) {
			t.Fatalf("Encode output decodes to\n%#v\nencoding/json reads\n%#v (%v)", want, viaJSON, err)
		}
	}
	got, err := manifests.Decode("json", out)
	if err != nil {
		t.Fatalf("EncodeJSON output does not decode: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EncodeJSON decodes to\n%#v\nEncode to\n%#v", got, want)
	}
	split := argoSplit(t, out)
	if len(split) != len(want) {
		t.Fatalf("Argo CD's splitter reads %d documents, want %d", len(split), len(want))
	}
	for i, raw := range split {
		o, err := manifests.Decode("split", raw)
		if err != nil || len(o) != 1 || !reflect.DeepEqual(o[0], want[i]) {
			t.Fatalf("document %d as Argo CD splits it = %s (%v), want %#v", i, raw, err, want[i])
		}
	}
}

// argoSplit splits a stream as Argo CD's cmp server does (gitops-engine
// kube.SplitYAMLToString): a YAMLOrJSONDecoder decoding into
// runtime.RawExtension, whose Raw is each document as JSON.
func argoSplit(t testing.TB, stream []byte) [][]byte {
	t.Helper()
	d := kubeyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	var out [][]byte
	for {
		var ext runtime.RawExtension
		if err := d.Decode(&ext); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("Argo CD's splitter: %v\n%s", err, stream)
		}
		if r := bytes.TrimSpace(ext.Raw); len(r) > 0 && !bytes.Equal(r, []byte("null")) {
			out = append(out, r)
		}
	}
}

// TestEncodeJSONLongKeys: YAML readers refuse implicit keys over 1024
// characters, so an object with a longer key is refused; long values and
// long keys of many bytes but fewer characters are fine.
func TestEncodeJSONLongKeys(t *testing.T) {
	obj := func(key string) manifests.Object {
		return manifests.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"},
			"data": map[string]any{key: strings.Repeat("v", 5000)}, "list": []any{strings.Repeat("w", 5000)}}
	}
	for _, tc := range []struct {
		key   string
		chars int // of the key as JSON, quotes included
	}{
		{strings.Repeat("k", 1022), 1024},
		{strings.Repeat("k", 1023), 1025},
		{strings.Repeat("\u00e9", 1022), 1024}, // 2044 bytes
		{strings.Repeat("\u00e9", 1023), 1025},
		{strings.Repeat("\u0085", 170), 1022}, // escaped as \u0085: 6 characters each
		{strings.Repeat("\u0085", 171), 1028},
		{strings.Repeat(`"`, 511), 1024}, // escaped as \"
		{strings.Repeat(`"`, 512), 1026},
	} {
		objs := []manifests.Object{obj("short"), obj(tc.key)}
		var out bytes.Buffer
		err := manifests.EncodeJSON(&out, objs)
		if tc.chars <= 1024 {
			if err != nil {
				t.Errorf("key of %d characters as JSON: %v", tc.chars, err)
				continue
			}
			if n := bytes.Count(out.Bytes(), []byte("---\n{")); n != 2 {
				t.Errorf("key of %d characters as JSON: %d JSON documents, want 2", tc.chars, n)
			}
			checkSameAsEncode(t, objs, out.Bytes())
			continue
		}
		want := fmt.Sprintf("encoding object 1 (/ConfigMap//a): a mapping key of %d characters as JSON, more than the 1024 YAML readers accept", tc.chars)
		if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), want) || out.Len() != 0 {
			t.Errorf("key of %d characters as JSON: err = %v, output %d bytes; want ErrInvalidInput, %q and no output", tc.chars, err, out.Len(), want)
		}
		// Why: the YAML reader behind sigs.k8s.io/yaml (Argo CD, kubectl,
		// Decode) refuses it, and Encode fails too.
		j, _ := json.Marshal(map[string]any{tc.key: 1})
		if _, err := yaml.YAMLToJSON(j); err == nil {
			t.Errorf("the YAML reader accepts a key of %d characters as JSON", tc.chars)
		}
		if err := manifests.Encode(io.Discard, objs); err == nil {
			t.Errorf("Encode accepts a key of %d characters as JSON", tc.chars)
		}
	}
}

func TestEncodeJSONErrors(t *testing.T) {
	objs := []manifests.Object{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "fine"}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "nan", "namespace": "x"}, "v": math.NaN()},
	}
	var b bytes.Buffer
	err := manifests.EncodeJSON(&b, objs)
	if err == nil || !strings.Contains(err.Error(), "encoding object 1 (/ConfigMap/x/nan)") {
		t.Errorf("err = %v, want it to name object 1", err)
	}
	if b.Len() != 0 {
		t.Errorf("wrote %q on error, want nothing", b.String())
	}
	if err := manifests.EncodeJSON(failingWriter{}, objs[:1]); !errors.Is(err, errWrite) {
		t.Errorf("err = %v, want the writer's error", err)
	}
}

var errWrite = errors.New("write failed")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

// TestEncodeJSONPlatform: the objects of a large chart go through EncodeJSON
// as through Encode, and Argo CD's splitter reads them in the same order.
func TestEncodeJSONPlatform(t *testing.T) {
	objs, err := manifests.Decode("platform", platformManifest(40))
	if err != nil {
		t.Fatal(err)
	}
	out := encodeJSON(t, objs)
	if n := bytes.Count(out, []byte("---\n{")); n != len(objs) {
		t.Errorf("%d JSON documents, want %d", n, len(objs))
	}
	checkSameAsEncode(t, objs, out)
}
