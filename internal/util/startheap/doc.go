// Package startheap lets a process allocate its first MinHeap bytes before
// the garbage collector first runs, then hands the collector back to the
// runtime's defaults. Import it for its side effect, from package main only:
//
//	import _ "github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/startheap"
//
// Why: most `argocd-ocm-plugin generate` processes live 15-30 ms and allocate
// less than 16 MiB in all, 4.6 MiB of it in package initialisation (Helm's
// dependencies compile JSON metaschemas and register the Kubernetes API
// scheme). With the runtime's 4 MiB minimum heap such a process collects two
// or three times, and on this kind of machine each collection costs more
// than its marking (worker threads started, write barriers on, the world
// stopped twice): GOGC=off took a small kustomize generation from 21 to 14 ms
// of CPU. A collection of a 4 MiB heap frees nothing the process will miss.
//
// How: the package's init (which runs before the heavy packages' inits, as
// Go initialises packages in import-path order once their imports are done;
// see TestStartHeapRaisedBeforeHeavyInitsAndNoCollectionDuringInit in
// cmd/argocd-ocm-plugin) raises GOGC so that the heap's minimum is MinHeap,
// and a cleanup on an unreachable object restores the default percentage
// (100) right after the first collection, unless the program has set its own
// in between (serve's supervisor: 20), which is kept. So a process
// that outgrows MinHeap is collected as before: its heap goal is twice its
// live heap again from the first cycle on, and its peak memory is at most
// max(MinHeap, what it was).
//
// An explicit GOGC in the environment wins: then nothing is changed.
// GOMEMLIMIT keeps its meaning either way (the limit is not touched).
package startheap
