//go:build unix

package server

// LimitOwnMemory sets this process's address-space limit to what it has
// reserved now plus maxMemory and one heap arena, as a worker's (see
// hardlimit_linux.go), and returns the limit (0 where the system has no
// such limit).
func LimitOwnMemory(pid int, maxMemory int64) (int64, error) {
	return setAddressSpaceLimit(pid, maxMemory+arenaSlack)
}

// OutOfMemory reports whether a line of a process's stderr is the Go
// runtime's report of an allocation past its address-space limit.
func OutOfMemory(line []byte) bool { return outOfMemory(line) }
