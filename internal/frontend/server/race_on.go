//go:build race

package server

// raceEnabled: the race detector reserves shadow memory for the whole
// address space; a worker built with -race cannot run under an
// address-space limit (tests only).
const raceEnabled = true
