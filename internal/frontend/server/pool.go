//go:build unix

package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults of a Pool.
const (
	DefaultWorkers      = 4
	DefaultWarm         = 1
	DefaultDeadline     = 50 * time.Second
	DefaultGrace        = time.Second
	DefaultRecycleAfter = 1000
	DefaultIdleTimeout  = 30 * time.Second
	DefaultPoll         = 10 * time.Millisecond
	// DefaultGrowAfter: beyond one worker per core (see Pool.Eager),
	// requests wait for a busy worker unless every busy worker's generation
	// has run this long (a slow registry, a large chart) and none of them is
	// kept waiting for a CPU: only then is another worker started. A burst
	// of short generations on busy cores is served by the workers there are,
	// instead of paying a worker's start-up (60-75 ms of CPU, ~10 MiB) for
	// each of them.
	DefaultGrowAfter = 250 * time.Millisecond
	// growWindow is how long a busy worker's scheduler statistics are
	// watched before the pool decides that it waits for a CPU.
	growWindow = 50 * time.Millisecond
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
	// Eager: up to this many workers, a request that finds every worker
	// busy starts another at once. Default GOMAXPROCS (one per core, at
	// most Size): fewer cannot keep the cores busy.
	Eager int
	// GrowAfter: see DefaultGrowAfter (the default).
	GrowAfter time.Duration
	// LockDir is the directory of the blob cache's lock files as the
	// workers open them (internal/source/cache: <cache>/locks, symbolic links
	// resolved). A generation that has one open without holding its lock
	// waits for another's fetch of the same blob, deduplicated across
	// workers (bounded: the cache gives up on a fetch that stalls): the pool
	// does not grow for it (see shouldGrow). Empty: not looked at.
	LockDir string
	// Procs is the number of cores the workers share. Each generation is
	// given its share when it starts (ProcsFor: all of them for a
	// generation that renders alone, one each when at least as many
	// generations run or wait as there are cores), and its worker sets
	// runtime.GOMAXPROCS to that before it renders. 0 (the default): the
	// supervisor's own GOMAXPROCS, read at every generation (the
	// container's CPU limit, or the sidecar's GOMAXPROCS). Negative: never
	// set; workers keep the GOMAXPROCS they started with.
	Procs int
	// GCAlone, when positive, is the GOGC of a generation that starts
	// alone (no other generation running or waiting): it may use the
	// sidecar's memory that the others would otherwise need, for less
	// collection work. Others run with the worker's own GOGC. 0: never set.
	GCAlone int
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
	// totalKill is the last worker killed for TotalMemory; no other is
	// killed for it until that one is gone.
	totalKill *worker
	closed    bool
	stop      chan struct{}
	done      chan struct{}
	wake      chan struct{} // see wakeWatch
	polls     atomic.Int64  // the watchdog's rounds (tests)
	stderrMu  sync.Mutex
}

type worker struct {
	pid    int
	cmd    *exec.Cmd
	conn   *os.File
	br     *bufio.Reader
	exited chan struct{} // closed once the process is reaped
	// stderrDone is closed once the copy of its stderr has reached the end
	// (every process holding the pipe is gone), or failed.
	stderrDone chan struct{}
	gens       int
	busy       bool
	idleSince  time.Time
	busySince  time.Time
	rss        int64 // private memory at the last poll
	// procs, gc: the Ps and the GOGC the worker was told to render its
	// generation with (0: its own).
	procs, gc int
	// Scheduler statistics at markAt (see growLocked): time its threads
	// waited for a CPU.
	markAt   time.Time
	markWait int64
	killed   string // cause, once killed by the pool
	// asLimit is the worker's address-space limit (0: none); outOfMemory:
	// the runtime reported an allocation that failed (the limit was hit).
	asLimit     int64
	outOfMemory bool
	// delivering: the generation is done and its result is being copied
	// to the client; no limit applies any more.
	delivering bool
	// held: a Run has w, from acquire until it parks w or is done with it,
	// and may still read what w sent before it died (its acknowledgement,
	// its result). The connection is closed once w is reaped and not held
	// (closeConnLocked): closed at the reap, a read that had not yet taken
	// the acknowledgement of a worker that then crashed failed with "file
	// already closed", and the generation it had run was run again.
	held, connClosed bool
	// forgotten: removeLocked took w out of the pool's count (it was reaped).
	// A Run that still held w must not park it again: acquire would find it
	// dead and count the pool down a second time, and the pool could then
	// start more workers than Size.
	forgotten bool
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
	if p.Eager <= 0 {
		p.Eager = runtime.GOMAXPROCS(0)
	}
	p.Eager = max(min(p.Eager, p.Size), p.Warm)
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
	p.wake = make(chan struct{}, 1)
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
	safety, cancel := context.WithTimeout(context.Background(), stderrTimeout)
	defer cancel()
	for _, w := range ws {
		<-w.exited
		select { // their last lines before Close returns
		case <-w.stderrDone:
		case <-safety.Done():
		}
	}
	<-p.done
}

