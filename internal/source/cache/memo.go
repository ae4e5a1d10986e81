package cache

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Memo remembers the results of lookups: tag → digest, tag lists. Concurrent
// callers for one key share one call; errors are not remembered, so the next
// caller tries again.
//
// The zero value remembers for its whole life (one generation's client).
// NewRecent makes one whose values expire, shared by the generations of a
// long-lived process (the render server): when an ApplicationSet refresh
// renders 100 Applications of one component at once, the registry is asked
// for the tag once, not 100 times.
type Memo[K comparable, V any] struct {
	ttl time.Duration // 0: never expires
	// maxWait bounds how long a caller waits for another's call of the same
	// key before calling fn itself (0: as long as its context lasts). A Memo
	// shared between generations (NewRecent) waits at most recentMaxWait, so
	// one tenant's slow registry never holds another's generation.
	maxWait time.Duration
	now     func() time.Time
	mu      sync.Mutex
	m       map[K]*memoCall[V]
}

type memoCall[V any] struct {
	done    chan struct{}
	v       V
	err     error
	expires time.Time // set when done, if the Memo has a ttl
}

// maxRecentEntries bounds a Memo with a ttl: past it, expired entries are
// dropped, and while it is still full a new key is looked up unshared.
const maxRecentEntries = 4096

// recentMaxWait is how long a caller of a shared Memo waits for another's call.
const recentMaxWait = 2 * time.Second

// NewRecent makes a Memo whose values are reused for ttl after they arrived.
func NewRecent[K comparable, V any](ttl time.Duration) *Memo[K, V] {
	return &Memo[K, V]{ttl: ttl, now: time.Now, maxWait: recentMaxWait}
}

// fresh reports whether a call's value may still be used; m.mu is held.
func (m *Memo[K, V]) fresh(c *memoCall[V]) bool {
	return m.ttl <= 0 || !isDone(c.done) || !m.now().After(c.expires)
}

// Do returns the remembered value for key, or calls fn once to get it.
func (m *Memo[K, V]) Do(ctx context.Context, key K, fn func(context.Context) (V, error)) (V, error) {
	for {
		m.mu.Lock()
		if m.m == nil {
			m.m = map[K]*memoCall[V]{}
		}
		c, ok := m.m[key]
		if !ok || !m.fresh(c) {
			if m.ttl > 0 && len(m.m) >= maxRecentEntries {
				m.dropExpired()
				if len(m.m) >= maxRecentEntries {
					// Full of fresh entries (one tenant naming tag after
					// tag): this call is not shared, nor remembered.
					m.mu.Unlock()
					return fn(ctx)
				}
			}
			c = &memoCall[V]{done: make(chan struct{})}
			m.m[key] = c
			m.mu.Unlock()
			m.call(ctx, key, c, fn)
			return c.v, c.err
		}
		m.mu.Unlock()
		var waited <-chan time.Time
		if m.maxWait > 0 {
			t := time.NewTimer(m.maxWait)
			waited = t.C
			defer t.Stop()
		}
		select {
		case <-c.done:
			if c.err == nil {
				return c.v, nil
			}
			// The call failed; try again ourselves (with our own context).
		case <-waited:
			// The other call is slow: ours, unshared.
			return fn(ctx)
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
	}
}

// errCallPanicked is what callers waiting for a call see when it panicked
// (they then call fn themselves); the panic goes on up the caller's stack.
var errCallPanicked = errors.New("cache: the shared call panicked")

// call runs fn for c and publishes its result. However fn ends, a panic
// included, the key is released and c.done closed: a recovered panic (the
// render server recovers each generation's) must not leave the key held, or
// every later caller of that key would wait for a call that never ends.
func (m *Memo[K, V]) call(ctx context.Context, key K, c *memoCall[V], fn func(context.Context) (V, error)) {
	returned := false
	defer func() {
		m.mu.Lock()
		if !returned {
			c.err = errCallPanicked
		}
		if c.err != nil {
			if m.m[key] == c {
				delete(m.m, key)
			}
		} else if m.ttl > 0 {
			c.expires = m.now().Add(m.ttl)
		}
		m.mu.Unlock()
		close(c.done)
	}()
	c.v, c.err = fn(ctx)
	returned = true
}

// Get returns the remembered value for key, if any.
func (m *Memo[K, V]) Get(key K) (V, bool) {
	m.mu.Lock()
	c, ok := m.m[key]
	ok = ok && isDone(c.done) && c.err == nil && m.fresh(c)
	m.mu.Unlock()
	if ok {
		return c.v, true
	}
	var zero V
	return zero, false
}

// Set remembers v for key.
func (m *Memo[K, V]) Set(key K, v V) {
	c := &memoCall[V]{done: make(chan struct{}), v: v}
	close(c.done)
	m.mu.Lock()
	if m.ttl > 0 {
		c.expires = m.now().Add(m.ttl)
	}
	if m.m == nil {
		m.m = map[K]*memoCall[V]{}
	}
	m.m[key] = c
	m.mu.Unlock()
}

// Forget drops the remembered values whose keys match, so that the next
// caller looks them up again (a registry said one of them changed). A call
// under way is dropped too: its callers still get its result, but no later
// caller does, as it may have read the registry before the change. It
// returns how many it dropped.
func (m *Memo[K, V]) Forget(match func(K) bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k := range m.m {
		if match(k) {
			delete(m.m, k)
			n++
		}
	}
	return n
}

// dropExpired deletes finished, expired entries; m.mu is held.
func (m *Memo[K, V]) dropExpired() {
	for k, c := range m.m {
		if !m.fresh(c) {
			delete(m.m, k)
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
