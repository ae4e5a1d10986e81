package lru_test

import (
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/lru"
)

// The least recently used entry goes first, each entry counts at least
// minCost, and an entry alone over the bound is never kept and drops
// nothing.
func TestBoundAndOrder(t *testing.T) {
	c := lru.New[string, int](30, 10)
	c.Put("a", 1, 1)
	c.Put("b", 2, 5)
	c.Put("c", 3, 10)
	if c.Len() != 3 || c.Size() != 30 {
		t.Fatalf("%d entries counted at %d, want 3 at 30 (each at least 10)", c.Len(), c.Size())
	}
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("a: %v, %v", v, ok)
	}
	c.Put("d", 4, 10) // b is the least recently used now
	if _, ok := c.Peek("b"); ok {
		t.Error("b kept, a used after it was dropped")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.Peek(k); !ok {
			t.Errorf("%s dropped", k)
		}
	}
	if got := c.Put("a", 9, 1); got != 1 {
		t.Errorf("a put again: %d, want the kept 1", got)
	}
	c.Put("huge", 5, 31)
	if _, ok := c.Peek("huge"); ok || c.Len() != 3 {
		t.Errorf("an entry over the bound: kept %v, %d entries left", ok, c.Len())
	}
	// c is the least recently used: grown past the bound, it goes itself.
	c.Resize("c", func(v int) (int64, bool) { return 20, v == 3 })
	if c.Size() > 30 || c.Len() != 2 {
		t.Errorf("after c grew: %d entries counted at %d, want 2 within 30", c.Len(), c.Size())
	}
	if _, ok := c.Peek("c"); ok {
		t.Error("c, the least recently used, kept after it grew past the bound")
	}
}