// Deliver receives a worker's result: its exit code, the sizes of its
// stdout and stderr, and body, which reads exactly those bytes (stdout, then
// stderr) from the worker. The supervisor streams them to its client
// instead of holding them: a large manifest stream costs the supervisor a
// copy buffer, not its size.
type Deliver func(exit, stdoutLen, stderrLen int, body io.Reader) error

// collect is a Deliver that reads the result into *res.
func collect(res **Result) Deliver {
	return func(exit, no, ne int, body io.Reader) error {
		if no < 0 || ne < 0 || no > maxOutput || ne > maxOutput {
			return fmt.Errorf("output sizes %d, %d", no, ne)
		}
		r := &Result{Exit: exit, Stdout: make([]byte, no), Stderr: make([]byte, ne)}
		if _, err := io.ReadFull(body, r.Stdout); err != nil {
			return err
		}
		if _, err := io.ReadFull(body, r.Stderr); err != nil {
			return err
		}
		*res = r
		return nil
	}
}

// Do runs req in a worker and returns its result, held in memory (tests, and
// callers that want the bytes). res is nil when the worker gave none;
// out.Cause then says why. The deadline counts from arrival.
func (p *Pool) Do(ctx context.Context, req *Request, arrival time.Time) (res *Result, out Outcome) {
	raw, err := json.Marshal(req)
	if err != nil {
		out.Cause, out.Detail = CauseNoWorker, err.Error()
		return nil, out
	}
	out = p.Run(ctx, raw, arrival, collect(&res))
	if out.Cause != "" {
		res = nil
	}
	return res, out
}

// Run runs raw (one request line as a client sent it) in a worker and hands
// the worker's result to deliver. When the worker gives no result (a limit,
// a crash, the client gone), deliver is not called and out.Cause says why;
// when the worker dies while deliver reads its result, out.Cause is set too
// and out.Started says that deliver had begun. The deadline counts from
// arrival.
//
// A worker that died before it took the job (killed from outside while
// idle, before the pool reaped it) is no failure of the generation: it goes
// to another worker, at most maxRedeliveries times, within the same
// deadline. Once a worker has taken the job, it is never run again.
func (p *Pool) Run(ctx context.Context, raw []byte, arrival time.Time, deliver Deliver) (out Outcome) {
	deadline := arrival.Add(p.Deadline)
	for attempt := 0; ; attempt++ {
		qctx, cancel := context.WithDeadline(ctx, deadline)
		w, err := p.acquire(qctx)
		cancel()
		out.Queue = time.Since(arrival)
		switch {
		case err != nil && ctx.Err() != nil:
			out.Cause = CauseCanceled
			return out
		case err != nil && !time.Now().Before(deadline):
			out.Cause, out.Detail = CauseQueueDeadline, fmt.Sprintf("all %d render workers busy", p.Size)
			return out
		case err != nil:
			out.Cause, out.Detail = CauseNoWorker, err.Error()
			return out
		}
		out.Worker, out.Procs = w.pid, w.procs
		h, taken, err := p.await(ctx, w, raw, jobHeader{Deadline: deadline, Procs: w.procs, GC: w.gc})
		if err != nil && !taken && attempt < maxRedeliveries && p.diedBeforeTaking(w, err) {
			p.letGo(w)
			p.Metrics.redelivered()
			p.Log.Warn("render worker found dead before it took its generation: given to another", "worker", w.pid, "cause", err.Error(), "redelivery", attempt+1)
			continue
		}
		if err == nil && !p.startDelivery(w) {
			err = errors.New("killed") // a limit was hit just as the result came
		}
		if err == nil && p.deliverResult(w, h, deliver, &out) {
			return out
		}
		// No complete result: the worker is dead or is killed now.
		p.lost(w, &out)
		return out
	}
}

