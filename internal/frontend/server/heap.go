package server

import "runtime/metrics"

// runtimeHeap reads the memory the Go runtime holds from the system (mapped
// and not returned), cheaply: no stop-the-world, unlike runtime.ReadMemStats.
type runtimeHeap struct{}

func (runtimeHeap) read() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
