//go:build race

package argocdocm_test

// raceOn: the race detector is on. It drops sync.Pool items at random, so
// allocation bounds taken without it do not hold (a 320 MiB case allocates
// 403 MiB); they are checked without it only.
const raceOn = true
