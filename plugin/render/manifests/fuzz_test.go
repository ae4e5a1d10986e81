package manifests_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/render/manifests"
)

// FuzzDecode: whatever a chart, a kustomization or a directory of manifests
// produces is decoded without panicking, within the structure limits; a
// refusal wraps ErrInvalidInput (and ErrLimitExceeded when a limit is hit);
// every accepted object has an apiVersion and a kind, and encoding the
// objects and decoding them again gives the same objects.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\n",
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}`,
		"# only a comment\n---\n...\n--- |\n  text\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {n: 1.5e300, i: 9007199254740993, neg: -0}\n",
		"\xef\xbb\xbfapiVersion: v1\r\nkind: Pod\r\nmetadata:\r\n  name: x\r\n",
		"- apiVersion: v1\n  kind: ConfigMap\n- null\n",
		"a: &a [x, x]\nb: [*a, *a]\n",
		strings.Repeat("[", 100),
		"kind: ConfigMap\n",
	} {
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
		if manifests.StructureCount(data) > manifests.MaxStreamNodes || len(objs) > manifests.MaxObjects {
			t.Fatalf("accepted %d structural characters, %d objects", manifests.StructureCount(data), len(objs))
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
			t.Fatalf("accepted objects do not encode: %v", err)
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
	})
}
