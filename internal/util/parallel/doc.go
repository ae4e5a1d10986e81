// Package parallel runs a loop's iterations on several goroutines with the
// outcome of the plain loop (its first failure, its panic): manifests'
// decoding and encoding of documents and the Helm renderer's sort share it.
package parallel