// maxRedeliveries bounds how often Run gives a generation to another worker
// because the one it had was dead before it took the job.
const maxRedeliveries = 2

// diedBeforeTaking reports whether w's connection ended (err, from await)
// before w acknowledged its job, without the pool having killed w: w died
// by itself or was killed from outside (kill -9, the OOM killer), before or
// while the job was sent. An end of the connection means that every thread
// of w has closed its files, i.e. w is dead (a zombie at most), or that
// the reaper shut it down; either comes after everything w sent, so no
// acknowledgement means that the generation did not start in it (see
// ServeWorker): it may run elsewhere. w is marked crashed; its Wait
// forgets it. A worker the pool killed (deadline, memory, the client gone)
// keeps that cause.
func (p *Pool) diedBeforeTaking(w *worker, err error) bool {
	if !connectionEnded(err) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.killed != "" {
		return false
	}
	p.killLocked(w, CauseCrashed) // dead already unless reaped: harmless, and never reused
	return true
}

// connectionEnded: err says that the peer's end of the connection is
// closed, or that ours was shut down after its process was reaped. Not
// os.ErrClosed: a read on a closed file may have lost what the peer sent
// (see worker.held); the connection of a held worker is never closed.
func connectionEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// await sends the job to w and waits for its result's header, killing w
// when the deadline (and its grace) passes or ctx ends first. taken: w
// acknowledged the job (see ServeWorker), i.e. it may have run it.
func (p *Pool) await(ctx context.Context, w *worker, raw []byte, job jobHeader) (h header, taken bool, err error) {
	deadline := job.Deadline
	headers := make(chan error, 1)
	go func() {
		_ = w.conn.SetWriteDeadline(deadline.Add(p.Grace))
		if err := writeJob(w.conn, job, raw); err != nil {
			headers <- err
			return
		}
		var err error
		h, err = readHeader(w.br)
		if err == nil && h.Accepted {
			taken = true
			h, err = readHeader(w.br)
		}
		if err == nil && (h.Stdout < 0 || h.Stderr < 0 || h.Stdout > maxOutput || h.Stderr > maxOutput) {
			err = fmt.Errorf("malformed result: output sizes %d, %d", h.Stdout, h.Stderr)
		}
		headers <- err
	}()
	timer := time.NewTimer(time.Until(deadline.Add(p.Grace)))
	defer timer.Stop()
	select {
	case err = <-headers:
	case <-timer.C:
		p.kill(w, CauseDeadline)
		err = <-headers
	case <-ctx.Done():
		p.kill(w, CauseCanceled)
		err = <-headers
	}
	return h, taken, err
}

// deliverResult hands the result of header h to deliver. It returns true
// when nothing is left to do: the whole result was read (w goes back to
// the pool) or deliver gave up (w is killed); false when w died while
// sending its result.
func (p *Pool) deliverResult(w *worker, h header, deliver Deliver, out *Outcome) bool {
	// The worker is done rendering; only its result is left to copy.
	_ = w.conn.SetReadDeadline(time.Now().Add(deliverTimeout))
	body := &bodyReader{r: w.br, left: int64(h.Stdout) + int64(h.Stderr)}
	out.Started, out.Exit = true, h.Exit
	out.DeliverErr = deliver(h.Exit, h.Stdout, h.Stderr, body)
	_ = w.conn.SetReadDeadline(time.Time{})
	if body.left == 0 && body.err == nil {
		p.release(w)
		return true
	}
	if body.err == nil {
		// deliver gave up (the client went away): the rest of the
		// result is still in the connection; the worker is not reused.
		p.kill(w, "undelivered")
		p.letGo(w)
		return true
	}
	// body.err: the worker died while sending its result.
	return false
}

