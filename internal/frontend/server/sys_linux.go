package server

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// workerSysProcAttr makes the kernel kill a worker when its supervisor dies
// (kill -9 included), so that no render outlives the process that would
// deliver its result.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// The parent-death signal fires when the *thread* that forked the child ends,
// not the process; Go ends threads of goroutines that exit while locked to
// one. Workers are therefore started from one goroutine locked to its thread
// for the life of the process.
var (
	spawnOnce sync.Once
	spawnCh   chan func()
)

func startOnSpawnThread(start func() error) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for f := range spawnCh {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	spawnCh <- func() { errc <- start() }
	return <-errc
}

var pageSize = int64(os.Getpagesize())

// privateRSS is the resident memory of pid that is its own (anonymous:
// heap, stacks), without the binary's pages, which all workers share:
// resident − shared of /proc/PID/statm.
func privateRSS(pid int) (int64, error) { return PrivateMemory(pid) }

// PrivateMemory is the resident memory of process pid that is its own
// (anonymous: heap, stacks), without the binary's pages.
func PrivateMemory(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, err
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0, syscall.EINVAL
	}
	resident, err1 := strconv.ParseInt(string(f[1]), 10, 64)
	shared, err2 := strconv.ParseInt(string(f[2]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, syscall.EINVAL
	}
	return (resident - shared) * pageSize, nil
}

// runQueueWait is how long the threads of process pid have waited on a run
// queue (runnable, no CPU free), in ns: the second field of
// /proc/PID/task/*/schedstat.
func runQueueWait(pid int) (int64, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := bytes.Fields(b); len(f) >= 2 {
			n, _ := strconv.ParseInt(string(f[1]), 10, 64)
			sum += n
		}
	}
	return sum, true
}

// waitsForLock reports whether process pid has a file under dir open
// without holding a lock on it (the "lock:" line of /proc/PID/fdinfo/N
// lists the locks of that open file): internal/source/cache polls such a file
// until the process fetching the blob releases it.
func waitsForLock(pid int, dir string) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	fds, err := os.ReadDir(proc + "/fd")
	if err != nil {
		return false
	}
	dir = filepath.Clean(dir) + string(filepath.Separator)
	for _, fd := range fds {
		target, err := os.Readlink(proc + "/fd/" + fd.Name())
		if err != nil || !strings.HasPrefix(target, dir) {
			continue
		}
		info, err := os.ReadFile(proc + "/fdinfo/" + fd.Name())
		if err == nil && !bytes.Contains(info, []byte("\nlock:")) {
			return true
		}
	}
	return false
}
