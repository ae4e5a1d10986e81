package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
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

// CPUTime counts the work of f, not the time f waits: a spin of 50 ms of
// CPU counts, a sleep of 200 ms does not (on Linux, where it is the
// thread's CPU time).
func TestCPUTime(t *testing.T) {
	spin := CPUTime(func() {
		for start := threadCPU(); threadCPU()-start < 50*time.Millisecond; {
		}
	})
	if spin < 50*time.Millisecond {
		t.Errorf("a spin of 50 ms of CPU counted %v", spin)
	}
	if runtime.GOOS != "linux" {
		t.Skipf("%s: the thread's CPU time is not available, CPUTime is the wall time", runtime.GOOS)
	}
	slept := CPUTime(func() { time.Sleep(200 * time.Millisecond) })
	if slept >= 100*time.Millisecond {
		t.Errorf("a sleep of 200 ms counted %v of CPU", slept)
	}
	t.Logf("spin %v, sleep %v", spin, slept)
}

// ProcessCPUTime counts the work of the goroutines f starts too.
func TestProcessCPUTime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("%s: the process's CPU time is not available, ProcessCPUTime is the wall time", runtime.GOOS)
	}
	got := ProcessCPUTime(func() {
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				runtime.LockOSThread()
				for start := threadCPU(); threadCPU()-start < 50*time.Millisecond; {
				}
			})
		}
		wg.Wait()
	})
	if got < 100*time.Millisecond {
		t.Errorf("two goroutines spinning 50 ms of CPU each counted %v", got)
	}
}