// lost kills w (unless it is dead already), waits for it to exit and sets
// out's cause and detail to why it ended.
func (p *Pool) lost(w *worker, out *Outcome) {
	p.kill(w, CauseCrashed)
	<-w.exited
	p.mu.Lock()
	crashed := w.killed == CauseCrashed
	p.mu.Unlock()
	if crashed {
		p.awaitStderr(w)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.letGoLocked(w)
	out.Cause = w.killed
	if out.Cause == CauseCrashed && w.outOfMemory {
		// The address-space limit: the runtime ended the worker itself.
		out.Cause = CauseMemory
		p.Metrics.workerKilled(CauseMemory)
		p.Log.Warn("render worker killed", "worker", w.pid, "cause", CauseMemory, "limit", "address space", "private_mib", w.rss>>20)
	}
	switch out.Cause {
	case CauseCrashed:
		out.Detail = exitDetail(w.cmd.ProcessState)
	case CauseMemory, CauseTotalMemory:
		out.Detail = fmt.Sprintf("%d MiB", w.rss>>20)
	}
}

// awaitStderr waits until w's stderr has been copied to its end: a worker
// that ended by itself says why there (the Go runtime's report of an
// allocation past its address-space limit: the memory limit, not a crash).
// The copy can lag behind the exit (a slow Pool.Stderr, a loaded machine):
// waiting a fixed second after the exit reported such a worker as crashed.
// The end comes once every process holding the pipe is gone; stderrTimeout
// is the safety net for a process that outlives the worker and keeps it.
func (p *Pool) awaitStderr(w *worker) {
	select {
	case <-w.stderrDone:
	case <-time.After(stderrTimeout):
		p.Log.Warn("render worker's stderr still open after it ended: its cause is reported without its last lines", "worker", w.pid)
	}
}

// stderrTimeout bounds how long a worker's end waits for the rest of its
// stderr (see awaitStderr).
const stderrTimeout = 10 * time.Second

// deliverTimeout bounds copying a finished worker's result to the client.
const deliverTimeout = 30 * time.Second

// bodyReader reads the announced bytes of a result and records a read
// error (the worker died while sending).
type bodyReader struct {
	r    io.Reader
	left int64
	err  error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if err == io.EOF && b.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// startDelivery marks w as delivering a finished result (the watchdog
// leaves it alone), unless it was killed already.
func (p *Pool) startDelivery(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w.killed != "" {
		return false
	}
	w.delivering = true
	return true
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
		p.takeLocked(w)
		p.mu.Unlock()
		return w, nil
	}
	ch := make(chan *worker, 1)
	p.waiters = append(p.waiters, ch)
	p.wakeWatch()
	if p.total < p.Eager && p.starting < len(p.waiters) {
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

// takeLocked marks w busy with a generation and gives that generation its
// share of the cores; p.mu is held.
func (p *Pool) takeLocked(w *worker) {
	w.busy, w.held, w.busySince, w.markAt = true, true, time.Now(), time.Time{}
	p.wakeWatch()
	w.procs, w.gc = 0, 0
	running := 0
	for o := range p.workers {
		if o.busy && o.killed == "" && !o.delivering {
			running++ // w included
		}
	}
	if p.GCAlone > 0 && running+len(p.waiters) <= 1 {
		w.gc = p.GCAlone
	}
	cores := p.Procs
	if cores < 0 {
		return
	}
	if cores == 0 {
		cores = runtime.GOMAXPROCS(0)
	}
	w.procs = ProcsFor(cores, running, len(p.waiters))
}

// putIdle hands w to the first waiter or parks it; p.mu is held.
func (p *Pool) putIdle(w *worker) {
	if w.forgotten {
		p.letGoLocked(w)
		return
	}
	p.workers[w] = struct{}{}
	if p.closed {
		p.killLocked(w, "shutdown")
		p.letGoLocked(w)
		return
	}
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.takeLocked(w)
		ch <- w
		return
	}
	w.busy = false
	w.idleSince = time.Now()
	p.idle = append(p.idle, w)
	p.letGoLocked(w) // reaped already: acquire drops it
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
	w.delivering = false
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
	p.letGoLocked(w)
	p.mu.Unlock()
}

// letGo: the Run that had w is done with it (w is dead or killed; see
// worker.held).
func (p *Pool) letGo(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.letGoLocked(w)
}

func (p *Pool) letGoLocked(w *worker) {
	w.held = false
	p.closeConnLocked(w)
}

// closeConnLocked closes w's connection once nobody reads it any more: w
// is reaped and no Run holds it. p.mu is held.
func (p *Pool) closeConnLocked(w *worker) {
	if w.held || w.connClosed || !isClosed(w.exited) {
		return
	}
	w.connClosed = true
	w.conn.Close()
}

// remove forgets a dead worker (called once it is reaped) and starts another
// when someone waits or the pool is below Warm.
func (p *Pool) remove(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removeLocked(w)
	p.closeConnLocked(w)
}

func (p *Pool) removeLocked(w *worker) {
	if _, ok := p.workers[w]; !ok {
		return
	}
	delete(p.workers, w)
	w.forgotten = true
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
	// A pipe of our own, not cmd.StderrPipe: Wait would close that one as
	// soon as the process ends, losing its last lines (a panic, the
	// runtime's "out of memory"), which say why it ended.
	stderr, stderrW, err := os.Pipe()
	if err != nil {
		conn.Close()
		return nil, err
	}
	cmd.Stderr = stderrW
	err = startOnSpawnThread(cmd.Start)
	stderrW.Close()
	if err != nil {
		stderr.Close()
		conn.Close()
		return nil, err
	}
	w := &worker{pid: cmd.Process.Pid, cmd: cmd, conn: conn, br: bufio.NewReaderSize(conn, 64<<10),
		exited: make(chan struct{}), stderrDone: make(chan struct{})}
	go func() {
		p.copyStderr(w, stderr)
		stderr.Close()
		close(w.stderrDone)
	}()
	go func() {
		// Its stderr may still be being copied: lost waits for that when
		// it needs the last lines; the pool's capacity does not.
		_ = cmd.Wait()
		// Not closed here (see worker.held): shut down, it still gives a
		// Run what the worker sent, then the end, also when a process the
		// worker started keeps the worker's end open.
		shutdownConn(conn)
		close(w.exited)
		p.remove(w)
	}()
	p.Metrics.workerStarted()
	_ = conn.SetReadDeadline(time.Now().Add(workerStartTimeout))
	h, err := readHeader(w.br)
	_ = conn.SetReadDeadline(time.Time{})
	if err == nil && h.Ready == w.pid && p.MaxMemory > 0 && !raceEnabled {
		if w.asLimit, err = setAddressSpaceLimit(w.pid, p.MaxMemory+arenaSlack); err != nil {
			p.Log.Warn("render worker without an address-space limit: its memory limit is polled only", "worker", w.pid, "cause", err.Error())
			err = nil
		}
	}
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

// shutdownConn ends both directions of conn: reads return what the peer
// sent and then io.EOF, writes fail with EPIPE, and a Read or Write waiting
// on conn returns at once. Unlike Close, it loses nothing that was sent.
func shutdownConn(conn *os.File) {
	if rc, err := conn.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	}
}

// copyStderr passes a worker's stderr on in whole lines (bounded), so that
// the lines of several workers never interleave.
func (p *Pool) copyStderr(w *worker, r io.Reader) {
	br := bufio.NewReaderSize(r, 16<<10)
	left := 0 // traceback lines after the runtime's "out of memory"
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case outOfMemory(line):
			p.mu.Lock()
			w.outOfMemory = true
			p.mu.Unlock()
			left = max(left, 1)
		case left > 0 && len(line) > 0:
			left++ // the address-space limit was hit: the traceback says nothing more
			line = nil
		}
		if len(line) > 0 {
			p.stderrMu.Lock()
			_, _ = p.Stderr.Write(line)
			if line[len(line)-1] != '\n' && err != bufio.ErrBufferFull {
				_, _ = p.Stderr.Write([]byte{'\n'})
			}
			p.stderrMu.Unlock()
		}
		if err != nil && err != bufio.ErrBufferFull {
			if left > 1 {
				p.stderrMu.Lock()
				fmt.Fprintf(p.Stderr, "(render worker %d: %d lines of the Go runtime's traceback left out: the worker reached its memory limit)\n", w.pid, left-1)
				p.stderrMu.Unlock()
			}
			return
		}
	}
}

