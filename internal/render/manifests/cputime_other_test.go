//go:build !unix

package manifests_test

// cpuNanos is not measured here: benchmarks report wall time only.
func cpuNanos() int64 { return -1 }
