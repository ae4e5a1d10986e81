package server

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// A worker's memory limit is hard: the supervisor gives each worker an
// address-space limit (RLIMIT_AS, set from outside with prlimit once the
// worker is past its start-up) of the address space it had reserved then
// plus MaxMemory. A Go process reserves far more address space than it
// uses (an idle worker: ~1.3 GiB virtual, ~8 MiB private), which is why the
// limit counts from that reservation, not from zero: what the worker can
// still map, heap and stacks alike, is MaxMemory. An allocation past it
// fails inside the worker before a byte of it is resident; the Go runtime
// then ends the process ("fatal error: out of memory"), which the
// supervisor reports as the memory limit. Polling (Pool.Poll) stays for the
// private memory of all workers together (TotalMemory) and for systems
// without prlimit.

// arenaSlack is added to MaxMemory for the address-space limit: the Go
// runtime reserves its heap in arenas of 64 MiB (linux/amd64, arm64), so a
// worker may reserve up to one arena more than it will use. The
// reservation the limit counts from holds the unused rest of the worker's
// first arena (57 MiB of an idle serve-worker's 64 are not resident), which
// it can fill without reserving more: the limit bounds a worker's private
// memory below MaxMemory + two arenas (128 MiB) whatever it does between two
// polls; the poll kills it at MaxMemory of private memory in the usual case.
const arenaSlack = 64 << 20

// setAddressSpaceLimit sets RLIMIT_AS of process pid to its current virtual
// size plus extra bytes, and returns the limit.
func setAddressSpaceLimit(pid int, extra int64) (int64, error) {
	vsz, err := virtualSize(pid)
	if err != nil {
		return 0, err
	}
	limit := vsz + extra
	lim := syscall.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_AS),
		uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return limit, nil
}

// virtualSize is VmSize of /proc/PID/status, in bytes.
func virtualSize(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmSize:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, syscall.EINVAL
}

// outOfMemory reports whether a line of a worker's stderr is the Go
// runtime's report of an allocation that failed (the address-space limit).
func outOfMemory(line []byte) bool {
	return bytes.HasPrefix(line, []byte("fatal error: out of memory")) ||
		bytes.HasPrefix(line, []byte("runtime: out of memory")) ||
		bytes.HasPrefix(line, []byte("fatal error: runtime: cannot allocate memory")) ||
		bytes.HasPrefix(line, []byte("runtime: failed to create new OS thread"))
}
