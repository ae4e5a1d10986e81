package server

import "testing"

// A worker returns memory when a generation left it well above what it
// keeps, relative to that: one that keeps large caches does not pay a full
// collection and the pages' faults after every small generation.
func TestReleaseAfter(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		now, kept uint64
		want      bool
	}{
		{now: 40 * mib, kept: 20 * mib, want: false},
		{now: 84 * mib, kept: 20 * mib, want: false},
		{now: 85 * mib, kept: 20 * mib, want: true},    // 64 MiB above a small worker
		{now: 160 * mib, kept: 100 * mib, want: false}, // a small generation in a worker with caches
		{now: 200 * mib, kept: 100 * mib, want: false}, // the heap may double, as GOGC=100 lets it
		{now: 201 * mib, kept: 100 * mib, want: true},  // more: returned
		{now: 1024 * mib, kept: 100 * mib, want: true}, // a large generation's garbage
		{now: 90 * mib, kept: 100 * mib, want: false},  // below what it kept (caches evicted)
	} {
		if got := releaseAfter(c.now, c.kept); got != c.want {
			t.Errorf("releaseAfter(%d MiB, kept %d MiB) = %v, want %v", c.now/mib, c.kept/mib, got, c.want)
		}
	}
}
