//go:build !unix

package kustomize

// cpuNanos is not measured here: benchmarks report wall time only.
func cpuNanos() int64 { return -1 }
