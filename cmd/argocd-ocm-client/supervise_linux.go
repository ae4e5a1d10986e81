package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// superviseGenerate runs a generation in argocd-ocm-plugin as this
// process's child, under the hard memory limit of a render worker: the
// child limits its own address space (server.EnvGuarded), after handing
// this process, on a pipe, the one error line that names the limit. When an
// allocation fails at the limit, the Go runtime ends the child with a
// report and a traceback on stderr; this process prints the child's line
// instead, so that the error contract holds: one line, nothing on stdout
// (the child writes its manifests once, at the end, straight to stdout).
// Other stderr lines pass through. Signals are passed on; the child dies
// with this process. It returns the exit status to end with.
func superviseGenerate(bin string, args []string) int {
	limitLine, limitW, err := os.Pipe()
	if err != nil {
		return failed(err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		return failed(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Args[0] = "argocd-ocm-plugin"
	cmd.Env = append(os.Environ(), server.EnvGuarded+"="+strconv.Itoa(server.GuardFD))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, stderrW
	cmd.ExtraFiles = []*os.File{limitW} // fd 3 = server.GuardFD
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	err = cmd.Start()
	limitW.Close()
	stderrW.Close()
	if err != nil {
		return failed(err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	line := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(limitLine, 64<<10))
		limitLine.Close()
		line <- string(b)
	}()
	oom := make(chan bool, 1)
	go func() { oom <- passStderr(stderrR) }()
	_ = cmd.Wait()
	signal.Stop(sigs)
	close(sigs)
	// The child's last lines, which say whether it ended at its limit: the
	// copy may lag behind its exit (a slow reader of our stderr, a loaded
	// machine; a second was not always enough), and ends once every process
	// holding the pipe is gone. stderrTimeout is the safety net for a
	// process that outlives the child and keeps the pipe.
	outOfMemory := false
	select {
	case outOfMemory = <-oom:
	case <-time.After(stderrTimeout):
	}
	if outOfMemory {
		l := <-line
		if l == "" {
			l = fmt.Sprintf("argocd-ocm-plugin: application %s: generation exceeded its memory limit: limit exceeded\n", os.Getenv("ARGOCD_APP_NAME"))
		}
		os.Stderr.WriteString(l)
		return 1
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// passStderr copies the child's stderr to ours, whole lines, until the Go
// runtime's out-of-memory report, after which nothing more is copied (its
// traceback says nothing to an Application's author); it reports whether
// that report came.
func passStderr(r io.Reader) bool {
	br := bufio.NewReaderSize(r, 16<<10)
	oom := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !oom && server.OutOfMemory(chunk) {
			oom = true
		}
		if !oom && len(chunk) > 0 {
			os.Stderr.Write(chunk)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return oom
		}
	}
}

// stderrTimeout bounds how long the client waits, after its child ended,
// for the rest of the child's stderr.
const stderrTimeout = 10 * time.Second

func failed(err error) int {
	fmt.Fprintf(os.Stderr, "argocd-ocm-client: running argocd-ocm-plugin: %v\n", err)
	return 1
}
