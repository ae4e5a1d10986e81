package manifests_test

import (
	"bytes"
	"math"
	"sync/atomic"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

func TestEqual(t *testing.T) {
	kept := func() manifests.Object {
		return manifests.Object{"apiVersion": "v1", "kind": "ConfigMap", "n": int64(1), "f": 1.5, "z": 0.0, "b": true, "null": nil,
			"list": []any{"a", map[string]any{"x": int64(2)}}, "empty": map[string]any{}, "none": []any{}}
	}
	if !manifests.Equal(kept(), kept()) {
		t.Fatal("equal copies differ")
	}
	for name, change := range map[string]func(o manifests.Object){
		"int as float":       func(o manifests.Object) { o["n"] = 1.0 },
		"int as int":         func(o manifests.Object) { o["n"] = 1 },
		"float value":        func(o manifests.Object) { o["f"] = 1.25 },
		"negative zero":      func(o manifests.Object) { o["z"] = math.Copysign(0, -1) },
		"bool":               func(o manifests.Object) { o["b"] = false },
		"null as string":     func(o manifests.Object) { o["null"] = "" },
		"typed nil map":      func(o manifests.Object) { o["null"] = map[string]any(nil) },
		"key added":          func(o manifests.Object) { o["new"] = "x" },
		"key removed":        func(o manifests.Object) { delete(o, "b") },
		"key renamed":        func(o manifests.Object) { delete(o, "b"); o["c"] = true },
		"nested value":       func(o manifests.Object) { o["list"].([]any)[1].(map[string]any)["x"] = int64(3) },
		"list item added":    func(o manifests.Object) { o["list"] = append(o["list"].([]any), "b") },
		"list of strings":    func(o manifests.Object) { o["list"] = []string{"a", "b"} },
		"map of strings":     func(o manifests.Object) { o["empty"] = map[string]string{} },
		"empty map as nil":   func(o manifests.Object) { o["empty"] = map[string]any(nil) },
		"empty list as nil":  func(o manifests.Object) { o["none"] = []any(nil) },
		"uncomparable value": func(o manifests.Object) { o["f"] = []int{1} },
	} {
		o := kept()
		change(o)
		if manifests.Equal(kept(), o) {
			t.Errorf("%s: still equal", name)
		}
	}
	nan := manifests.Object{"f": math.NaN()}
	if manifests.Equal(nan, nan) {
		t.Error("NaN equal to itself: its text is an error, never a kept one")
	}
}

// A Known text is written in place of the object's encoding; an object it
// does not know, or YAML, is encoded.
func TestEncodeStreamKnown(t *testing.T) {
	a := manifests.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}
	b := manifests.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b"}}
	objs := []manifests.Object{a, b}
	for _, n := range []int{len(objs), 20} { // serial and parallel encoding
		for len(objs) < n {
			objs = append(objs, b)
		}
		var asked atomic.Int64
		known := func(o manifests.Object) ([]byte, bool) {
			asked.Add(1)
			if o["metadata"].(map[string]any)["name"] == "a" {
				return []byte(`KNOWN`), true
			}
			return nil, false
		}
		s, err := manifests.EncodeStreamKnown(objs, true, known)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		s.WriteTo(&got)
		want := "---\nKNOWN\n"
		for range objs[1:] {
			want += "---\n" + `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}` + "\n"
		}
		if got.String() != want || asked.Load() != int64(len(objs)) {
			t.Fatalf("%d objects: asked %d times, stream\n%s", len(objs), asked.Load(), got.String())
		}
		s, err = manifests.EncodeStreamKnown(objs[:1], false, known)
		if err != nil {
			t.Fatal(err)
		}
		got.Reset()
		s.WriteTo(&got)
		if bytes.Contains(got.Bytes(), []byte("KNOWN")) {
			t.Fatalf("YAML stream uses the JSON text: %s", got.String())
		}
	}
}
