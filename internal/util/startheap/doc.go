// Package startheap lets a process allocate its first MinHeap bytes before
// the garbage collector first runs, then hands the collector back to the
// runtime's defaults. Import it for its side effect, from package main only:
//
// Design notes: docs/design.md, section internal/util/startheap.
package startheap
