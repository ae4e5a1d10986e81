package helm

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
)

// The cache holds at most its bound of CRD text, dropping the least recently
// used files first, and decodes what it does not hold.
func TestCRDCacheBound(t *testing.T) {
	text := func(i int) []byte {
		return fmt.Appendf(nil, "---\n# Source: c/crds/%d.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: k%03d.example.com\n", i, i)
	}
	size := int64(len(text(0)))
	c := NewCRDCache(3 * size)
	for i := 0; i < 3; i++ {
		if _, err := c.decode("chart c", text(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.decode("chart c", text(0)); err != nil { // 0 is now the most recent
		t.Fatal(err)
	}
	if _, err := c.decode("chart c", text(3)); err != nil { // evicts 1
		t.Fatal(err)
	}
	if len(c.m) != 3 || c.size > c.max {
		t.Fatalf("%d entries, %d bytes (bound %d)", len(c.m), c.size, c.max)
	}
	for i, held := range []bool{true, false, true, true} {
		key := sha(text(i))
		if _, ok := c.m[key]; ok != held {
			t.Errorf("file %d held: %v, want %v", i, ok, held)
		}
	}
	// A file larger than the bound is decoded, never held.
	big := append(text(9), []byte("# "+strings.Repeat("padding ", int(size)))...)
	if _, err := c.decode("chart c", big); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.m[sha(big)]; ok || c.size > c.max {
		t.Fatalf("a file over the bound was kept (%d bytes held)", c.size)
	}
	// Decoding errors are returned and nothing is kept.
	if _, err := c.decode("chart c", []byte("---\nkind: [\n")); err == nil {
		t.Fatal("no error for invalid YAML")
	}
	if len(c.m) != 3 {
		t.Fatalf("%d entries after an error", len(c.m))
	}
}

func sha(b []byte) [32]byte { return sha256.Sum256(b) }
