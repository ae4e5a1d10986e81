package helm

import "sync"

// lru is what ChartCache and CRDCache share: values by a SHA-256, within a
// bound on the bytes they are counted at (each at least minEntryCost), the
// least recently used dropped first. It is safe for concurrent use.
type lru[V any] struct {
	max int64

	mu    sync.Mutex
	m     map[[32]byte]V
	order []lruKey // least recently used first
	size  int64
}

type lruKey struct {
	key  [32]byte
	cost int64
}

func newLRU[V any](max int64) lru[V] { return lru[V]{max: max, m: map[[32]byte]V{}} }

// get returns the value under key, marking it the most recently used.
func (l *lru[V]) get(key [32]byte) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.m[key]
	if ok {
		for i, k := range l.order {
			if k.key == key {
				copy(l.order[i:], l.order[i+1:])
				l.order[len(l.order)-1] = k
				break
			}
		}
	}
	return v, ok
}

// put keeps v under key, counted at entryCost(size), and returns it, or
// the value already there; the least recently used go past the bound.
func (l *lru[V]) put(key [32]byte, v V, size int64) V {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.m[key]; ok {
		return old
	}
	cost := entryCost(size)
	l.m[key] = v
	l.order = append(l.order, lruKey{key, cost})
	l.size += cost
	for l.size > l.max && len(l.order) > 0 {
		old := l.order[0]
		l.order = l.order[1:]
		l.size -= old.cost
		delete(l.m, old.key)
	}
	return v
}

// resize counts the value under key at entryCost of the size that size
// returns for it, read under the lock (a ChartCache entry grew: its parsed
// templates), when size says that value is still the one it measures (a
// value dropped and put again under the same key is another value, counted
// by its own calls); the least recently used go past the bound, which may
// be this one.
func (l *lru[V]) resize(key [32]byte, size func(V) (int64, bool)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.m[key]
	if !ok {
		return
	}
	n, ok := size(v)
	if !ok {
		return
	}
	for i, k := range l.order {
		if k.key == key {
			cost := entryCost(n)
			l.size += cost - k.cost
			l.order[i].cost = cost
			break
		}
	}
	for l.size > l.max && len(l.order) > 0 {
		old := l.order[0]
		l.order = l.order[1:]
		l.size -= old.cost
		delete(l.m, old.key)
	}
}
