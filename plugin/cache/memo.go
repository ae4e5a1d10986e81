package cache

import (
	"context"
	"sync"
)

// Memo remembers the results of lookups for the life of one process (one
// generation): tag → digest, tag lists. Concurrent callers for one key share
// one call; errors are not remembered, so the next caller tries again.
type Memo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*memoCall[V]
}

type memoCall[V any] struct {
	done chan struct{}
	v    V
	err  error
}

// Do returns the remembered value for key, or calls fn once to get it.
func (m *Memo[K, V]) Do(ctx context.Context, key K, fn func(context.Context) (V, error)) (V, error) {
	for {
		m.mu.Lock()
		if m.m == nil {
			m.m = map[K]*memoCall[V]{}
		}
		c, ok := m.m[key]
		if !ok {
			c = &memoCall[V]{done: make(chan struct{})}
			m.m[key] = c
			m.mu.Unlock()
			c.v, c.err = fn(ctx)
			if c.err != nil {
				m.mu.Lock()
				delete(m.m, key)
				m.mu.Unlock()
			}
			close(c.done)
			return c.v, c.err
		}
		m.mu.Unlock()
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

// Get returns the remembered value for key, if any.
func (m *Memo[K, V]) Get(key K) (V, bool) {
	m.mu.Lock()
	c, ok := m.m[key]
	m.mu.Unlock()
	if ok {
		select {
		case <-c.done:
			if c.err == nil {
				return c.v, true
			}
		default:
		}
	}
	var zero V
	return zero, false
}

// Set remembers v for key.
func (m *Memo[K, V]) Set(key K, v V) {
	c := &memoCall[V]{done: make(chan struct{}), v: v}
	close(c.done)
	m.mu.Lock()
	if m.m == nil {
		m.m = map[K]*memoCall[V]{}
	}
	m.m[key] = c
	m.mu.Unlock()
}
