package parallel

import (
	"errors"
	"sync/atomic"
	"testing"
)

// EachInOrder's outcome is the plain loop's: the lowest failed index, every
// index when none fails, and do's panic in the caller's goroutine.
func TestEachInOrder(t *testing.T) {
	errStop := errors.New("stop")
	for _, workers := range []int{1, 2, 8} {
		var ran atomic.Int64
		if got := EachInOrder(1000, workers, func(int) error { ran.Add(1); return nil }); got != -1 || ran.Load() != 1000 {
			t.Errorf("workers %d: %d, ran %d; want -1, 1000", workers, got, ran.Load())
		}
		for _, fail := range []int{0, 17, 999} {
			got := EachInOrder(1000, workers, func(i int) error {
				if i >= fail && i%3 == fail%3 {
					return errStop
				}
				return nil
			})
			if got != fail {
				t.Errorf("workers %d: failed at %d, want %d", workers, got, fail)
			}
		}
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Errorf("workers %d: recovered %v", workers, p)
				}
			}()
			EachInOrder(100, workers, func(i int) error {
				if i == 50 {
					panic("boom")
				}
				return nil
			})
			t.Errorf("workers %d: no panic", workers)
		}()
	}
}
