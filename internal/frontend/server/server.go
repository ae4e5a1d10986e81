package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Handler runs one command: it writes the command's stdout and stderr and
// returns its exit code. ctx ends when the client goes away.
type Handler func(ctx context.Context, req *Request, stdout, stderr io.Writer) int

// Server answers requests on a unix socket. Its fields are read by Serve.
type Server struct {
	// Handler runs the commands. Required.
	Handler Handler
	// Parallelism bounds the commands running at once; the others wait in
	// line (within their own deadline). Default: 2 × GOMAXPROCS, which keeps
	// both cores busy while one render waits for a registry.
	Parallelism int
	// Fingerprint is the server's environment fingerprint. Default:
	// Fingerprint(os.Environ()).
	Fingerprint string
	// Log receives one line per generation ("command done": application,
	// project, component, version, duration, worker, outcome; never values
	// or credentials), refused request or recovered panic. Default: discard.
	Log *slog.Logger
	// Pool, when set, runs every request in a worker process with the pool's
	// deadline and memory limits; Handler and Parallelism are then unused.
	// Without it, Handler runs in this process (tests, a trusted single
	// tenant): nothing stops a runaway render there.
	Pool *Pool
	// Describe names a request in log lines and error messages. Default:
	// the Application's name (ARGOCD_APP_NAME) only.
	Describe func(*Request) Description
	// Metrics counts generations by outcome. Optional.
	Metrics *Metrics
	// DrainTimeout bounds how long Serve waits for running commands after ctx
	// ends. Default 10 s.
	DrainTimeout time.Duration
	// RequestBudget bounds the request bytes held at once over all
	// connections (each request is also bounded by MaxRequestSize): a
	// request that would pass it is refused with one error line, so that
	// many large requests cannot grow the server. Default MaxRequestBytes.
	RequestBudget int64
	// ReleaseMemoryAfter is how long the server must have been idle before it
	// returns freed heap to the operating system (debug.FreeOSMemory): the
	// Go runtime otherwise keeps the peak of a large render (a 100 MiB tree)
	// for minutes, counted against the sidecar's memory limit. Default 3 s;
	// negative: never.
	ReleaseMemoryAfter time.Duration

	once      sync.Once
	drainOnce sync.Once
	sem       chan struct{}
	inflight  sync.WaitGroup
	draining  chan struct{}
	connMu    sync.Mutex
	conns     map[net.Conn]struct{}

	budgetMu   sync.Mutex
	budgetUsed int64

	idleMu  sync.Mutex
	running int
	idle    *time.Timer
	// releases counts FreeOSMemory calls (tests).
	releases atomic.Int64
}

// Listen creates the socket at path: its directory is created with mode 0700
// when missing, a stale socket (nobody listening) is replaced, anything else
// at path is an error, and the socket gets mode 0600.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another server is listening", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Serve answers connections on l until ctx ends, then stops accepting,
// refuses queued requests, waits up to DrainTimeout for running ones and
// closes l.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	if s.Handler == nil && s.Pool == nil {
		return errors.New("server: no handler")
	}
	s.setDefaults()
	stop := context.AfterFunc(ctx, func() {
		s.stopAdmitting()
		l.Close()
	})
	defer stop()

	var tempDelay time.Duration
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return s.drain()
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// EMFILE and the like: back off as net/http does.
				tempDelay = min(max(2*tempDelay, 5*time.Millisecond), time.Second)
				time.Sleep(tempDelay)
				continue
			}
			return err
		}
		tempDelay = 0
		s.inflight.Add(1)
		go func() {
			defer s.inflight.Done()
			s.serveConn(ctx, conn)
		}()
	}
}