// watch polls the workers' memory every Poll while a generation runs or
// waits, kills those past a limit, and ends workers idle beyond Warm (a
// sweep, every second). With nothing running it sleeps until the next
// sweep, or until a generation starts (p.wake): an idle sidecar wakes once
// a second, not a hundred times.
func (p *Pool) watch() {
	defer close(p.done)
	t := time.NewTimer(p.Poll)
	defer t.Stop()
	lastSweep := time.Now()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		case <-p.wake:
			t.Stop() // no stale tick after Stop (Go 1.23 timers)
		}
		p.polls.Add(1)
		p.mu.Lock()
		sweep := time.Since(lastSweep) >= time.Second
		p.checkMemoryLocked(sweep)
		p.growLocked()
		if sweep {
			lastSweep = time.Now()
			p.retireIdleLocked()
		}
		next := p.Poll
		if !p.activeLocked() {
			next = max(next, time.Second-time.Since(lastSweep))
		}
		p.mu.Unlock()
		t.Reset(next)
	}
}

// activeLocked reports whether a generation runs or waits, or a worker
// starts: then the watchdog polls every Poll. p.mu is held.
func (p *Pool) activeLocked() bool {
	if len(p.waiters) > 0 || p.starting > 0 {
		return true
	}
	for w := range p.workers {
		if w.busy && w.killed == "" {
			return true
		}
	}
	return false
}

