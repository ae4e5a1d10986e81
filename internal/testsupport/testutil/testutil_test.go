package testutil

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestDig(t *testing.T) {
	doc := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app"}}}}
	for _, tc := range []struct {
		path []any
		want any
	}{
		{[]any{"spec", "containers", 0, "name"}, "app"},
		{[]any{"spec", "containers", 1, "name"}, nil},
		{[]any{"spec", "containers", -1}, nil},
		{[]any{"spec", "nope", 0}, nil},
		{[]any{"spec", 0}, nil},
	} {
		if got := Dig(doc, tc.path...); got != tc.want {
			t.Errorf("Dig(%v) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// Concurrent writes all land, whole (go test -race checks the locking).
func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fmt.Fprintf(&b, "line %d\n", i)
			_ = b.String()
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 8 {
		t.Errorf("%d lines, want 8: %q", n, b.String())
	}
}