// setDefaults fills the fields left zero, once: Serve and Run both need
// them, and either may come first.
func (s *Server) setDefaults() {
	s.once.Do(func() {
		if s.Describe == nil {
			s.Describe = func(req *Request) Description {
				return Description{Application: req.Getenv(func(string) string { return "" })("ARGOCD_APP_NAME")}
			}
		}
		p := s.Parallelism
		if p <= 0 {
			p = 2 * runtime.GOMAXPROCS(0)
		}
		s.sem = make(chan struct{}, p)
		s.draining = make(chan struct{})
		s.conns = map[net.Conn]struct{}{}
		if s.Fingerprint == "" {
			s.Fingerprint = Fingerprint(os.Environ())
		}
		if s.Log == nil {
			s.Log = slog.New(slog.DiscardHandler)
		}
		if s.RequestBudget <= 0 {
			s.RequestBudget = MaxRequestBytes
		}
		if s.ReleaseMemoryAfter == 0 {
			s.ReleaseMemoryAfter = 3 * time.Second
		}
	})
}

// stopAdmitting refuses every request from now on (Serve's context ended).
func (s *Server) stopAdmitting() {
	s.setDefaults()
	s.drainOnce.Do(func() { close(s.draining) })
}

func (s *Server) drain() error {
	d := s.DrainTimeout
	if d <= 0 {
		d = 10 * time.Second
	}
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(d):
		s.connMu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.connMu.Unlock()
		return fmt.Errorf("server: %d s drain timeout: running commands cut off", int(d/time.Second))
	}
}

func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	arrival := time.Now()
	defer s.track(conn)()
	if err := checkPeer(conn); err != nil {
		s.Log.Warn("connection refused", "cause", err.Error())
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	// A request is a few KiB: a small buffer per connection (a burst of
	// 100 connections holds 100 of them).
	br := bufio.NewReaderSize(conn, 8<<10)
	// held is given back as soon as the request bytes are no longer
	// needed (before the answer is written: a client's next request must
	// find the budget free).
	var held atomic.Int64
	release := func() { s.giveBack(held.Swap(0)) }
	defer release()
	req, raw, ok := s.readRequest(conn, br, &held, release, arrival)
	if !ok {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	req.Deadline = time.Time{} // the supervisor's to set
	if !s.admit(conn, req) {
		return
	}
	rctx, cancel := watchClient(ctx, br)
	defer cancel()

	s.busy()
	defer s.done()
	d := s.Describe(req)
	command := ""
	if len(req.Args) > 0 {
		command = req.Args[0]
	}
	// execute holds req and raw no longer than it needs them: they are not
	// used here after it.
	res, out := s.execute(rctx, conn, req, raw, arrival, release)
	s.finish(conn, d, command, res, out, time.Since(arrival))
}

// track registers conn for a drain timeout to cut off; the function it
// returns forgets and closes it.
func (s *Server) track(conn net.Conn) func() {
	s.connMu.Lock()
	s.conns[conn] = struct{}{}
	s.connMu.Unlock()
	return func() {
		s.connMu.Lock()
		delete(s.conns, conn)
		s.connMu.Unlock()
		conn.Close()
	}
}

// readRequest reads the request line, its bytes taken from the server's
// request budget into held. A request over the budget is read, dropped and
// answered with one error line. ok is false when there is nothing to run.
func (s *Server) readRequest(conn net.Conn, br *bufio.Reader, held *atomic.Int64, release func(), arrival time.Time) (*Request, []byte, bool) {
	req, raw, err := readRequestLine(br, func(n int) bool {
		if !s.take(int64(n)) {
			return false
		}
		held.Add(int64(n))
		return true
	})
	if errors.Is(err, errBudget) {
		// The rest of the request is read and dropped (the client writes it
		// all before it reads), then: accepted, and one error line. The
		// client must not render in a process of its own instead (that
		// would move the load, not bound it).
		skipLine(br, MaxRequestSize)
		release()
		_ = writeHeader(conn, header{Accepted: true})
		_ = writeResult(conn, header{Exit: 1}, nil, []byte("argocd-ocm-plugin: render failed: "+s.overBudget(arrival)+"\n"))
		return nil, nil, false
	}
	if err != nil {
		s.Log.Warn("bad request", "cause", err.Error())
		return nil, nil, false
	}
	return req, raw, true
}

// admit refuses a request of another protocol or environment, or one that
// comes while the server drains; otherwise it tells the client the request
// is accepted: from then on the client must not run it itself.
func (s *Server) admit(conn net.Conn, req *Request) bool {
	refuse := func(reason, why string, attrs ...any) {
		s.Log.Warn("request refused: the client renders in a process of its own", append([]any{"cause", why}, attrs...)...)
		s.Metrics.refused(reason)
		_ = writeResult(conn, header{Refused: why}, nil, nil)
	}
	switch {
	case req.Protocol != ProtocolVersion:
		refuse("protocol", fmt.Sprintf("protocol %d, server speaks %d", req.Protocol, ProtocolVersion))
		return false
	case req.Fingerprint != s.Fingerprint:
		// Names only: the values may be credentials.
		var attrs []any
		if req.EnvDigests != nil {
			attrs = append(attrs, "variables", strings.Join(DifferingVariables(EnvDigests(os.Environ()), req.EnvDigests), ","))
		}
		refuse("environment", "the client's environment differs from the server's", attrs...)
		return false
	}
	select {
	case <-s.draining:
		refuse("draining", "server shutting down")
		return false
	default:
	}
	return writeHeader(conn, header{Accepted: true}) == nil
}

// watchClient returns the context of a command, canceled when the client
// goes. The client closes the connection when it is killed (Argo CD's
// deadline): that cancels the command. It sends nothing after the request,
// so any read returning means it is gone. Shutting the server down does
// not cancel running commands: they drain.
func watchClient(ctx context.Context, br *bufio.Reader) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		var b [1]byte
		_, _ = br.Read(b[:])
		cancel()
	}()
	return rctx, cancel
}

