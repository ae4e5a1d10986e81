//go:build !linux

package testutil

import "time"

var epoch = time.Now()

// threadCPU and processCPU stand in for CPU time where it is not
// available: the wall clock.
func threadCPU() time.Duration { return time.Since(epoch) }

func processCPU() time.Duration { return time.Since(epoch) }