// wakeWatch makes a sleeping watchdog poll now (a generation started).
func (p *Pool) wakeWatch() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// checkMemoryLocked reads the busy workers' private memory (and the idle
// ones' at a sweep), kills a worker past MaxMemory, and applies
// TotalMemory to the live workers. p.mu is held.
//
// TotalMemory is shared, so it must never cost a generation that keeps to
// its part of it (issue 35: a killed worker's last figure stayed counted
// until it was reaped, so the next poll killed the largest busy worker
// left, an innocent one). Hence: only live workers count (a killed one's
// memory is on its way back); one worker at a time is killed for the total,
// and no other before that one is gone; an idle worker holding memory is
// retired before any generation is touched; and a generation is killed
// only above its share, TotalMemory divided among the live generations
// (when the busy ones together pass the total, at least one of them is
// above it).
func (p *Pool) checkMemoryLocked(sweep bool) {
	var sum int64
	var live []*worker // busy, rendering (not delivering), not killed
	var idle []*worker
	for w := range p.workers {
		if w.killed != "" || isClosed(w.exited) {
			continue // dead or dying: not counted, never chosen
		}
		switch {
		case !w.busy:
			if sweep {
				p.readIdleLocked(w)
			}
			idle = append(idle, w)
		case w.delivering:
			// Done rendering: its memory goes back once the result is out.
		default:
			if rss, err := privateRSS(w.pid); err == nil {
				w.rss = rss
			}
			if p.MaxMemory > 0 && w.rss > p.MaxMemory {
				p.killLocked(w, CauseMemory)
				continue
			}
			live = append(live, w)
		}
		sum += w.rss
	}
	if p.TotalMemory <= 0 || sum <= p.TotalMemory {
		return
	}
	if !sweep {
		// Over the total: the idle workers' figures may be a second old.
		for _, w := range idle {
			sum -= w.rss
			p.readIdleLocked(w)
			sum += w.rss
		}
		if sum <= p.TotalMemory {
			return
		}
	}
	if p.totalKill != nil {
		if !isClosed(p.totalKill.exited) {
			return // the last worker killed for the total is not gone yet
		}
		p.totalKill = nil
	}
	// An idle worker that holds more than a generation's share first:
	// retiring it costs nobody a generation. (Not one of a worker's usual
	// few MiB: its replacement would be retired at the next poll, and the
	// one after it.)
	share := p.TotalMemory / int64(max(len(live), 1))
	var fattest *worker
	for _, w := range idle {
		if fattest == nil || w.rss > fattest.rss {
			fattest = w
		}
	}
	if fattest != nil && fattest.rss > share {
		p.removeIdleLocked(fattest)
		fattest.busy = true // not idle any more; the watchdog skips killed ones
		p.killLocked(fattest, "recycled")
		p.totalKill = fattest
		return
	}
	var largest *worker
	for _, w := range live {
		if largest == nil || w.rss > largest.rss {
			largest = w
		}
	}
	if largest == nil || largest.rss <= share {
		return // the excess is memory no generation holds (idle, delivering)
	}
	p.killLocked(largest, CauseTotalMemory)
	p.totalKill = largest
}

