//go:build unix

package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Defaults of a Pool.
const (
	DefaultWorkers      = 4
	DefaultWarm         = 2
	DefaultDeadline     = 50 * time.Second
	DefaultGrace        = time.Second
	DefaultRecycleAfter = 200
	DefaultIdleTimeout  = 30 * time.Second
	DefaultPoll         = 10 * time.Millisecond
	// DefaultGrowAfter: requests wait for a busy worker unless every busy
	// worker's generation has run this long (a slow registry, a large chart):
	// only then is another worker started. A burst of short generations is
	// served by the warm workers, which keep both cores busy, instead of
	// paying a worker's start-up for each of them.
	DefaultGrowAfter = 250 * time.Millisecond
	// workerStartTimeout bounds a worker's start-up (exec and package
	// initialisation, about 60-100 ms).
	workerStartTimeout = 10 * time.Second
)

// Pool is the render server's supervisor side: a pool of worker processes
// (this binary re-executed, see ServeWorker), each running one generation at
// a time, killed with SIGKILL when the generation passes its deadline or its
// memory limit. A worker is a process so that a runaway template can be
// stopped without stopping anybody else's generation: Go cannot kill a
// goroutine, and Helm's and kustomize's loops do not look at contexts.
//
// Fields are read by Start; zero values take the documented defaults.
type Pool struct {
	// Command returns the command that starts one worker. The pool sets its
	// ExtraFiles (fd 3: the worker's end of the connection), stdio and
	// SysProcAttr. Required.
	Command func() *exec.Cmd
	// Size is the most workers at once, hence the most generations running
	// at once; the others wait in line within their deadline. Default
	// DefaultWorkers.
	Size int
	// Warm workers are kept started while idle, so that a generation finds a
	// process past package initialisation; more are started when requests
	// wait behind slow generations (see GrowAfter; a request takes whichever
	// comes first: a new worker or one that finished) and end after
	// IdleTimeout idle. Default DefaultWarm (at most Size).
	Warm int
	// GrowAfter: see DefaultGrowAfter (the default).
	GrowAfter time.Duration
	// Deadline of a generation, counted from its arrival (queue included).
	// Default DefaultDeadline.
	Deadline time.Duration
	// Grace is how long after Deadline a worker may still deliver its own
	// error (which names the resource) before it is killed. Default DefaultGrace.
	Grace time.Duration
	// MaxMemory bounds the private resident memory (heap, stacks; not the
	// binary's shared pages) of one worker, in bytes; polled every Poll.
	// 0: no limit.
	MaxMemory int64
	// TotalMemory bounds the private memory of all workers together: past
	// it, the busy worker using the most is killed. 0: no limit.
	TotalMemory int64
	// RecycleAfter: a worker is replaced after this many generations.
	// Default DefaultRecycleAfter.
	RecycleAfter int
	// RecycleAbove: a worker whose private memory is above this after a
	// generation is replaced (Go returns freed memory slowly). Default
	// MaxMemory/2; 0 with no MaxMemory: never.
	RecycleAbove int64
	// IdleTimeout: workers beyond Warm end after this long idle. Default
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Poll is how often the workers' memory is read. Default DefaultPoll.
	Poll time.Duration
	// Stderr receives the workers' own stderr (warnings, panics), whole
	// lines. Default os.Stderr.
	Stderr io.Writer
	// Log receives one line per worker killed or failing to start. Default: discard.
	Log *slog.Logger
	// Metrics counts worker starts and kills. Optional.
	Metrics *Metrics

	mu       sync.Mutex
	workers  map[*worker]struct{}
	idle     []*worker // most recently used last
	total    int       // workers alive or starting
	starting int
	waiters  []chan *worker
	closed   bool
	stop     chan struct{}
	done     chan struct{}
	stderrMu sync.Mutex
}

type worker struct {
	pid       int
	cmd       *exec.Cmd
	conn      *os.File
	br        *bufio.Reader
	exited    chan struct{} // closed once the process is reaped
	gens      int
	busy      bool
	idleSince time.Time
	busySince time.Time
	rss       int64  // private memory at the last poll
	killed    string // cause, once killed by the pool
}

