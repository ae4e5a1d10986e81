package manifests_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

func keys(objs []manifests.Object) string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, manifests.Key(o))
	}
	return strings.Join(ks, " ")
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"single", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n", "/ConfigMap//a"},
		{"multi with leading separator and comments", "# header\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# only a comment\n---\n\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  namespace: ns\n---\n",
			"/ConfigMap//a apps/Deployment/ns/d"},
		{"separator with trailing comment", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n--- # next\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n", "/ConfigMap//a /ConfigMap//b"},
		{"separator with content", "--- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n", "/ConfigMap//a"},
		{"document end marker", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n...\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n", "/ConfigMap//a /ConfigMap//b"},
		{"CRLF", "apiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: a\r\n---\r\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: b\r\n", "/ConfigMap//a /ConfigMap//b"},
		{"BOM", "\xef\xbb\xbfapiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n", "/ConfigMap//a"},
		{"dashes inside a block scalar", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: |\n    ---\n    ----\n", "/ConfigMap//a"},
		{"JSON object", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, "/ConfigMap//a"},
		{"JSON stream", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}` + "\n" + `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`, "/ConfigMap//a /Secret//s"},
		{"JSON array", `[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}]`, "/ConfigMap//a /Secret//s"},
		{"v1 List", "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: a}\n  - apiVersion: v1\n    kind: List\n    items:\n      - apiVersion: v1\n        kind: Secret\n        metadata: {name: s}\n", "/ConfigMap//a /Secret//s"},
		{"empty List", "apiVersion: v1\nkind: List\nitems: []\n", ""},
		{"empty", "", ""},
		{"comments only", "# nothing\n# here\n", ""},
		{"grouped kind", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: m\n  namespace: x\n", "monitoring.coreos.com/ServiceMonitor/x/m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := manifests.Decode("in.yaml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(objs); got != tc.want {
				t.Errorf("keys = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecodeValueTypes(t *testing.T) {
	objs, err := manifests.Decode("in.yaml", []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: a
spec:
  int: 3
  big: 9007199254740993
  float: 1.5
  exp: 1e3
  bool: true
  yes11: yes
  quoted: "on"
  nothing: ~
  list: [1, "2"]
  date: 2024-01-02
  utf8: "Grüße 🚀"
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"int": int64(3), "big": int64(9007199254740993), "float": 1.5, "exp": int64(1000) /* YAML 1e3 is written to JSON as 1000 */, "bool": true,
		// sigs.k8s.io/yaml semantics (as kubectl and Argo CD): YAML 1.1 booleans.
		"yes11": true, "quoted": "on", "nothing": nil, "list": []any{int64(1), "2"},
		"date": "2024-01-02", "utf8": "Grüße 🚀",
	}
	if got := objs[0]["spec"]; !reflect.DeepEqual(got, want) {
		t.Errorf("spec = %#v\nwant   %#v", got, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		msg      []string
	}{
		{"no kind", "apiVersion: v1\nmetadata:\n  name: a\n", []string{"bad.yaml: document 1:", "no kind"}},
		{"no apiVersion nor kind", "a: 1\n", []string{"no apiVersion and no kind"}},
		{"second document", "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\n", []string{"document 2", "no kind"}},
		{"index ignores leading separator", "---\napiVersion: v1\n", []string{"document 1:"}},
		{"invalid YAML", "apiVersion: v1\nkind: ConfigMap\n---\nkind: [\n", []string{"document 2", "invalid YAML", "line 4"}},
		{"scalar document", "just a string\n", []string{"document 1", "is a string, not an object"}},
		{"list of scalars", "- 1\n- 2\n", []string{"item 0", "not an object"}},
		{"List of non-objects", "apiVersion: v1\nkind: List\nitems: [1]\n", []string{"item 0"}},
		{"invalid JSON", `{"apiVersion": "v1", "kind": }`, []string{"bad.yaml: document 1"}},
		{"kind not a string", "apiVersion: v1\nkind: 3\n", []string{"no kind"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manifests.Decode("bad.yaml", []byte(tc.in))
			if !errors.Is(err, errdef.ErrInvalidInput) {
				t.Fatalf("err = %v, want ErrInvalidInput", err)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("err = %v, want it to contain %q", err, m)
				}
			}
		})
	}
}

func TestEncode(t *testing.T) {
	objs := []manifests.Object{
		{"kind": "ConfigMap", "apiVersion": "v1", "metadata": map[string]any{"name": "a"}, "data": map[string]any{"z": "1", "a": "Grüße"}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "num": int64(9007199254740993)},
	}
	var b bytes.Buffer
	if err := manifests.Encode(&b, objs); err != nil {
		t.Fatal(err)
	}
	want := "---\napiVersion: v1\ndata:\n  a: Grüße\n  z: \"1\"\nkind: ConfigMap\nmetadata:\n  name: a\n" +
		"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nnum: 9007199254740993\n"
	if b.String() != want {
		t.Errorf("Encode =\n%s\nwant\n%s", b.String(), want)
	}
	back, err := manifests.Decode("out", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, objs) {
		t.Errorf("round trip = %#v\nwant %#v", back, objs)
	}
}

// TestEncodeYAMLCharacters: characters that a YAML stream may not hold raw
// (which Encode's YAML reader used to refuse, or read as a line break) come
// back as they were.
func TestEncodeYAMLCharacters(t *testing.T) {
	objs := []manifests.Object{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"},
		"data": map[string]any{"del\u007f": "a\u007fb", "nel\u0085": "a\u0085b", "c1": "\u0080\u009f", "non": "\ufffe\uffff", "ls": "\u2028"}}}
	var b bytes.Buffer
	if err := manifests.Encode(&b, objs); err != nil {
		t.Fatal(err)
	}
	back, err := manifests.Decode("out", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, objs) {
		t.Errorf("round trip = %#v\nwant %#v\n%s", back, objs, b.Bytes())
	}
}

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		o    manifests.Object
		want string
	}{
		{manifests.Object{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "x"}}, "/Namespace//x"},
		{manifests.Object{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d", "namespace": "n"}}, "apps/Deployment/n/d"},
		{manifests.Object{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "r"}}, "rbac.authorization.k8s.io/ClusterRole//r"},
		{manifests.Object{"kind": "Weird"}, "/Weird//"},
	} {
		if got := manifests.Key(tc.o); got != tc.want {
			t.Errorf("Key(%v) = %q, want %q", tc.o, got, tc.want)
		}
	}
}

func TestDeepCopy(t *testing.T) {
	objs := []manifests.Object{{"kind": "ConfigMap", "data": map[string]any{"a": "1"}, "list": []any{map[string]any{"x": 1}}}}
	c := manifests.DeepCopy(objs)
	c[0]["data"].(map[string]any)["a"] = "2"
	c[0]["list"].([]any)[0].(map[string]any)["x"] = 2
	if objs[0]["data"].(map[string]any)["a"] != "1" || objs[0]["list"].([]any)[0].(map[string]any)["x"] != 1 {
		t.Fatalf("the copy shares structure: %v", objs)
	}
	var none any
	if manifests.DeepCopy(none) != nil {
		t.Error("nil is not copied as nil")
	}
	if v := manifests.DeepCopy(any("s")); v != "s" {
		t.Errorf("a scalar: %v", v)
	}
}
