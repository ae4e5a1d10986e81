package parallel

import (
	"sync"
	"sync/atomic"
)

// EachInOrder calls do(i) for every i in [0, n) on up to workers goroutines
// and returns the lowest i whose call failed, or -1. The outcome is that of
// a loop that stops at the first error: indexes after a failed one may not
// run, and a panic of do is re-raised in the caller's goroutine (where a
// caller's recover sees it as with the loop). workers < 2 is that loop.
func EachInOrder(n, workers int, do func(i int) error) int {
	if workers < 2 {
		for i := range n {
			if do(i) != nil {
				return i
			}
		}
		return -1
	}
	var (
		next     atomic.Int64 // next index to take
		failed   atomic.Int64 // lowest failed index so far
		wg       sync.WaitGroup
		panicked atomic.Pointer[any]
	)
	failed.Store(int64(n))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					panicked.CompareAndSwap(nil, &p)
					failed.Store(-1)
				}
			}()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || i > failed.Load() {
					return
				}
				if do(int(i)) != nil {
					for f := failed.Load(); i < f && !failed.CompareAndSwap(f, i); f = failed.Load() {
					}
				}
			}
		}()
	}
	wg.Wait()
	if p := panicked.Load(); p != nil {
		panic(*p)
	}
	if f := failed.Load(); f < int64(n) {
		return int(f)
	}
	return -1
}