// execute runs the request in a worker of the pool, or in this process
// without one. res is nil when the command did not run to a result.
func (s *Server) execute(ctx context.Context, conn net.Conn, req *Request, raw []byte, arrival time.Time, release func()) (*Result, Outcome) {
	if s.Pool == nil {
		return s.inProcess(ctx, req, arrival)
	}
	// The request goes to the worker as it came, and the worker's
	// result to the client as it comes: the supervisor holds neither.
	req = nil
	out := s.Pool.Run(ctx, raw, arrival, func(exit, no, ne int, body io.Reader) error {
		release() // the worker has the request
		return streamResult(conn, exit, no, ne, body)
	})
	raw = nil
	if out.Started && out.Cause == "" {
		return &Result{Exit: out.Exit}, out // delivered
	}
	return nil, out
}

// finish records the command's outcome in metrics and the log, and writes
// its result to the client unless the pool streamed it already.
func (s *Server) finish(conn net.Conn, d Description, command string, res *Result, out Outcome, took time.Duration) {
	s.record(d, command, res, out, took)
	if out.Cause == CauseCanceled {
		return // the client is gone
	}
	if out.Started {
		// The result went (or began to go) to the client: a cut-short one is
		// the client's error line (ErrLost), never a partial manifest.
		if out.DeliverErr != nil || out.Cause != "" {
			s.Log.Warn("result not delivered", "application", d.Application, "cause", fmt.Sprint(out.DeliverErr, " ", out.Cause))
		}
		return
	}
	if res == nil {
		res = s.failed(d, out)
	}
	if err := writeResult(conn, header{Exit: res.Exit}, res.Stdout, res.Stderr); err != nil {
		s.Log.Warn("result not delivered", "cause", err.Error())
	}
}

// failed is the result of a command the pool gave no result for: one error
// line.
func (s *Server) failed(d Description, out Outcome) *Result {
	return &Result{Exit: 1, Stderr: []byte("argocd-ocm-plugin: " + d.Prefix() + s.limitMessage(out) + "\n")}
}

// record counts the command's outcome in metrics and logs it.
func (s *Server) record(d Description, command string, res *Result, out Outcome, took time.Duration) {
	outcome := out.Cause
	switch {
	case outcome == "" && res.Exit == 0:
		outcome = "ok"
	case outcome == "":
		outcome = "failed"
	}
	s.Metrics.Generation(outcome, out.Queue, took)
	exit := 1
	if res != nil {
		exit = res.Exit
	}
	s.Log.Info("command done", "command", command, "application", d.Application, "project", d.Project,
		"component", d.Component, "version", d.Version, "ms", took.Milliseconds(), "queue_ms", out.Queue.Milliseconds(),
		"worker", out.Worker, "procs", out.Procs, "outcome", outcome, "exit", exit)
}

