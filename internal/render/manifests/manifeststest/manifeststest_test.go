package manifeststest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

func obj(kind, name string, data map[string]any) manifests.Object {
	o := manifests.Object{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name}}
	if data != nil {
		o["data"] = data
	}
	return o
}

func TestDiffEqualIgnoresOrderAndNumberTypes(t *testing.T) {
	got := []manifests.Object{
		obj("Secret", "s", nil),
		obj("ConfigMap", "a", map[string]any{"n": int64(3), "f": 1.0, "l": []any{int64(1)}}),
	}
	want := []manifests.Object{
		obj("ConfigMap", "a", map[string]any{"n": 3.0, "f": int64(1), "l": []any{1}}),
		obj("Secret", "s", nil),
	}
	if d := Diff(got, want); d != "" {
		t.Errorf("Diff = %q, want equal", d)
	}
	Equal(t, got, want)
}

func TestDiffReports(t *testing.T) {
	long := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		long[k] = "same"
	}
	changed := map[string]any{}
	for k, v := range long {
		changed[k] = v
	}
	changed["h"] = "other"
	want := []manifests.Object{obj("ConfigMap", "a", long), obj("ConfigMap", "gone", nil), obj("Secret", "dup", nil), obj("Secret", "dup", nil)}
	got := []manifests.Object{obj("ConfigMap", "a", changed), obj("ConfigMap", "new", nil)}
	d := Diff(got, want)
	for _, s := range []string{
		"duplicate key in want: /Secret//dup",
		"missing object /ConfigMap//gone:\n- apiVersion: v1",
		"unexpected object /ConfigMap//new:\n+ apiVersion: v1",
		"object /ConfigMap//a differs:",
		"-   h: same\n+   h: other",
		"  ...\n", // common lines far from the change are elided
	} {
		if !strings.Contains(d, s) {
			t.Errorf("Diff lacks %q:\n%s", s, d)
		}
	}
	if strings.Contains(d, "a: same") {
		t.Errorf("Diff shows common lines far from the change:\n%s", d)
	}
}

// Equal must fail the test on a difference.
func TestEqualFails(t *testing.T) {
	ft := &fakeT{TB: t}
	Equal(ft, []manifests.Object{obj("ConfigMap", "a", nil)}, []manifests.Object{obj("ConfigMap", "b", nil)})
	if !ft.failed {
		t.Error("Equal did not fail on different sets")
	}
	ft = &fakeT{TB: t}
	Equal(ft, nil, []manifests.Object{})
	if ft.failed {
		t.Error("Equal failed on two empty sets")
	}
}

type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }
func (f *fakeT) Fatal(...any)          { f.failed = true }

func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "golden.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Equal(t, ReadFile(t, p), []manifests.Object{obj("Secret", "s", nil), obj("ConfigMap", "a", nil)})
}