// Start starts the warm workers and the watchdog. The pool runs until Close.
func (p *Pool) Start() error {
	if p.Command == nil {
		return errors.New("server: pool without a worker command")
	}
	if p.Size <= 0 {
		p.Size = DefaultWorkers
	}
	if p.Warm <= 0 {
		p.Warm = DefaultWarm
	}
	p.Warm = min(p.Warm, p.Size)
	if p.Deadline <= 0 {
		p.Deadline = DefaultDeadline
	}
	if p.Grace <= 0 {
		p.Grace = DefaultGrace
	}
	if p.RecycleAfter <= 0 {
		p.RecycleAfter = DefaultRecycleAfter
	}
	if p.RecycleAbove <= 0 && p.MaxMemory > 0 {
		p.RecycleAbove = p.MaxMemory / 2
	}
	if p.IdleTimeout <= 0 {
		p.IdleTimeout = DefaultIdleTimeout
	}
	if p.Poll <= 0 {
		p.Poll = DefaultPoll
	}
	if p.GrowAfter <= 0 {
		p.GrowAfter = DefaultGrowAfter
	}
	if p.Stderr == nil {
		p.Stderr = os.Stderr
	}
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
	p.workers = map[*worker]struct{}{}
	p.stop = make(chan struct{})
	p.done = make(chan struct{})
	// The first worker is started synchronously: a binary that cannot run
	// its worker is an error of the installation, reported at once.
	w, err := p.spawn()
	if err != nil {
		return fmt.Errorf("server: starting a render worker: %w", err)
	}
	p.mu.Lock()
	p.total++
	p.putIdle(w)
	for p.total < p.Warm {
		p.startAsync()
	}
	p.mu.Unlock()
	go p.watch()
	return nil
}

// Close kills every worker and waits for them.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.stop)
	for _, ch := range p.waiters {
		ch <- nil
	}
	p.waiters = nil
	ws := make([]*worker, 0, len(p.workers))
	for w := range p.workers {
		p.killLocked(w, "shutdown")
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		<-w.exited
	}
	<-p.done
}

// Do runs req in a worker and returns its result. res is nil when the worker
// gave none; out.Cause then says why. The deadline counts from arrival.
func (p *Pool) Do(ctx context.Context, req *Request, arrival time.Time) (res *Result, out Outcome) {
	deadline := arrival.Add(p.Deadline)
	qctx, cancel := context.WithDeadline(ctx, deadline)
	w, err := p.acquire(qctx)
	cancel()
	out.Queue = time.Since(arrival)
	switch {
	case err != nil && ctx.Err() != nil:
		out.Cause = CauseCanceled
		return nil, out
	case err != nil && !time.Now().Before(deadline):
		out.Cause, out.Detail = CauseQueueDeadline, fmt.Sprintf("all %d render workers busy", p.Size)
		return nil, out
	case err != nil:
		out.Cause, out.Detail = CauseNoWorker, err.Error()
		return nil, out
	}
	out.Worker = w.pid
	sent := *req
	sent.Deadline = deadline
	type reply struct {
		res *Result
		err error
	}
	replies := make(chan reply, 1)
	go func() {
		_ = w.conn.SetWriteDeadline(deadline.Add(p.Grace))
		if err := writeRequest(w.conn, &sent); err != nil {
			replies <- reply{nil, err}
			return
		}
		res, _, err := readResult(w.br)
		replies <- reply{res, err}
	}()
	timer := time.NewTimer(time.Until(deadline.Add(p.Grace)))
	defer timer.Stop()
	var r reply
	select {
	case r = <-replies:
	case <-timer.C:
		p.kill(w, CauseDeadline)
		r = <-replies
	case <-ctx.Done():
		p.kill(w, CauseCanceled)
		r = <-replies
	}
	if r.err == nil {
		p.release(w)
		return r.res, out
	}
	// No complete result: the worker is dead or is killed now.
	p.kill(w, CauseCrashed)
	<-w.exited
	p.mu.Lock()
	out.Cause = w.killed
	switch out.Cause {
	case CauseCrashed:
		out.Detail = exitDetail(w.cmd.ProcessState)
	case CauseMemory, CauseTotalMemory:
		out.Detail = fmt.Sprintf("%d MiB", w.rss>>20)
	}
	p.mu.Unlock()
	return nil, out
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func exitDetail(ps *os.ProcessState) string {
	if ps == nil {
		return "unknown"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", ps.ExitCode())
}

// acquire takes an idle worker, starts one if the pool has room, or waits.
func (p *Pool) acquire(ctx context.Context) (*worker, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("render server shutting down")
	}
	for n := len(p.idle); n > 0; n = len(p.idle) {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		if isClosed(w.exited) || w.killed != "" {
			p.removeLocked(w)
			continue
		}
		w.busy, w.busySince = true, time.Now()
		p.mu.Unlock()
		return w, nil
	}
	ch := make(chan *worker, 1)
	p.waiters = append(p.waiters, ch)
	if p.total < p.Warm && p.starting < len(p.waiters) {
		p.startAsync()
	}
	p.mu.Unlock()
	select {
	case w := <-ch:
		if w == nil {
			return nil, errors.New("render server shutting down")
		}
		return w, nil
	case <-ctx.Done():
		p.mu.Lock()
		for i, c := range p.waiters {
			if c == ch {
				p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
				break
			}
		}
		select {
		case w := <-ch: // handed over just now: give it back
			if w != nil {
				p.putIdle(w)
			}
		default:
		}
		p.mu.Unlock()
		return nil, ctx.Err()
	}
}

// putIdle hands w to the first waiter or parks it; p.mu is held.
func (p *Pool) putIdle(w *worker) {
	p.workers[w] = struct{}{}
	if p.closed {
		p.killLocked(w, "shutdown")
		return
	}
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		w.busy, w.busySince = true, time.Now()
		ch <- w
		return
	}
	w.busy = false
	w.idleSince = time.Now()
	p.idle = append(p.idle, w)
}

