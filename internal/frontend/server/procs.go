package server

// ProcsFor is the share of cores of a generation that starts while running
// generations render (itself included) and waiting more wait for a worker:
// the cores divided among them, at least one. A generation alone gets every
// core, so that a large render's parallel parts run in parallel; in a burst
// each gets one, and its worker neither keeps idle Ps looking for work nor
// runs a garbage collector per core against the other workers (measured:
// 10-15 % less CPU for 100 generations at once than with every core).
//
// A generation keeps its share until it ends: one started alone keeps
// every core while others start beside it, which oversubscribes the cores
// for the rest of that one generation only.
func ProcsFor(cores, running, waiting int) int {
	return max(1, cores/max(1, running+waiting))
}
