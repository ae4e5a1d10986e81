package cache

import (
	"context"
	"sync"
	"time"
)

// Recent remembers lookups for a short time across the generations of one
// long-lived process (the render server): when an ApplicationSet refresh
// renders 100 Applications of one component at once, the registry is asked
// for the tag once, not 100 times. Concurrent callers for one key share one
// call; errors are not remembered. The zero value is not usable: see NewRecent.
type Recent[K comparable, V any] struct {
	ttl time.Duration
	now func() time.Time
	mu  sync.Mutex
	m   map[K]*recentCall[V]
}

type recentCall[V any] struct {
	done    chan struct{}
	v       V
	err     error
	expires time.Time
}

// maxRecentEntries bounds a Recent: past it, expired entries are dropped.
const maxRecentEntries = 4096

// NewRecent makes a Recent whose values are reused for ttl after they arrived.
func NewRecent[K comparable, V any](ttl time.Duration) *Recent[K, V] {
	return &Recent[K, V]{ttl: ttl, now: time.Now, m: map[K]*recentCall[V]{}}
}

// Do returns a value for key that arrived less than ttl ago, or calls fn once
// (for all concurrent callers) to get a new one.
func (r *Recent[K, V]) Do(ctx context.Context, key K, fn func(context.Context) (V, error)) (V, error) {
	for {
		r.mu.Lock()
		c, ok := r.m[key]
		if ok && isDone(c.done) && r.now().After(c.expires) {
			ok = false
		}
		if !ok {
			if len(r.m) >= maxRecentEntries {
				r.dropExpired()
			}
			c = &recentCall[V]{done: make(chan struct{})}
			r.m[key] = c
			r.mu.Unlock()
			c.v, c.err = fn(ctx)
			r.mu.Lock()
			if c.err != nil {
				delete(r.m, key)
			} else {
				c.expires = r.now().Add(r.ttl)
			}
			r.mu.Unlock()
			close(c.done)
			return c.v, c.err
		}
		r.mu.Unlock()
		select {
		case <-c.done:
			if c.err == nil {
				return c.v, nil
			}
			// The call failed; try again ourselves (with our own context).
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
	}
}

// dropExpired deletes finished, expired entries; r.mu is held.
func (r *Recent[K, V]) dropExpired() {
	now := r.now()
	for k, c := range r.m {
		if isDone(c.done) && now.After(c.expires) {
			delete(r.m, k)
		}
	}
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
