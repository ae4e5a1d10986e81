package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// A generate (or parameters) process of its own — the client's fallback
// without a server — bounds itself as a render worker is bounded: a soft
// memory limit for the garbage collector (GOMEMLIMIT, unless set), the hard
// limit of a worker when the client supervises it (see guard), and a
// watchdog that ends the process with one error line and nothing on stdout
// when the render passes its deadline (ARGOCD_OCM_TIMEOUT + 1 s, for the
// render's own error to come first when it can) or ARGOCD_OCM_MAX_MEMORY of
// private memory (polled: the only bound of a process nobody supervises, a
// person's or a plugin.yaml's own). Helm's and kustomize's loops do not
// look at contexts; only a process exit stops them.
type watchdog struct {
	stdout   io.Writer
	stderr   io.Writer
	mu       sync.Mutex // held while stdout is written, and forever once fired
	written  bool       // the manifests went out: the render is done
	deadline time.Duration
	limit    int64
	describe func() string
	exit     func(int)
	stop     chan struct{}
	sigs     chan os.Signal // SIGTERM and SIGINT
}

const (
	watchdogGrace = time.Second
	watchdogPoll  = 10 * time.Millisecond
	// stopGrace is how long a render has, after SIGTERM or SIGINT, to end
	// by its canceled context before the watchdog ends the process (Helm's
	// template loops do not look at it).
	stopGrace = 500 * time.Millisecond
)

// startWatchdog starts the watchdog of a process-mode generate; the returned
// writer is stdout, written under the watchdog's lock.
func startWatchdog(stdout, stderr io.Writer, getenv func(string) string) (io.Writer, func()) {
	s, err := readServeSettings(getenv)
	if err != nil {
		// The command reports bad settings itself; bound it by the defaults.
		s = serveSettings{deadline: DefaultTimeout, maxMemory: DefaultMaxMemory}
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(s.maxMemory / 5 * 4)
	}
	guard(getenv, s.maxMemory)
	w := &watchdog{stdout: stdout, stderr: stderr, deadline: s.deadline + watchdogGrace, limit: s.maxMemory,
		describe: func() string { return describeEnv(getenv).Prefix() }, exit: os.Exit, stop: make(chan struct{})}
	// Registered before the goroutine runs: a signal that came before it
	// was scheduled would be lost to it.
	w.sigs = make(chan os.Signal, 1)
	signal.Notify(w.sigs, syscall.SIGTERM, os.Interrupt)
	go w.run()
	return (*guardedWriter)(w), func() { close(w.stop) }
}

func (w *watchdog) run() {
	deadline := time.NewTimer(w.deadline)
	defer deadline.Stop()
	poll := time.NewTicker(watchdogPoll)
	defer poll.Stop()
	pid := os.Getpid()
	// The command's context is canceled on these too (run); a render that
	// does not notice is ended here, within a second of the signal, instead
	// of rendering on until Argo CD's SIGKILL.
	defer signal.Stop(w.sigs)
	var stopping <-chan time.Time
	for {
		select {
		case <-w.stop:
			return
		case <-w.sigs:
			if stopping == nil {
				t := time.NewTimer(stopGrace)
				defer t.Stop()
				stopping = t.C
			}
		case <-stopping:
			w.fire("generation stopped: the process was asked to stop (SIGTERM)")
			return
		case <-deadline.C:
			w.fire(fmt.Sprintf("generation exceeded the deadline of %s: limit exceeded", w.deadline-watchdogGrace))
			return
		case <-poll.C:
			if n, err := server.PrivateMemory(pid); err == nil && n > w.limit {
				w.fire(memoryLimitExceeded(w.limit))
				return
			}
		}
	}
}

// fire ends the process with one error line, unless the manifests are
// being written (then the render is done and the write completes).
func (w *watchdog) fire(msg string) {
	w.mu.Lock() // never unlocked: nothing is written to stdout after this
	select {
	case <-w.stop:
		w.mu.Unlock()
		return
	default:
	}
	if w.written {
		w.mu.Unlock()
		return
	}
	fmt.Fprintf(w.stderr, "argocd-ocm-plugin: %s%s\n", w.describe(), msg)
	w.exit(1)
}

type guardedWriter watchdog

func (g *guardedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.written = true
	return g.stdout.Write(p)
}

// bounded reports whether a command line is a generation bounded by the
// watchdog in a process of its own.
func bounded(args []string) bool {
	return len(args) > 0 && (args[0] == "generate" || args[0] == "parameters")
}

// guard applies a worker's hard memory limit to this process when
// argocd-ocm-client runs it and reads its stderr (server.EnvGuarded): it
// hands the client its one error line for the limit on server.GuardFD, then
// limits its address space to what it has reserved plus maxMemory and one
// heap arena. An allocation past it ends the process with the Go runtime's
// report, which the client replaces by that line. A process nobody
// supervises keeps the polled limit only: the runtime's report would break
// the one-line contract there.
func guard(getenv func(string) string, maxMemory int64) {
	if getenv(server.EnvGuarded) != strconv.Itoa(server.GuardFD) {
		return
	}
	f := os.NewFile(server.GuardFD, "guard")
	if f == nil {
		return
	}
	line := "argocd-ocm-plugin: " + describeEnv(getenv).Prefix() + memoryLimitExceeded(maxMemory) + "\n"
	_, err := io.WriteString(f, line)
	f.Close()
	if err != nil {
		return // no line to give: stay with the polled limit
	}
	// Without the limit (a system without prlimit), the polled one stays.
	_, _ = server.LimitOwnMemory(os.Getpid(), maxMemory)
}

// memoryLimitExceeded is the error of a generation past its memory limit,
// the same whichever bound ends it (the poll, or the address-space limit).
func memoryLimitExceeded(limit int64) string {
	return fmt.Sprintf("generation exceeded the memory limit of %d MiB: limit exceeded", limit>>20)
}
