package cmpservice

import (
	"os"
	"path/filepath"
	"testing"
)

// A directory goes back to the pool only empty and as it was made; the pool
// keeps at most max.
func TestStreamDirsKeepOnlyEmptiedDirectories(t *testing.T) {
	d := &streamDirs{parent: t.TempDir(), max: 1}
	a, err := d.get()
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.get()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(a, "x", "y"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a, "x", "y", "f"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.put(a)
	d.put(b) // one more than max: removed
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Fatalf("a directory beyond max is kept: %v", err)
	}
	if got, _ := d.get(); got != a {
		t.Fatalf("get = %s, want the kept %s", got, a)
	}
	if entries, err := os.ReadDir(a); err != nil || len(entries) != 0 {
		t.Fatalf("kept directory holds %v (%v)", entries, err)
	}
	// Its mode changed (by whatever ran in it): not reused.
	if err := os.Chmod(a, 0o755); err != nil {
		t.Fatal(err)
	}
	d.put(a)
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatalf("a directory no longer 0700 is kept: %v", err)
	}
	if len(d.free) != 0 {
		t.Fatalf("free %v", d.free)
	}
}
