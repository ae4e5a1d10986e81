//go:build !linux

package testutil

import "time"

var epoch = time.Now()

// threadCPU stands in for the thread's CPU time where it is not available:
// the wall clock.
func threadCPU() time.Duration { return time.Since(epoch) }
