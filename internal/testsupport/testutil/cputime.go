package testutil

import (
	"runtime"
	"time"
)

// CPUTime runs f on the calling goroutine locked to its OS thread and
// returns the CPU time (user and system) the thread used meanwhile: what f's
// own work cost, whatever else the machine and the test binary run. Bounds
// on it hold on a loaded machine, which stretches the wall clock (tests
// bound the time hostile input takes with it). Work f hands to other
// goroutines is not counted. Where the thread's CPU time is not available
// (not Linux), it is the wall time f took.
func CPUTime(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	f()
	return threadCPU() - start
}

// ProcessCPUTime runs f and returns the CPU time (user and system) the whole
// process used meanwhile: f's work on every goroutine it starts, and
// whatever else the test binary runs at the time (use it where nothing else
// does: no parallel tests). Not Linux: the wall time f took.
func ProcessCPUTime(f func()) time.Duration {
	start := processCPU()
	f()
	return processCPU() - start
}
