package server

import "time"

// Causes of an Outcome.
const (
	CauseDeadline      = "deadline"       // the generation passed its deadline and its worker was killed
	CauseQueueDeadline = "queue-deadline" // the deadline passed before a worker was free
	CauseMemory        = "memory"         // the worker passed MaxMemory and was killed
	CauseTotalMemory   = "total-memory"   // all workers together passed TotalMemory; this one used the most and was killed
	CauseCrashed       = "crashed"        // the worker died by itself
	CauseNoWorker      = "no-worker"      // no worker could be started
	CauseCanceled      = "canceled"       // the client went away; its worker was killed
)

// Outcome says how the pool ran a request.
type Outcome struct {
	Worker int           // process id of the worker (0: none)
	Procs  int           // Ps the worker rendered with (0: not set by the pool)
	Queue  time.Duration // from arrival to a worker taking the request
	// Cause is empty when the worker returned a result, else one of the
	// Cause constants.
	Cause string
	// Detail completes Cause for messages (a signal, the memory used).
	Detail string
	// Started: the worker finished and its result began to go to the
	// client (Run's deliver was called); Exit is its exit code.
	Started bool
	Exit    int
	// DeliverErr is what deliver returned (the client went away while the
	// result was copied to it).
	DeliverErr error
}

// Stats is a snapshot of the pool for metrics.
type Stats struct {
	Workers, Busy, Waiting int
	PrivateBytes           int64 // sum over workers at the last poll
}
