package startheap

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// MinHeap is the heap size (bytes) below which the process does not collect
// before its first garbage collection. 16 MiB covers a small generation and
// stays far below the peak of a render that needs a collection (Helm's own
// peak RSS on the demo chart is 46 MiB).
const MinHeap = 16 << 20

// runtimeMinHeap is the runtime's minimum heap goal at GOGC=100
// (runtime.defaultHeapMinimum); the runtime scales it by GOGC/100.
const runtimeMinHeap = 4 << 20

// defaultPercent is GOGC when the environment does not set it.
const defaultPercent = 100

// startPercent is the GOGC that makes the minimum heap goal MinHeap.
const startPercent = defaultPercent * MinHeap / runtimeMinHeap

// raised reports whether init raised GOGC (for tests).
var raised bool

func init() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	raise()
	raised = true
}

// raise sets GOGC to startPercent until the next collection has run.
func raise() {
	debug.SetGCPercent(startPercent)
	// The cleanup runs on the runtime's cleanup goroutine once a collection
	// has found the sentinel unreachable: after the first GC.
	runtime.AddCleanup(new(sentinel), restore, struct{}{})
}

// sentinel holds a pointer so that it is not placed in a tiny-allocator
// block, whose cleanups may never run.
type sentinel struct{ _ *byte }

// restores counts the runs of restore (for tests).
var restores atomic.Int32

// restore sets GOGC back to the default, unless the program chose its own
// since (serve's supervisor sets 20): that one is kept.
func restore(struct{}) {
	if prev := debug.SetGCPercent(defaultPercent); prev != startPercent {
		debug.SetGCPercent(prev)
	}
	restores.Add(1)
}