// Run runs a request that comes from this process rather than the socket
// (the Argo CD plugin service the sidecar serves itself): with the same
// workers, limits, request budget, metrics and log line as a client's, and
// without the protocol and environment checks, which only a client process
// of its own needs. It always returns a result: a request the server could
// not run, or stopped, is exit status 1 and one error line. ctx ending
// cancels the command.
func (s *Server) Run(ctx context.Context, req *Request) *Result {
	s.setDefaults()
	arrival := time.Now()
	d := s.Describe(req)
	command := ""
	if len(req.Args) > 0 {
		command = req.Args[0]
	}
	refuse := func(why string) *Result {
		return &Result{Exit: 1, Stderr: []byte("argocd-ocm-plugin: " + d.Prefix() + "render failed: " + why + "\n")}
	}
	select {
	case <-s.draining:
		s.Metrics.refused("draining")
		return refuse("the render server is shutting down")
	default:
	}
	req.Deadline = time.Time{} // the supervisor's to set
	raw, err := json.Marshal(req)
	if err != nil {
		return refuse(err.Error())
	}
	if len(raw) > MaxRequestSize || !s.take(int64(len(raw))) {
		return refuse(s.overBudget(arrival))
	}
	var once sync.Once
	release := func() { once.Do(func() { s.giveBack(int64(len(raw))) }) }
	defer release()
	s.inflight.Add(1)
	defer s.inflight.Done()
	s.busy()
	defer s.done()
	var res *Result
	var out Outcome
	if s.Pool == nil {
		res, out = s.inProcess(ctx, req, arrival)
	} else {
		into := collect(&res)
		out = s.Pool.Run(ctx, raw, arrival, func(exit, no, ne int, body io.Reader) error {
			release() // the worker has the request
			return into(exit, no, ne, body)
		})
		if out.Cause == "" && out.DeliverErr != nil {
			// The worker's result could not be read: it died meanwhile.
			out.Cause, out.Detail = CauseCrashed, out.DeliverErr.Error()
		}
		if out.Cause != "" {
			res = nil
		}
	}
	s.record(d, command, res, out, time.Since(arrival))
	if res == nil {
		res = s.failed(d, out)
	}
	return res
}

// overBudget logs and counts a request refused for the request budget, and
// says why.
func (s *Server) overBudget(arrival time.Time) string {
	s.Log.Warn("request refused", "cause", fmt.Sprintf("the server holds %d MiB of requests, its budget", s.RequestBudget>>20))
	s.Metrics.Generation("request-budget", 0, time.Since(arrival))
	return fmt.Sprintf("the render server holds %d MiB of requests at once, the most it may (too many large requests): %v", s.RequestBudget>>20, errLimitText)
}

// errLimitText ends every limit message, as errdef.ErrLimitExceeded reads.
const errLimitText = "limit exceeded"

// skipLine reads up to '\n' (at most limit bytes) without keeping it.
func skipLine(r *bufio.Reader, limit int) {
	for n := 0; n <= limit; {
		chunk, err := r.ReadSlice('\n')
		n += len(chunk)
		if err != bufio.ErrBufferFull {
			return
		}
	}
}

// take reserves n request bytes from the budget; giveBack returns them.
func (s *Server) take(n int64) bool {
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	if s.budgetUsed+n > s.RequestBudget {
		return false
	}
	s.budgetUsed += n
	return true
}