// startAsync starts a worker in the background and parks it; p.mu is held.
func (p *Pool) startAsync() {
	p.total++
	p.starting++
	go func() {
		w, err := p.spawn()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.starting--
		if err != nil {
			p.total--
			p.Log.Error("render worker failed to start", "cause", err.Error())
			return
		}
		p.putIdle(w)
	}()
}

// release takes back a worker that delivered a result: it is parked, or
// replaced when it has served enough generations or holds too much memory.
func (p *Pool) release(w *worker) {
	p.mu.Lock()
	w.gens++
	rss, err := privateRSS(w.pid)
	if err == nil {
		w.rss = rss
	}
	recycle := w.gens >= p.RecycleAfter || (p.RecycleAbove > 0 && w.rss > p.RecycleAbove)
	if !recycle {
		p.putIdle(w)
		p.mu.Unlock()
		return
	}
	p.killLocked(w, "recycled")
	p.mu.Unlock()
}

// remove forgets a dead worker (called once it is reaped) and starts another
// when someone waits or the pool is below Warm.
func (p *Pool) remove(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removeLocked(w)
}

func (p *Pool) removeLocked(w *worker) {
	if _, ok := p.workers[w]; !ok {
		return
	}
	delete(p.workers, w)
	for i, iw := range p.idle {
		if iw == w { // died while idle (kill -9, OOM killer)
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			break
		}
	}
	p.total--
	if p.closed {
		return
	}
	for p.total < p.Size && (p.total < p.Warm || p.starting < len(p.waiters)) {
		p.startAsync()
	}
}

func (p *Pool) kill(w *worker, cause string) {
	p.mu.Lock()
	p.killLocked(w, cause)
	p.mu.Unlock()
}

// killLocked sends SIGKILL once; the first cause sticks. p.mu is held.
func (p *Pool) killLocked(w *worker, cause string) {
	if w.killed != "" {
		return
	}
	w.killed = cause
	select {
	case <-w.exited: // reaped: the pid may belong to someone else now
	default:
		_ = w.cmd.Process.Kill()
	}
	if cause != "shutdown" && cause != CauseCrashed {
		p.Metrics.workerKilled(cause)
		if cause != "recycled" {
			p.Log.Warn("render worker killed", "worker", w.pid, "cause", cause, "private_mib", w.rss>>20)
		}
	}
}

