package manifests_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// TestEncodeStreamSameAsEncode: a Stream writes the very bytes Encode and
// EncodeJSON write, for small documents gathered into chunks and for
// documents larger than a chunk (a CRD), through writers that take any
// amount per Write.
func TestEncodeStreamSameAsEncode(t *testing.T) {
	objs, err := manifests.Decode("platform", platformManifest(40))
	if err != nil {
		t.Fatal(err)
	}
	big := map[string]any{}
	for i := range 3000 {
		big[strings.Repeat("k", 1+i%40)+string(rune('a'+i%26))+strings.Repeat("x", i%7)] = strings.Repeat("description of a field. ", 1+i%9)
	}
	objs = append(objs[:5], append([]manifests.Object{{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "big.example.com"}, "spec": big}}, objs[5:]...)...)
	for _, asJSON := range []bool{false, true} {
		var want bytes.Buffer
		encode := manifests.Encode
		if asJSON {
			encode = manifests.EncodeJSON
		}
		if err := encode(&want, objs); err != nil {
			t.Fatal(err)
		}
		if want.Len() < 3*64<<10 {
			t.Fatalf("stream of %d bytes: too small to span several chunks", want.Len())
		}
		s, err := manifests.EncodeStream(objs, asJSON)
		if err != nil {
			t.Fatal(err)
		}
		if s.Len() != want.Len() {
			t.Errorf("json %v: Len = %d, want %d", asJSON, s.Len(), want.Len())
		}
		for _, w := range []interface {
			Write([]byte) (int, error)
			Bytes() []byte
		}{&bytes.Buffer{}, &shortWriter{}} {
			n, err := s.WriteTo(w)
			if err != nil || n != int64(want.Len()) {
				t.Fatalf("json %v: WriteTo = %d, %v, want %d", asJSON, n, err, want.Len())
			}
			if !bytes.Equal(w.Bytes(), want.Bytes()) {
				t.Errorf("json %v, %T: stream differs from Encode's", asJSON, w)
			}
			if sw, ok := w.(*shortWriter); ok && (sw.writes < 2 || sw.writes >= len(objs)/2) {
				t.Errorf("json %v: %d writes for %d documents, want small ones gathered into a few", asJSON, sw.writes, len(objs))
			}
		}
	}
}

// shortWriter keeps its writes and records their sizes.
type shortWriter struct {
	b      bytes.Buffer
	writes int
}

func (w *shortWriter) Write(p []byte) (int, error) { w.writes++; return w.b.Write(p) }
func (w *shortWriter) Bytes() []byte               { return w.b.Bytes() }

func TestEncodeStreamErrors(t *testing.T) {
	objs := []manifests.Object{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "fine"}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "nan", "namespace": "x"}, "v": math.NaN()},
	}
	for _, asJSON := range []bool{false, true} {
		if s, err := manifests.EncodeStream(objs, asJSON); err == nil || s != nil || !strings.Contains(err.Error(), "encoding object 1 (/ConfigMap/x/nan)") {
			t.Errorf("json %v: EncodeStream = %v, %v, want no stream and an error naming object 1", asJSON, s, err)
		}
		s, err := manifests.EncodeStream(objs[:1], asJSON)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.WriteTo(failingWriter{}); !errors.Is(err, errWrite) {
			t.Errorf("json %v: WriteTo err = %v, want the writer's error", asJSON, err)
		}
	}
}

// TestEncodeJSONSameAsEncodingJSON: EncodeJSON writes each decoded object
// of the platform chart and of kube-prometheus-stack (its CRDs) as
// json.Encoder without HTML escaping does.
func TestEncodeJSONSameAsEncodingJSON(t *testing.T) {
	objs, err := manifests.Decode("platform", platformManifest(10))
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join("../../../../shared/fixtures/realworld/golden", "kube-prometheus-stack-default.yaml")); err == nil {
		kps, err := manifests.Decode("kps", data)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, kps...)
	} else {
		t.Logf("without kube-prometheus-stack: %v", err)
	}
	for _, o := range objs {
		var want bytes.Buffer
		want.WriteString("---\n")
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
		if got := encodeJSON(t, []manifests.Object{o}); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: EncodeJSON differs from encoding/json", manifests.Key(o))
		}
	}
}