func (s *Server) giveBack(n int64) {
	if n == 0 {
		return
	}
	s.budgetMu.Lock()
	s.budgetUsed -= n
	s.budgetMu.Unlock()
}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// streamResult writes a worker's result to the client as it reads it. The
// header goes out with the first part of the output, so that a result of a
// few KiB is one write and wakes the client once.
func streamResult(conn net.Conn, exit, no, ne int, body io.Reader) error {
	_ = conn.SetWriteDeadline(time.Now().Add(deliverTimeout))
	defer conn.SetWriteDeadline(time.Time{})
	h, err := json.Marshal(header{Exit: exit, Stdout: no, Stderr: ne})
	if err != nil {
		return err
	}
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	b := append(append((*buf)[:0], h...), '\n')
	for {
		n, rerr := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) == cap(b) || rerr != nil {
			if len(b) > 0 {
				if _, err := conn.Write(b); err != nil {
					return err
				}
			}
			b = b[:0]
		}
		switch {
		case rerr == io.EOF:
			return nil
		case rerr != nil:
			return rerr
		}
	}
}

// limitMessage is the one error line of a generation the pool stopped.
func (s *Server) limitMessage(out Outcome) string {
	p := s.Pool
	switch out.Cause {
	case CauseDeadline:
		return fmt.Sprintf("generation exceeded the deadline of %s (the render server stopped it): limit exceeded", p.Deadline)
	case CauseQueueDeadline:
		return fmt.Sprintf("generation exceeded the deadline of %s waiting for a free render worker (%s): limit exceeded", p.Deadline, out.Detail)
	case CauseMemory:
		return fmt.Sprintf("generation exceeded the memory limit of %s (the render server stopped it): limit exceeded", mib(p.MaxMemory))
	case CauseTotalMemory:
		return fmt.Sprintf("generation exceeded the render workers' shared memory limit of %s, using the most of them (%s; the render server stopped it): limit exceeded", mib(p.TotalMemory), out.Detail)
	case CauseCrashed:
		return fmt.Sprintf("render failed: the render worker died during the generation (%s)", out.Detail)
	default:
		return fmt.Sprintf("render failed: no render worker available: %s", out.Detail)
	}
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// Description names a request in log lines and messages; it never holds
// values or credentials.
type Description struct {
	Application, Project, Component, Version string
}

// Prefix is the errdef form: "application A: component C:V: ".
func (d Description) Prefix() string {
	var b strings.Builder
	if d.Application != "" {
		b.WriteString("application " + d.Application + ": ")
	}
	if d.Component != "" {
		b.WriteString("component " + d.Component)
		if d.Version != "" {
			b.WriteString(":" + d.Version)
		}
		b.WriteString(": ")
	}
	return b.String()
}

// inProcess runs the handler in this process, at most Parallelism at once.
func (s *Server) inProcess(ctx context.Context, req *Request, arrival time.Time) (*Result, Outcome) {
	var out Outcome
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		out.Cause = CauseCanceled
		return nil, out
	}
	defer func() { <-s.sem }()
	out.Queue = time.Since(arrival)
	var stdout, stderr bytes.Buffer
	code := runHandler(ctx, s.Handler, req, &stdout, &stderr, s.Log)
	if ctx.Err() != nil {
		out.Cause = CauseCanceled
		return nil, out
	}
	return &Result{Exit: code, Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, out
}

// Running returns how many admitted requests are running or waiting for a
// worker: what a supervisor waits for before it ends the sidecar.
func (s *Server) Running() int {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	return s.running
}

// busy and done count running commands; the last one to finish arms the
// idle timer that returns memory to the system.
func (s *Server) busy() {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	s.running++
	if s.idle != nil {
		s.idle.Stop()
	}
}

func (s *Server) done() {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	s.running--
	if s.running > 0 || s.ReleaseMemoryAfter < 0 {
		return
	}
	if s.idle == nil {
		s.idle = time.AfterFunc(s.ReleaseMemoryAfter, s.releaseIfIdle)
		return
	}
	s.idle.Reset(s.ReleaseMemoryAfter)
}

func (s *Server) releaseIfIdle() {
	s.idleMu.Lock()
	idle := s.running == 0
	s.idleMu.Unlock()
	if idle {
		debug.FreeOSMemory()
		s.releases.Add(1)
	}
}
