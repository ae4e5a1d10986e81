// Package lru keeps values of a long-lived process (a render-server
// worker) within a bound on the bytes they are counted at, the least
// recently used dropped first: the one bounded cache of the decoded charts,
// CRDs and artifact sets that generations share.
package lru

import "sync"

// Cache keeps values by key, each counted at its size and at least
// minCost (what a small entry holds is mostly Go's structures, not its
// bytes), at most maxBytes in all. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	max, minCost int64

	mu    sync.Mutex
	m     map[K]V
	order []entry[K] // least recently used first
	size  int64
}

type entry[K comparable] struct {
	key  K
	cost int64
}

// New returns a Cache of at most maxBytes, each entry counted at least
// minCost.
func New[K comparable, V any](maxBytes, minCost int64) *Cache[K, V] {
	return &Cache[K, V]{max: maxBytes, minCost: minCost, m: map[K]V{}}
}

// Max is the bound the cache keeps its entries within.
func (c *Cache[K, V]) Max() int64 { return c.max }

// Cost is what an entry of size bytes counts against the bound.
func (c *Cache[K, V]) Cost(size int64) int64 { return max(size, c.minCost) }

// Len is the number of entries kept.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Size is what the entries kept count against the bound.
func (c *Cache[K, V]) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// Peek returns the value under key without marking it used.
func (c *Cache[K, V]) Peek(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

// Values are the values kept, in no order.
func (c *Cache[K, V]) Values() []V {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]V, 0, len(c.m))
	for _, v := range c.m {
		out = append(out, v)
	}
	return out
}

// Get returns the value under key, marking it the most recently used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	if ok {
		for i, e := range c.order {
			if e.key == key {
				copy(c.order[i:], c.order[i+1:])
				c.order[len(c.order)-1] = e
				break
			}
		}
	}
	return v, ok
}

// Put keeps v under key, counted at Cost(size), and returns it, or the
// value already there; the least recently used go past the bound. A value
// that alone is over the bound is not kept (and drops nothing).
func (c *Cache[K, V]) Put(key K, v V, size int64) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		return old
	}
	cost := c.Cost(size)
	if cost > c.max {
		return v
	}
	c.m[key] = v
	c.order = append(c.order, entry[K]{key, cost})
	c.size += cost
	c.evict()
	return v
}

// Resize counts the value under key at Cost of the size that size
// returns for it, read under the lock (an entry grew), when size says that
// value is still the one it measures (a value dropped and put again under
// the same key is another value, counted by its own calls); the least
// recently used go past the bound, which may be this one.
func (c *Cache[K, V]) Resize(key K, size func(V) (int64, bool)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	if !ok {
		return
	}
	n, ok := size(v)
	if !ok {
		return
	}
	for i, e := range c.order {
		if e.key == key {
			cost := c.Cost(n)
			c.size += cost - e.cost
			c.order[i].cost = cost
			break
		}
	}
	c.evict()
}

// evict drops the least recently used entries until the cache is within
// its bound.
func (c *Cache[K, V]) evict() {
	for c.size > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= old.cost
		delete(c.m, old.key)
	}
}
