// Command procstat runs a command and writes its wall time, CPU time, peak
// RSS and exit code as JSON to a file. The benchmark harness starts every
// measured process through it because Linux charges a child's ru_maxrss with
// the RSS of the address space it was forked from at exec time: a child of
// the harness (which holds the in-process registry's blobs) would report at
// least the harness's RSS; a child of this small process reports its own.
//
//	procstat STATS.json COMMAND [ARG...]
//
// Standard streams, environment and working directory are passed through;
// the exit code is the command's.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

type stats struct {
	WallNS   int64  `json:"wall_ns"`
	CPUNS    int64  `json:"cpu_ns"`
	MaxRSSKB int64  `json:"max_rss_kb"`
	Exit     int    `json:"exit"`
	Error    string `json:"error,omitempty"`
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: procstat STATS.json COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	var st stats
	start := time.Now()
	err := cmd.Run()
	st.WallNS = int64(time.Since(start))
	if ps := cmd.ProcessState; ps != nil {
		st.Exit = ps.ExitCode()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			st.MaxRSSKB = ru.Maxrss
			st.CPUNS = ru.Utime.Nano() + ru.Stime.Nano()
		}
	} else {
		st.Exit = -1
	}
	if err != nil && st.Exit == 0 {
		st.Exit = -1
	}
	if err != nil {
		st.Error = err.Error()
	}
	b, _ := json.Marshal(st)
	if werr := os.WriteFile(os.Args[1], b, 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, "procstat:", werr)
		os.Exit(2)
	}
	if st.Exit < 0 {
		os.Exit(127)
	}
	os.Exit(st.Exit)
}
