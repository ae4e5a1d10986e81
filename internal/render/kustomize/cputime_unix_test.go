//go:build unix

package kustomize

import "syscall"

// cpuNanos is the user and system CPU time of the process so far, in
// nanoseconds.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
