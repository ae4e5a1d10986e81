//go:build !race

package main

// raceOn: the race detector is on (see race_on_test.go).
const raceOn = false
