//go:build race

package main

// raceOn: the race detector is on. Its shadow memory counts in the render
// workers' private memory, so memory limits measured without it are not
// asserted with it.
const raceOn = true