// readIdleLocked refreshes an idle worker's figure: it returns its freed
// heap a while after its generation (ServeWorker), and the peak it no
// longer holds must not count against TotalMemory. p.mu is held.
func (p *Pool) readIdleLocked(w *worker) {
	if rss, err := privateRSS(w.pid); err == nil {
		w.rss = rss
	}
}

// removeIdleLocked takes w out of the idle list. p.mu is held.
func (p *Pool) removeIdleLocked(w *worker) {
	for i, iw := range p.idle {
		if iw == w {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return
		}
	}
}

// busyGen is what the growth rule knows of one running generation.
type busyGen struct {
	age time.Duration // since it started
	// window is the time since its worker's scheduler statistics were
	// last read (0: not before: the rule decides after a window), waited
	// how long its threads waited on a run queue in that time.
	window, waited time.Duration
	// behind: it waits for a cache lock (Pool.LockDir), i.e. for another
	// process's fetch of the same blob.
	behind bool
}

// shouldGrow is the growth rule: another worker is started for requests
// waiting behind gens (every running generation) only when each of them has
// run growAfter, its worker was watched for a window, it did not spend half
// of that window waiting for a CPU (the cores are busy: another worker
// would only add its start-up to their load), and it does not wait for
// another's fetch of a blob (it ends soon after that fetch, and the waiting
// requests of a burst would wait for the same one: in a burst on a cold
// cache every worker but the fetching one is asleep, and the fetching one
// waits for the registry, which looked like a slow registry). Nor while a
// worker starts: it takes a waiting request as soon as it is up, and the
// next decision includes that generation (a window each would otherwise
// start one worker per 50 ms behind one slow fetch). A generation that
// computes (a large chart, a template loop) or waits for a registry by
// itself (a tarpit) leaves room for another.
func shouldGrow(starting int, gens []busyGen, growAfter time.Duration) bool {
	if starting > 0 {
		return false
	}
	for _, g := range gens {
		switch {
		case g.age < growAfter: // may end soon
			return false
		case g.window <= 0: // watched from now on
			return false
		case g.waited*2 >= g.window: // starved of CPU
			return false
		case g.behind:
			return false
		}
	}
	return true
}

// growLocked applies shouldGrow to the running generations and starts a
// worker when it says so. p.mu is held.
func (p *Pool) growLocked() {
	if p.starting > 0 || len(p.waiters) == 0 || p.total >= p.Size || p.closed {
		return // see shouldGrow: one start at a time
	}
	now := time.Now()
	type sampled struct {
		w   *worker
		gen busyGen
	}
	var busy []sampled
	for w := range p.workers {
		if !w.busy || w.killed != "" || w.delivering {
			continue
		}
		if now.Sub(w.busySince) < p.GrowAfter {
			return // a generation that may end soon
		}
		if !w.markAt.IsZero() && now.Sub(w.markAt) < growWindow {
			return // still watching
		}
		busy = append(busy, sampled{w: w, gen: busyGen{age: now.Sub(w.busySince)}})
	}
	var gens []busyGen
	for i := range busy {
		w, g := busy[i].w, &busy[i].gen
		wait, ok := runQueueWait(w.pid)
		if !ok {
			continue // gone: its generation does not hold a worker much longer
		}
		if !w.markAt.IsZero() {
			g.window, g.waited = now.Sub(w.markAt), time.Duration(wait-w.markWait)
		}
		w.markAt, w.markWait = now, wait
		gens = append(gens, *g)
	}
	if !shouldGrow(p.starting, gens, p.GrowAfter) {
		return
	}
	// Only now, as it reads every busy worker's open files: does one of
	// them wait for another's fetch?
	if p.LockDir != "" {
		gens = gens[:0]
		for i := range busy {
			busy[i].gen.behind = waitsForLock(busy[i].w.pid, p.LockDir)
			gens = append(gens, busy[i].gen)
			if busy[i].gen.behind {
				p.Log.Debug("render pool not grown: a generation waits for another's fetch", "worker", busy[i].w.pid, "waiting", len(p.waiters))
			}
		}
		if !shouldGrow(p.starting, gens, p.GrowAfter) {
			return
		}
	}
	var oldest time.Duration
	for _, g := range gens {
		oldest = max(oldest, g.age)
	}
	p.Log.Info("render worker started for waiting requests", "waiting", len(p.waiters), "running", len(gens), "workers", p.total+1, "oldest_ms", oldest.Milliseconds())
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
