// Package blob checks content against the digest that names it while it is
// read, so that no stage ever acts on bytes that were not verified.
package blob
