package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRecent(t *testing.T) {
	now := time.Unix(1000, 0)
	r := NewRecent[string, int](5 * time.Second)
	r.now = func() time.Time { return now }
	var calls atomic.Int32
	get := func() (int, error) {
		return r.Do(context.Background(), "k", func(context.Context) (int, error) { return int(calls.Add(1)), nil })
	}
	if v, _ := get(); v != 1 {
		t.Fatalf("first: %d", v)
	}
	now = now.Add(4 * time.Second)
	if v, _ := get(); v != 1 || calls.Load() != 1 {
		t.Fatalf("within the TTL: %d after %d calls", v, calls.Load())
	}
	now = now.Add(2 * time.Second)
	if v, _ := get(); v != 2 {
		t.Fatalf("after the TTL: %d, want a new call", v)
	}
}

// Concurrent callers share one call; a failure is not remembered.
func TestRecentSharesCallsNotErrors(t *testing.T) {
	r := NewRecent[string, int](time.Minute)
	var calls atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Do(context.Background(), "k", func(context.Context) (int, error) {
				calls.Add(1)
				<-release
				return 7, nil
			})
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("%d calls for 20 concurrent callers", calls.Load())
	}
	boom := errors.New("boom")
	if _, err := r.Do(context.Background(), "e", func(context.Context) (int, error) { return 0, boom }); err != boom {
		t.Fatal(err)
	}
	if v, err := r.Do(context.Background(), "e", func(context.Context) (int, error) { return 3, nil }); err != nil || v != 3 {
		t.Fatalf("after a failure: %d, %v", v, err)
	}
}

// A call that panics releases its key: once the panic is recovered (the
// render server recovers a generation's), the next caller of that key gets
// its own call at once instead of waiting for one that never ends.
func TestMemoPanicReleasesKey(t *testing.T) {
	for name, m := range map[string]*Memo[string, int]{
		"generation": {},
		"recent":     NewRecent[string, int](time.Minute),
	} {
		t.Run(name, func(t *testing.T) {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("the panic did not reach the caller")
					}
				}()
				m.Do(context.Background(), "k", func(context.Context) (int, error) { panic("boom") })
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			v, err := m.Do(ctx, "k", func(context.Context) (int, error) { return 7, nil })
			if err != nil || v != 7 {
				t.Fatalf("after a recovered panic: %d, %v; want 7 from a new call", v, err)
			}
			if v, ok := m.Get("k"); !ok || v != 7 {
				t.Fatalf("Get after the new call: %d, %v", v, ok)
			}
		})
	}
}

// A caller waiting for a call that panics tries again itself.
func TestMemoPanicWaiterRetries(t *testing.T) {
	var m Memo[string, int]
	started, release := make(chan struct{}), make(chan struct{})
	go func() {
		defer func() { recover() }()
		m.Do(context.Background(), "k", func(context.Context) (int, error) {
			close(started)
			<-release
			panic("boom")
		})
	}()
	<-started
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, err := m.Do(ctx, "k", func(context.Context) (int, error) { return 3, nil })
		if err == nil && v != 3 {
			err = errors.New("wrong value")
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it wait on the first call
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
}

// A shared Memo full of fresh entries (one tenant naming tag after tag
// within the ttl) grows no further: a new key is looked up, not remembered;
// once entries expire, new keys are remembered again.
func TestRecentBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	r := NewRecent[int, int](time.Minute)
	r.now = func() time.Time { return now }
	for i := range maxRecentEntries {
		r.Set(i, i)
	}
	var calls int
	v, err := r.Do(context.Background(), -1, func(context.Context) (int, error) { calls++; return 7, nil })
	if err != nil || v != 7 || calls != 1 {
		t.Fatalf("full: %d, %v after %d calls", v, err, calls)
	}
	if _, ok := r.Get(-1); ok || len(r.m) != maxRecentEntries {
		t.Fatalf("full: remembered the new key (%d entries)", len(r.m))
	}
	if v, ok := r.Get(0); !ok || v != 0 {
		t.Fatal("full: lost a fresh entry")
	}
	now = now.Add(2 * time.Minute)
	if _, err := r.Do(context.Background(), -1, func(context.Context) (int, error) { return 8, nil }); err != nil {
		t.Fatal(err)
	}
	if v, ok := r.Get(-1); !ok || v != 8 || len(r.m) != 1 {
		t.Fatalf("after expiry: %d, %v, %d entries", v, ok, len(r.m))
	}
}

// Forget drops what matches, a call under way included: its callers get
// its result, later callers a new call.
func TestRecentForget(t *testing.T) {
	r := NewRecent[string, int](time.Minute)
	var calls atomic.Int32
	get := func(k string) int {
		v, _ := r.Do(context.Background(), k, func(context.Context) (int, error) { return int(calls.Add(1)), nil })
		return v
	}
	get("a/x")
	get("b/x")
	if n := r.Forget(func(k string) bool { return k == "a/x" }); n != 1 {
		t.Fatalf("dropped %d, want 1", n)
	}
	if v := get("a/x"); v != 3 {
		t.Fatalf("a/x after Forget: %d, want a new call (3)", v)
	}
	if v := get("b/x"); v != 2 {
		t.Fatalf("b/x kept: %d, want 2", v)
	}

	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan int)
	go func() {
		v, _ := r.Do(context.Background(), "slow", func(context.Context) (int, error) {
			close(started)
			<-release
			return 100, nil
		})
		done <- v
	}()
	<-started
	r.Forget(func(k string) bool { return k == "slow" })
	close(release)
	if v := <-done; v != 100 {
		t.Fatalf("the caller of the forgotten call got %d", v)
	}
	if v, _ := r.Do(context.Background(), "slow", func(context.Context) (int, error) { return 200, nil }); v != 200 {
		t.Fatalf("after forgetting a call under way: %d, want a new call (200)", v)
	}
}