// spawn starts a worker process and waits until it is ready.
func (p *Pool) spawn() (*worker, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, err
	}
	_ = syscall.SetNonblock(fds[0], true) // pollable: read deadlines work
	conn := os.NewFile(uintptr(fds[0]), "render-worker")
	child := os.NewFile(uintptr(fds[1]), "render-supervisor")
	defer child.Close()
	cmd := p.Command()
	cmd.ExtraFiles = []*os.File{child}
	cmd.Stdin, cmd.Stdout = nil, nil // /dev/null: nothing of the sidecar's stdio for a render to read
	cmd.SysProcAttr = workerSysProcAttr()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		conn.Close()
		return nil, err
	}
	if err := startOnSpawnThread(cmd.Start); err != nil {
		conn.Close()
		return nil, err
	}
	w := &worker{pid: cmd.Process.Pid, cmd: cmd, conn: conn, br: bufio.NewReaderSize(conn, 64<<10), exited: make(chan struct{})}
	go p.copyStderr(stderr)
	go func() {
		_ = cmd.Wait()
		conn.Close()
		close(w.exited)
		p.remove(w)
	}()
	p.Metrics.workerStarted()
	_ = conn.SetReadDeadline(time.Now().Add(workerStartTimeout))
	h, err := readHeader(w.br)
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil || h.Ready != w.pid {
		_ = cmd.Process.Kill()
		<-w.exited
		if err == nil {
			err = fmt.Errorf("unexpected greeting %+v", h)
		}
		return nil, fmt.Errorf("render worker %d: %v (%s)", w.pid, err, exitDetail(cmd.ProcessState))
	}
	return w, nil
}

// copyStderr passes a worker's stderr on in whole lines (bounded), so that
// the lines of several workers never interleave.
func (p *Pool) copyStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			p.stderrMu.Lock()
			_, _ = p.Stderr.Write(line)
			if line[len(line)-1] != '\n' && err != bufio.ErrBufferFull {
				_, _ = p.Stderr.Write([]byte{'\n'})
			}
			p.stderrMu.Unlock()
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// watch polls the workers' memory every Poll, kills those past a limit, and
// ends workers idle beyond Warm.
func (p *Pool) watch() {
	defer close(p.done)
	t := time.NewTicker(p.Poll)
	defer t.Stop()
	lastSweep := time.Now()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		var sum int64
		var largest *worker
		for w := range p.workers {
			if !w.busy || w.killed != "" {
				sum += w.rss
				continue
			}
			if rss, err := privateRSS(w.pid); err == nil {
				w.rss = rss
			}
			sum += w.rss
			if p.MaxMemory > 0 && w.rss > p.MaxMemory {
				p.killLocked(w, CauseMemory)
				continue
			}
			if largest == nil || w.rss > largest.rss {
				largest = w
			}
		}
		if p.TotalMemory > 0 && sum > p.TotalMemory && largest != nil {
			p.killLocked(largest, CauseTotalMemory)
		}
		p.growLocked()
		if time.Since(lastSweep) >= time.Second {
			lastSweep = time.Now()
			p.retireIdleLocked()
		}
		p.mu.Unlock()
	}
}

// growLocked starts a worker for requests waiting behind generations that
// all run for GrowAfter or longer. p.mu is held.
func (p *Pool) growLocked() {
	if len(p.waiters) <= p.starting || p.total >= p.Size || p.closed {
		return
	}
	for w := range p.workers {
		if w.busy && w.killed == "" && time.Since(w.busySince) < p.GrowAfter {
			return // a generation that may end soon
		}
	}
	p.startAsync()
}

// retireIdleLocked ends workers beyond Warm idle for IdleTimeout, the
// longest idle first (the front of p.idle). p.mu is held.
func (p *Pool) retireIdleLocked() {
	alive := p.total - p.starting
	for len(p.idle) > 0 && alive > p.Warm && time.Since(p.idle[0].idleSince) >= p.IdleTimeout {
		w := p.idle[0]
		p.idle = p.idle[1:]
		alive--
		w.busy = true // not idle any more; the watchdog skips killed ones
		p.killLocked(w, "recycled")
	}
}

// Stats returns the pool's current state.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Workers: len(p.workers), Waiting: len(p.waiters)}
	for w := range p.workers {
		if w.busy {
			s.Busy++
		}
		s.PrivateBytes += w.rss
	}
	return s
}

// Pids lists the workers' process ids (tests, metrics).
func (p *Pool) Pids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pids []int
	for w := range p.workers {
		pids = append(pids, w.pid)
	}
	return pids
}
