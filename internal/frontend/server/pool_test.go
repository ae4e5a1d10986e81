//go:build linux

package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a worker (and as a supervisor for the kill
// test): its handler does what the request's first argument says.
const (
	envTestWorker     = "SERVER_TEST_WORKER"
	envTestSupervisor = "SERVER_TEST_SUPERVISOR"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envTestWorker) == "1":
		err := ServeWorker(context.Background(), os.NewFile(WorkerFD, "supervisor"), testHandler, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case os.Getenv(envTestSupervisor) != "":
		os.Exit(runTestSupervisor(os.Getenv(envTestSupervisor)))
	}
	os.Exit(m.Run())
}

var hold [][]byte

var spins atomic.Int64

func testHandler(ctx context.Context, req *Request, stdout, stderr io.Writer) int {
	switch req.Args[0] {
	case "echo":
		fmt.Fprintf(stdout, "pid %d args %s\n", os.Getpid(), strings.Join(req.Args[1:], " "))
		return 0
	case "spin": // a template loop: ignores its context [and says it runs]
		// No allocation: under heavy load a garbage-making loop was seen to
		// reach the address-space limit in the test binary's workers (cause
		// "memory" instead of "deadline"); this case is about the deadline.
		// With "announce", it tells the pool's Stderr (see spinLog) that it
		// runs, hence that its worker took the job.
		if len(req.Args) > 1 && req.Args[1] == "announce" {
			fmt.Fprintf(os.Stderr, "spin: running in %d\n", os.Getpid())
		}
		for {
			spins.Add(1)
		}
	case "grow": // string doubling: 8 MiB more every millisecond [up to N MiB]
		// Each page touched (resident), not each byte: at load 30 on 2 cores
		// writing every byte made 160 MiB take longer than a 5 s deadline.
		// With N, what it holds and the process's private memory go to
		// its stderr before each step, so that a test can tell how far
		// it got.
		limit := math.MaxInt
		if len(req.Args) > 1 {
			limit, _ = strconv.Atoi(req.Args[1])
		}
		for held := 0; held < limit; held += 8 {
			if limit < math.MaxInt {
				private, _ := PrivateMemory(os.Getpid())
				fmt.Fprintf(os.Stderr, "grow: %d MiB held, %d MiB private\n", held, private>>20)
			}
			b := make([]byte, 8<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			hold = append(hold, b)
			time.Sleep(time.Millisecond)
		}
		fmt.Fprintf(stdout, "grew to %d MiB\n", limit)
		return 0
	case "use": // a generation that used N MiB and returned
		n, _ := strconv.Atoi(req.Args[1])
		b := make([]byte, n<<20)
		for i := range b {
			b[i] = 1
		}
		hold = append(hold, b)
		fmt.Fprintln(stdout, "used")
		return 0
	case "hog": // a heavy generation: 16 MiB more as fast as it can, until killed
		for {
			b := make([]byte, 16<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			hold = append(hold, b)
		}
	case "work": // a normal generation: N MiB in use for M ms
		n, _ := strconv.Atoi(req.Args[1])
		ms, _ := strconv.Atoi(req.Args[2])
		b := make([]byte, n<<20)
		for i := range b {
			b[i] = 1
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		fmt.Fprintln(stdout, "worked", len(b))
		return 0
	case "usefree": // a generation that used N MiB, all garbage once it ends
		n, _ := strconv.Atoi(req.Args[1])
		b := make([]byte, n<<20)
		for i := range b {
			b[i] = 1
		}
		fmt.Fprintln(stdout, "used", len(b))
		return 0
	case "huge": // one allocation far past any limit, touched at once
		b := make([]byte, 2<<30)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		hold = append(hold, b)
		return 0
	case "big": // N MiB of manifests
		n, _ := strconv.Atoi(req.Args[1])
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 64<<10)
		for range n {
			stdout.Write(chunk)
		}
		return 0
	case "procs": // the Ps and the GOGC this generation renders with
		gc := debug.SetGCPercent(100)
		debug.SetGCPercent(gc)
		fmt.Fprintf(stdout, "%d %d\n", runtime.GOMAXPROCS(0), gc)
		return 0
	case "nap": // a generation that runs N ms
		n, _ := strconv.Atoi(req.Args[1])
		time.Sleep(time.Duration(n) * time.Millisecond)
		return 0
	case "blocked": // waits, asleep, for the lock of file N that the test holds (a tarpit registry)
		f, err := os.Open(req.Args[1])
		if err != nil {
			return 3
		}
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX) != nil {
			return 3
		}
		return 0
	case "holdlock": // fetches a blob from a slow registry, holding its cache lock, until it gets the lock of file N
		f, err := os.OpenFile(req.Args[1], os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil || syscall.Flock(int(f.Fd()), syscall.LOCK_EX) != nil {
			return 3
		}
		defer f.Close()
		gate, err := os.Open(req.Args[2])
		if err != nil {
			return 3
		}
		defer gate.Close()
		if syscall.Flock(int(gate.Fd()), syscall.LOCK_EX) != nil {
			return 3
		}
		return 0
	case "waitlock": // another fetch of that blob: polls its lock as internal/source/cache does
		f, err := os.OpenFile(req.Args[1], os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return 3
		}
		defer f.Close()
		for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			time.Sleep(10 * time.Millisecond)
		}
		return 0
	case "polite": // stops at its context's deadline with its own error
		<-ctx.Done()
		fmt.Fprintln(stderr, "argocd-ocm-plugin: application shop: resource chart: context deadline exceeded")
		return 1
	case "crash":
		os.Exit(3)
	case "panic":
		panic("boom")
	}
	return 2
}

func testPool(t *testing.T, p *Pool, env ...string) *Pool {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p.Command = func() *exec.Cmd {
		cmd := exec.Command(self)
		cmd.Env = append(append(os.Environ(), envTestWorker+"=1"), env...)
		return cmd
	}
	if p.Deadline == 0 {
		p.Deadline = 5 * time.Second
	}
	if p.Stderr == nil {
		p.Stderr = io.Discard
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func do(p *Pool, args ...string) (*Result, Outcome) {
	return p.Do(context.Background(), &Request{Args: args}, time.Now())
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// A zombie is dead too (state Z after the command name).
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// Generations run in warm workers that are reused; a worker's panic is one
// failed generation.
func TestPoolRunsInWarmWorkers(t *testing.T) {
	p := testPool(t, &Pool{Size: 2, Warm: 2})
	pids := map[string]bool{}
	for i := range 6 {
		res, out := do(p, "echo", strconv.Itoa(i))
		if res == nil || res.Exit != 0 || !strings.HasSuffix(string(res.Stdout), "args "+strconv.Itoa(i)+"\n") {
			t.Fatalf("run %d: %+v %+v", i, res, out)
		}
		pids[strings.Fields(string(res.Stdout))[1]] = true
	}
	if len(pids) > 2 {
		t.Errorf("6 sequential generations used %d workers, want them reused", len(pids))
	}
	res, _ := do(p, "panic")
	if res == nil || res.Exit != 1 || len(res.Stdout) != 0 || !strings.Contains(string(res.Stderr), "internal error (render server): boom") {
		t.Errorf("panic: %+v", res)
	}
}

// A worker past its deadline or memory limit is killed, the outcome names
// the limit, and the next generation is served by a fresh worker. Each
// limit has a pool of its own, so that a loaded machine cannot make the
// other one come first: at load 20 on 2 cores, "grow" took over 2 s to
// allocate 96 MiB, and "polite" over its 200 ms grace to answer.
//
// The outcome's cause says which limit stopped the worker; how long that
// took is logged, not asserted (at load 60 "spin" was stopped after 2.3 s
// for its 0.8 s deadline). The generation after a kill arrives a minute
// ahead of now: its deadline is a safety net, it checks that the pool
// serves again (at load 60 starting the fresh worker took longer than
// 0.8 s).
func TestPoolKillsAtLimits(t *testing.T) {
	deadline := testPool(t, &Pool{Size: 2, Deadline: 800 * time.Millisecond, Grace: 200 * time.Millisecond, MaxMemory: 96 << 20})
	memory := testPool(t, &Pool{Size: 2, Deadline: time.Minute, MaxMemory: 96 << 20})
	for _, tc := range []struct {
		p     *Pool
		args  []string
		cause string
	}{
		{deadline, []string{"spin"}, CauseDeadline},
		{memory, []string{"grow"}, CauseMemory},
		{deadline, []string{"crash"}, CauseCrashed},
	} {
		p := tc.p
		start := time.Now()
		res, out := do(p, tc.args...)
		took := time.Since(start)
		if res != nil || out.Cause != tc.cause {
			t.Errorf("%s: result %+v, outcome %+v; want cause %s", tc.args[0], res, out, tc.cause)
		}
		if alive(out.Worker) {
			t.Errorf("%s: worker %d still alive", tc.args[0], out.Worker)
		}
		t.Logf("%s: %s (%s) after %v", tc.args[0], out.Cause, out.Detail, took.Round(time.Millisecond))
		res, out = p.Do(context.Background(), &Request{Args: []string{"echo", "after"}}, time.Now().Add(time.Minute))
		if res == nil || res.Exit != 0 {
			t.Fatalf("after %s: %+v %+v", tc.args[0], res, out)
		}
	}
	// Cooperative code reports its own error at the deadline: no kill (the
	// grace is long: answering takes the worker a moment under load).
	polite := testPool(t, &Pool{Size: 1, Deadline: 800 * time.Millisecond, Grace: 20 * time.Second})
	start := time.Now()
	res, out := do(polite, "polite")
	if res == nil || out.Cause != "" || !strings.Contains(string(res.Stderr), "resource chart") {
		t.Errorf("polite: %+v %+v", res, out)
	}
	if took := time.Since(start); took < 800*time.Millisecond {
		t.Errorf("polite answered after %v, before its deadline", took)
	}
}

// The deadline counts from arrival: a request queued behind a busy worker
// fails at its own deadline, not the busy one's end. The request arrived
// 19.5 s of its 20 s ago, so it is refused 0.5 s from now; counting from
// the call, or waiting for the busy generation (20 s), would take 20 s.
// The margin between the two is wide enough for a loaded machine (a 1 s
// deadline and 0.5 s against 0.9 s failed on 2 cores at load 20; 0.1 s
// against 0.7 s leaves 0.6 s, and a refusal came 0.97 s late there).
func TestPoolQueueCountsAgainstTheDeadline(t *testing.T) {
	const deadline, queued = 20 * time.Second, 19500 * time.Millisecond
	p := testPool(t, &Pool{Size: 1, Deadline: deadline, Grace: 100 * time.Millisecond})
	go do(p, "spin")
	waitRunning(t, p, 1)
	start := time.Now()
	res, out := p.Do(context.Background(), &Request{Args: []string{"echo"}}, start.Add(-queued))
	took := time.Since(start)
	if res != nil || out.Cause != CauseQueueDeadline {
		t.Fatalf("%+v %+v", res, out)
	}
	if own := deadline - queued; took < own || took > deadline/2 {
		t.Errorf("refused after %v, want its own deadline %v from now (the busy generation ends in %v)", took, own, deadline)
	}
}

// A client that goes away kills its worker.
func TestPoolCancelKillsTheWorker(t *testing.T) {
	p := testPool(t, &Pool{Size: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, out := p.Do(ctx, &Request{Args: []string{"spin"}}, time.Now())
	if res != nil || out.Cause != CauseCanceled {
		t.Fatalf("%+v %+v", res, out)
	}
	waitDead(t, out.Worker)
}

// kill -9 of a worker: mid-render, one failed generation; while idle, no
// generation notices.
//
// The worker is killed once it runs the generation (spinLog), not once the
// pool has handed it the job: killed before it took the job, the
// generation would rightly go to another worker (TestPoolIdleWorkerKilledJustBefore).
// The deadline is a safety net.
func TestPoolWorkerKilledFromOutside(t *testing.T) {
	spinning := make(spinLog, 8)
	p := testPool(t, &Pool{Size: 2, Warm: 2, Deadline: time.Minute, Stderr: spinning})
	var wg sync.WaitGroup
	wg.Add(1)
	var res *Result
	var out Outcome
	go func() { defer wg.Done(); res, out = do(p, "spin", "announce") }()
	syscall.Kill(spinning.wait(t), syscall.SIGKILL)
	wg.Wait()
	if res != nil || out.Cause != CauseCrashed || !strings.Contains(out.Detail, "killed") {
		t.Errorf("mid-render kill: %+v %+v", res, out)
	}
	// Once the pool has reaped them (a dead process's last threads can hold
	// its end of the socket a while after it shows as a zombie), none of
	// them is handed out. A 50 ms sleep stood for that here; without it 6
	// runs in 30 handed a killed worker to the next generation.
	killed := p.Pids()
	for _, pid := range killed {
		syscall.Kill(pid, syscall.SIGKILL)
		waitDead(t, pid)
	}
	forgotten := func() bool {
		return !slices.ContainsFunc(p.Pids(), func(pid int) bool { return slices.Contains(killed, pid) })
	}
	if !waitUntil(forgotten) {
		t.Fatalf("the pool still lists killed workers %v after they died: %v of %v", safetyNet, p.Pids(), killed)
	}
	for i := range 4 {
		if res, out := do(p, "echo"); res == nil || res.Exit != 0 {
			t.Fatalf("generation %d after the idle workers were killed: %+v %+v", i, res, out)
		}
	}
}

// An idle worker killed from outside (kill -9, the OOM killer) just before a
// generation is handed to it, before the pool has reaped it: the generation
// never reached it and runs in another worker instead of failing. A pool of
// one, so that the killed worker is the one handed out.
func TestPoolIdleWorkerKilledJustBefore(t *testing.T) {
	m := NewMetrics()
	p := testPool(t, &Pool{Size: 1, Warm: 1, Metrics: m})
	const rounds = 50
	for i := range rounds {
		if res, out := do(p, "echo"); res == nil || res.Exit != 0 {
			t.Fatalf("round %d, before the kill: %+v %+v", i, res, out)
		}
		// The worker is parked once its result was read: kill it there
		// (through its os.Process, which knows when it was reaped).
		var killed []int
		p.mu.Lock()
		for _, w := range p.idle {
			if w.killed == "" && !isClosed(w.exited) && w.cmd.Process.Signal(syscall.SIGKILL) == nil {
				killed = append(killed, w.pid)
			}
		}
		p.mu.Unlock()
		if len(killed) == 0 {
			t.Fatalf("round %d: no idle worker to kill", i)
		}
		res, out := do(p, "echo", "after")
		if res == nil || res.Exit != 0 || !strings.Contains(string(res.Stdout), "args after") {
			t.Fatalf("round %d: a generation handed to a worker killed just before failed: %+v %+v", i, res, out)
		}
		if slices.Contains(killed, out.Worker) {
			t.Fatalf("round %d: the result came from killed worker %d: %+v", i, out.Worker, out)
		}
	}
	m.mu.Lock()
	redelivered := m.redeliveries
	m.mu.Unlock()
	if redelivered > rounds {
		t.Errorf("%d redeliveries in %d rounds of one kill each", redelivered, rounds)
	}
	t.Logf("%d of %d generations were handed a killed worker first", redelivered, rounds)
}

// A worker that took its job and then died (by itself, or killed from
// outside mid-render) fails that generation once: it is never given to
// another worker, since it may have run.
//
// Nothing here depends on the machine's speed: the worker is killed once
// "spin" says it runs (spinLog), i.e. after its worker acknowledged the
// job, and the deadline is a safety net. At load 45 the test killed the
// worker 20 ms after the pool had marked it busy: the fresh worker had not
// read its job yet, so the generation was (rightly) given to another one,
// which spun until the 5 s deadline: cause "deadline", one redelivery.
func TestPoolJobTakenIsNotRedelivered(t *testing.T) {
	m := NewMetrics()
	spinning := make(spinLog, 8)
	p := testPool(t, &Pool{Size: 1, Warm: 1, Metrics: m, Deadline: time.Minute, Stderr: spinning})
	if res, out := do(p, "crash"); res != nil || out.Cause != CauseCrashed || out.Detail != "exit status 3" {
		t.Errorf("crash: %+v %+v", res, out)
	}
	done := make(chan Outcome, 1)
	go func() { _, out := do(p, "spin", "announce"); done <- out }()
	syscall.Kill(spinning.wait(t), syscall.SIGKILL)
	if out := <-done; out.Cause != CauseCrashed || out.Detail != "signal killed" {
		t.Errorf("killed mid-render: %+v", out)
	}
	if res, out := do(p, "echo"); res == nil || res.Exit != 0 {
		t.Fatalf("echo after: %+v %+v", res, out)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.redeliveries != 0 || m.workerStarts != 3 {
		t.Errorf("%d redeliveries, %d workers started (want 0 and 3: the first, one after each death, the last serving the echo)", m.redeliveries, m.workerStarts)
	}
}

// A worker that dies after it delivered its result, and is reaped before
// the Run that had it parks it, is counted out of the pool once: parked
// again, acquire found it dead and counted the pool down a second time, so
// the pool believed it had room for a worker more than Size.
func TestPoolForgetsAWorkerReapedBeforeItsRelease(t *testing.T) {
	p := testPool(t, &Pool{Size: 2, Warm: 1, Deadline: time.Minute})
	w, err := p.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(w.pid, syscall.SIGKILL)
	<-w.exited
	counted := func() (total, live int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if _, in := p.workers[w]; !in {
			return p.total, len(p.workers) + p.starting
		}
		return -1, -1
	}
	if !waitUntil(func() bool { total, _ := counted(); return total >= 0 }) {
		t.Fatalf("the reaped worker was not forgotten in %v", safetyNet)
	}
	p.release(w) // the Run that had it is done
	p.mu.Lock()
	_, parked := p.workers[w]
	total, live := p.total, len(p.workers)+p.starting
	p.mu.Unlock()
	if parked || total != live {
		t.Fatalf("after the release of a reaped worker: parked again %v, the pool counts %d workers and has %d", parked, total, live)
	}
	for range 3 {
		if res, out := do(p, "echo"); res == nil || res.Exit != 0 {
			t.Fatalf("echo after: %+v %+v", res, out)
		}
	}
	if n := len(p.Pids()); n > p.Size {
		t.Errorf("%d workers, Size %d", n, p.Size)
	}
}

// The reaper shuts a dead worker's connection down instead of closing it
// (worker.held): what the worker sent before it died (its acknowledgement)
// is still read, then the end; a read waiting on the connection returns
// even while another process (one the worker started) keeps the worker's
// end open; and a job written to it fails as a dead peer does. Closed at
// the reap, the read failed with "file already closed" before it took the
// acknowledgement of a worker that crashed at once ("crash"), and the pool
// ran that generation again (TestPoolJobTakenIsNotRedelivered, 1 to 5 runs
// in 60 at load 5 on 2 cores).
func TestShutdownConnKeepsWhatWasSent(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = syscall.SetNonblock(fds[0], true) // as the pool's end: pollable
	ours := os.NewFile(uintptr(fds[0]), "render-worker")
	peer := os.NewFile(uintptr(fds[1]), "render-supervisor") // kept open: a process the worker started
	defer ours.Close()
	defer peer.Close()
	if _, err := peer.Write([]byte("accepted\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(ours)
	if line, err := br.ReadString('\n'); err != nil || line != "accepted\n" {
		t.Fatalf("before: %q %v", line, err)
	}
	if _, err := peer.Write([]byte("result\n")); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		line, err := br.ReadString('\n')
		if err == nil && line != "result\n" {
			err = fmt.Errorf("read %q", line)
		}
		if err == nil {
			_, err = br.ReadString('\n') // waits: nothing more comes
		}
		read <- err
	}()
	shutdownConn(ours)
	select {
	case err := <-read:
		if !errors.Is(err, io.EOF) || !connectionEnded(err) {
			t.Errorf("read after the shutdown: %v, want what was sent, then io.EOF", err)
		}
	case <-time.After(time.Minute): // a safety net
		t.Fatal("a read still waits a minute after the shutdown")
	}
	if _, err := ours.Write([]byte("job\n")); !errors.Is(err, syscall.EPIPE) || !connectionEnded(err) {
		t.Errorf("write after the shutdown: %v, want EPIPE", err)
	}
}

// A worker that used much memory for one generation is replaced after it;
// so is one that served RecycleAfter generations.
func TestPoolRecycles(t *testing.T) {
	p := testPool(t, &Pool{Size: 1, MaxMemory: 256 << 20, RecycleAbove: 48 << 20, RecycleAfter: 3})
	pidOf := func() int {
		res, _ := do(p, "echo")
		if res == nil {
			t.Fatal("echo failed")
		}
		pid, _ := strconv.Atoi(strings.Fields(string(res.Stdout))[1])
		return pid
	}
	first := pidOf()
	if res, out := do(p, "use", "64"); res == nil || res.Exit != 0 || out.Worker != first {
		t.Fatalf("use: %+v %+v", res, out)
	}
	waitDead(t, first)
	second := pidOf()
	pidOf()
	pidOf() // its third
	waitDead(t, second)
}

// spinLog is the Stderr of a pool whose generation runs "spin announce":
// it receives the pid of each worker that runs it. The line comes from the
// handler, hence after the worker acknowledged its job (ServeWorker): a
// worker killed after it had taken the job. (Busy in the pool said only
// that the job was handed to the worker: 20 ms later it had not always
// read it under load.)
type spinLog chan int

func (s spinLog) Write(b []byte) (int, error) {
	if rest, ok := strings.CutPrefix(string(b), "spin: running in "); ok {
		if pid, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
			select {
			case s <- pid:
			default:
			}
		}
	}
	return len(b), nil
}

// wait returns the pid of the next worker that runs "spin announce" (a
// minute is a safety net).
func (s spinLog) wait(t *testing.T) int {
	t.Helper()
	select {
	case pid := <-s:
		return pid
	case <-time.After(time.Minute):
		t.Fatal("no worker ran spin within a minute")
		return 0
	}
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	if !waitUntil(func() bool { return !alive(pid) }) {
		t.Errorf("process %d still alive after %v", pid, safetyNet)
	}
}

// The server with a pool: a limit is one error line naming the application,
// component, version and limit, with nothing on stdout. Each limit has a
// server and pool of its own: the memory case's deadline is long (at load
// 20 on 2 cores, "grow" took over 2 s to allocate 96 MiB).
func TestServerWithPoolLimitError(t *testing.T) {
	for _, tc := range []struct {
		arg     string
		pool    *Pool
		want    string
		outcome string
	}{
		{"grow", &Pool{Size: 1, Deadline: time.Minute, MaxMemory: 96 << 20, Stderr: os.Stderr},
			"argocd-ocm-plugin: application shop: component example.com/shop:1.0.0: generation exceeded the memory limit of 96 MiB (the render server stopped it): limit exceeded\n", "memory"},
		{"spin", &Pool{Size: 1, Deadline: 2 * time.Second, Grace: 100 * time.Millisecond, MaxMemory: 96 << 20, Stderr: os.Stderr},
			"argocd-ocm-plugin: application shop: component example.com/shop:1.0.0: generation exceeded the deadline of 2s (the render server stopped it): limit exceeded\n", "deadline"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			p := testPool(t, tc.pool)
			var log strings.Builder
			var logMu sync.Mutex
			metrics := NewMetrics()
			p.Metrics, metrics.Stats = metrics, p.Stats
			s := &Server{Pool: p, Fingerprint: "fp", Metrics: metrics, Log: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &log}, nil)),
				Describe: func(*Request) Description {
					return Description{Application: "shop", Project: "team-a", Component: "example.com/shop", Version: "1.0.0"}
				}}
			sock := start(t, s)
			res, err := Do(context.Background(), sock, &Request{Protocol: ProtocolVersion, Args: []string{tc.arg}, Fingerprint: "fp"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Exit != 1 || len(res.Stdout) != 0 || string(res.Stderr) != tc.want {
				t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant %q", tc.arg, res.Exit, res.Stdout, res.Stderr, tc.want)
			}
			// The killed worker leaves the busy gauge once it is reaped, which
			// may be just after its client has the result.
			var text strings.Builder
			wants := []string{`argocd_ocm_generations_total{outcome="` + tc.outcome + `"} 1`, `argocd_ocm_worker_kills_total{cause="` + tc.outcome + `"} 1`,
				"argocd_ocm_generation_seconds_count 1", `argocd_ocm_workers{state="busy"} 0`}
			waitUntil(func() bool {
				text.Reset()
				if err := metrics.WriteText(&text); err != nil {
					t.Fatal(err)
				}
				return !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(text.String(), w) })
			})
			for _, want := range wants {
				if !strings.Contains(text.String(), want) {
					t.Errorf("metrics lack %s:\n%s", want, text.String())
				}
			}
			logMu.Lock()
			defer logMu.Unlock()
			for _, want := range []string{`outcome=` + tc.outcome, `project=team-a`, `component=example.com/shop`} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("log lacks %s:\n%s", want, log.String())
				}
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// runTestSupervisor serves a pool on socket until killed; it prints its
// workers' pids once they are busy, for the test to check.
func runTestSupervisor(socket string) int {
	self, _ := os.Executable()
	p := &Pool{Size: 2, Warm: 2, Stderr: os.Stderr, Command: func() *exec.Cmd {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), envTestWorker+"=1", envTestSupervisor+"=")
		return cmd
	}}
	if err := p.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := Listen(socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		for {
			time.Sleep(20 * time.Millisecond)
			if s := p.Stats(); s.Busy > 0 {
				fmt.Println(p.Pids())
				return
			}
		}
	}()
	if err := (&Server{Pool: p, Fingerprint: "fp"}).Serve(context.Background(), l); err != nil {
		return 1
	}
	return 0
}

// kill -9 of the supervisor mid-render: the client gets ErrLost (an error,
// not a second run), and the workers die with it.
func TestSupervisorKilled(t *testing.T) {
	sock := filepath.Join(shortTempDir(t), "r.sock")
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envTestSupervisor+"="+sock)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if !waitUntil(func() bool { _, err := os.Stat(sock); return err == nil }) {
		t.Fatalf("the supervisor did not listen within %v", safetyNet)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := Do(context.Background(), sock, &Request{Protocol: ProtocolVersion, Args: []string{"spin"}, Fingerprint: "fp"})
		errc <- err
	}()
	var line [256]byte
	n, _ := stdout.Read(line[:])
	pids := strings.Fields(strings.Trim(string(line[:n]), "[]\n"))
	if len(pids) == 0 {
		t.Fatalf("no worker pids from the supervisor: %q", line[:n])
	}
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrLost) {
			t.Errorf("client: %v, want ErrLost", err)
		}
	case <-time.After(safetyNet):
		t.Fatalf("client still waiting %v after the supervisor died", safetyNet)
	}
	for _, s := range pids {
		pid, _ := strconv.Atoi(s)
		waitDead(t, pid)
	}
}

// The memory limit holds without polling: an allocation past the
// address-space limit fails inside the worker, which is reported as the
// memory limit (and its runtime traceback is left out of the log).
//
// Nothing here is timed: with the poll an hour away, the cause "memory"
// can only come from the address-space limit, and how far "grow" got says
// where it stopped. The deadline is a safety net (at load 30 on 2 cores a
// 5 s one ended "grow" first); "grow" stops by itself at 1 GiB, so that a
// worker without the limit ends with a result instead of eating the machine.
func TestPoolAddressSpaceLimit(t *testing.T) {
	if raceEnabled {
		t.Skip("a worker built with -race runs without an address-space limit")
	}
	const maxMemory = 96 << 20
	var stderr testutil.SyncBuffer
	p := testPool(t, &Pool{Size: 1, MaxMemory: maxMemory, Poll: time.Hour, Deadline: 2 * time.Minute, Stderr: &stderr})
	for _, args := range [][]string{{"huge"}, {"grow", "1024"}} {
		start := time.Now()
		res, out := do(p, args...)
		if res != nil || out.Cause != CauseMemory {
			t.Errorf("%s: %+v %+v, want the memory limit", args[0], res, out)
		}
		t.Logf("%s: %s after %v", args[0], out.Cause, time.Since(start).Round(time.Millisecond))
	}
	if res, _ := do(p, "echo", "after"); res == nil || res.Exit != 0 {
		t.Fatalf("after: %+v", res)
	}
	log := stderr.String()
	if !strings.Contains(log, "fatal error: out of memory") || strings.Contains(log, "goroutine ") || !strings.Contains(log, "traceback left out") {
		t.Errorf("worker stderr:\n%s", log)
	}
	// The documented bound (docs/render-server.md): the worker may map
	// MaxMemory + arenaSlack past what it had reserved when the limit was
	// set, and that reservation holds the unused rest of its first arena,
	// so its private memory stays below MaxMemory + two arenas. "grow" was
	// seen to stop at 104-184 MiB held, 106-186 MiB private (the test
	// binary links libc: its threads' stacks take address space too).
	held, private := -1, int64(-1)
	for _, line := range strings.Split(log, "\n") {
		if _, err := fmt.Sscanf(line, "grow: %d MiB held, %d MiB private", &held, &private); err != nil && strings.HasPrefix(line, "grow: ") {
			t.Fatalf("grow wrote %q", line)
		}
	}
	if held < 0 || private<<20 >= maxMemory+2*arenaSlack {
		t.Errorf("grow held %d MiB, %d MiB of private memory, when its allocation failed; want less than MaxMemory + two arenas (%d MiB) private",
			held, private, (maxMemory+2*arenaSlack)>>20)
	}
	t.Logf("grow held %d MiB, %d MiB private, when its allocation failed", held, private)
}

// A worker that reached its address-space limit says so only on its
// stderr, which the pool copies to Pool.Stderr line by line; the copy can
// lag behind the worker's exit (a Stderr that blocks, a loaded machine).
// The cause must still be the memory limit: the pool waited one second
// after the exit for the rest of the stderr, then reported "crashed". Here
// Pool.Stderr takes the first line of "grow" only once the worker has been
// reaped and stderrLag more has passed, so the Go runtime's report reaches
// the pool stderrLag after the exit at the earliest.
func TestPoolMemoryCauseWaitsForSlowStderr(t *testing.T) {
	if raceEnabled {
		t.Skip("a worker built with -race runs without an address-space limit")
	}
	const stderrLag = 2 * time.Second // the pool waited 1 s
	slow := &laggingStderr{lag: stderrLag}
	p := testPool(t, &Pool{Size: 1, MaxMemory: 96 << 20, Poll: time.Hour, Deadline: 2 * time.Minute, Stderr: slow})
	slow.pool = p
	res, out := do(p, "grow", "1024")
	if res != nil || out.Cause != CauseMemory {
		t.Errorf("grow, its stderr copied %v after its exit: %+v %+v, want the memory limit", stderrLag, res, out)
	}
	if !slow.held.Load() {
		t.Error("the stderr of grow was never held back")
	}
}

// laggingStderr holds the first line of "grow" until the worker that
// wrote it has been reaped (its /proc entry is gone) and lag has passed.
type laggingStderr struct {
	pool *Pool
	lag  time.Duration
	held atomic.Bool
}

func (l *laggingStderr) Write(b []byte) (int, error) {
	if !strings.HasPrefix(string(b), "grow: ") || l.held.Swap(true) {
		return len(b), nil
	}
	var pid int
	l.pool.mu.Lock()
	for w := range l.pool.workers {
		if w.busy {
			pid = w.pid
		}
	}
	l.pool.mu.Unlock()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	time.Sleep(l.lag)
	return len(b), nil
}

// A result of many MiB goes from the worker to the client without the
// supervisor holding it: what the supervisor allocates stays far below the
// result's size.
func TestServerStreamsResults(t *testing.T) {
	p := testPool(t, &Pool{Size: 1})
	sock := start(t, &Server{Pool: p, Fingerprint: "fp"})
	do := func(mib int) (exit int, n int64, allocated uint64) {
		s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
		metrics.Read(s)
		before := s[0].Value.Uint64()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := writeRequest(c, &Request{Protocol: ProtocolVersion, Args: []string{"big", strconv.Itoa(mib)}, Fingerprint: "fp"}); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReaderSize(c, 32<<10)
		if h, err := readHeader(br); err != nil || !h.Accepted {
			t.Fatalf("%+v %v", h, err)
		}
		h, err := readHeader(br)
		if err != nil {
			t.Fatal(err)
		}
		n, err = io.Copy(io.Discard, br)
		if err != nil {
			t.Fatal(err)
		}
		metrics.Read(s)
		return h.Exit, n, s[0].Value.Uint64() - before
	}
	exit, n, allocated := do(64)
	if exit != 0 || n != 64<<20 {
		t.Fatalf("exit %d, %d bytes", exit, n)
	}
	if allocated > 16<<20 {
		t.Errorf("the supervisor allocated %d MiB for a 64 MiB result", allocated>>20)
	}
	t.Logf("64 MiB result: %d KiB allocated in the supervisor (and this client)", allocated>>10)
}

// Requests bigger together than the server's budget are refused with one
// error line (not left to the client to render itself); the budget comes
// back when they are done.
func TestServerRequestBudget(t *testing.T) {
	p := testPool(t, &Pool{Size: 1})
	sock := start(t, &Server{Pool: p, Fingerprint: "fp", RequestBudget: 1 << 20})
	big := &Request{Protocol: ProtocolVersion, Args: []string{"echo"}, Fingerprint: "fp",
		Env: []string{"ARGOCD_ENV_X=" + strings.Repeat("x", 2<<20)}}
	res, err := Do(context.Background(), sock, big)
	if err != nil {
		t.Fatalf("%v (want a result, not a fallback)", err)
	}
	if res.Exit != 1 || len(res.Stdout) != 0 || strings.Count(string(res.Stderr), "\n") != 1 ||
		!strings.Contains(string(res.Stderr), "too many large requests") {
		t.Errorf("big request: %+v %q", res, res.Stderr)
	}
	for range 3 {
		res, err = Do(context.Background(), sock, &Request{Protocol: ProtocolVersion, Args: []string{"echo", "small"}, Fingerprint: "fp"})
		if err != nil || res.Exit != 0 {
			t.Fatalf("small request after: %v %+v", err, res)
		}
	}
	// Beyond MaxRequestSize the client does not send it at all.
	huge := &Request{Protocol: ProtocolVersion, Args: []string{"echo"}, Fingerprint: "fp", Env: []string{"ARGOCD_ENV_X=" + strings.Repeat("x", MaxRequestSize)}}
	if _, err := Do(context.Background(), sock, huge); !errors.Is(err, ErrUnavailable) {
		t.Errorf("request over MaxRequestSize: %v, want ErrUnavailable", err)
	}
}

// One warm worker; a second starts at once for a request that finds it busy
// (Eager); beyond Eager, another starts only behind generations that have
// run GrowAfter and do not wait for a CPU (here: asleep, a tarpit registry).
//
// The two generations in front wait for a lock the test holds until the
// third has its result, so that only a third worker can serve it: no bound
// on how long that took (it was 2 s, the generations in front slept 3 s;
// on a loaded machine a worker's start alone can take longer). The
// deadline is a safety net: without growth the third would be refused at
// it.
func TestPoolGrowth(t *testing.T) {
	p := testPool(t, &Pool{Size: 3, Warm: 1, Eager: 2, GrowAfter: 200 * time.Millisecond, Deadline: time.Minute})
	if n := len(p.Pids()); n != 1 {
		t.Fatalf("%d workers at start, want 1 warm", n)
	}
	gate := filepath.Join(t.TempDir(), "gate")
	held, err := os.Create(gate)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, out := do(p, "blocked", gate); res == nil || res.Exit != 0 {
				t.Errorf("blocked generation %d: %+v %+v", i, res, out)
			}
		}()
		waitRunning(t, p, i+1)
	}
	blocked := p.Pids()
	// Both blocked generations run (the second worker started at once); the
	// third request gets a third worker once they have run GrowAfter + a window.
	start := time.Now()
	res, out := do(p, "echo", "third")
	took := time.Since(start)
	if res == nil || res.Exit != 0 {
		t.Fatalf("third: %+v %+v", res, out)
	}
	if slices.Contains(blocked, out.Worker) {
		t.Errorf("third served by worker %d, one of the blocked ones %v", out.Worker, blocked)
	}
	if n := len(p.Pids()); n != 3 {
		t.Errorf("%d workers, want 3", n)
	}
	held.Close() // lets the blocked generations end
	wg.Wait()
	t.Logf("third generation served after %v", took.Round(time.Millisecond))
}

// A generation that waits for another's fetch of the same blob (it polls
// the cache's lock file, which the fetching generation holds) ends soon
// after that fetch, and requests queued behind the two (a burst of one
// component on a cold cache) would wait for the same blob: the pool does
// not grow for them, although both generations run past GrowAfter without
// waiting for a CPU. Without Pool.LockDir it cannot tell and grows, as for
// two tarpits (TestPoolGrowth).
//
// The fetch lasts until the test ends it (a lock the test holds). Without
// LockDir it ends once the third generation has its result, so that only a
// third worker can serve it (it lasted 2 s, and a loaded machine can take
// longer to start a worker). Behind a fetch, it ends after 2 s: a pool that
// grew for it would have grown a window after GrowAfter (~250 ms); a slower
// machine can only hide such a bug, never fail a pool without it.
func TestPoolGrowthWaitsForTheFetchItIsBehind(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lockDir bool
		want    int
	}{
		{"behind a fetch", true, 2},
		{"lock directory not given", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			locks := filepath.Join(dir, "locks")
			if err := os.MkdirAll(filepath.Join(locks, "sha256"), 0o755); err != nil {
				t.Fatal(err)
			}
			pool := &Pool{Size: 3, Warm: 1, Eager: 2, GrowAfter: 200 * time.Millisecond, Deadline: time.Minute}
			if tc.lockDir {
				pool.LockDir = locks
			}
			p := testPool(t, pool)
			lock := filepath.Join(locks, "sha256", "5735e7fc")
			gate := filepath.Join(dir, "gate")
			held, err := os.Create(gate)
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			endFetch := sync.OnceFunc(func() { held.Close() })
			defer endFetch()
			var wg sync.WaitGroup
			for i, cmd := range []string{"holdlock", "waitlock"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if res, out := do(p, cmd, lock, gate); res == nil || res.Exit != 0 {
						t.Errorf("%s: %+v %+v", cmd, res, out)
					}
				}()
				// The holder has the lock before the waiter starts (a 150 ms
				// sleep did not always on a loaded machine: then the waiter
				// took it and was done at once).
				waitRunning(t, p, i+1)
				if cmd == "holdlock" {
					waitLocked(t, lock)
				}
			}
			fetching := p.Pids()
			if tc.lockDir {
				time.AfterFunc(2*time.Second, endFetch)
			}
			start := time.Now()
			res, out := do(p, "echo", "third")
			if res == nil || res.Exit != 0 {
				t.Fatalf("third: %+v %+v", res, out)
			}
			took := time.Since(start)
			if grown := !slices.Contains(fetching, out.Worker); grown != (tc.want == 3) {
				t.Errorf("third served by worker %d; the fetching ones: %v", out.Worker, fetching)
			}
			endFetch()
			wg.Wait()
			if n := len(p.Pids()); n != tc.want {
				t.Errorf("%d workers, want %d", n, tc.want)
			}
			t.Logf("third generation served after %v; %d workers", took.Round(time.Millisecond), len(p.Pids()))
		})
	}
}

// The growth rule, case by case (TestPoolGrowth and the test above run it
// on real workers).
func TestShouldGrow(t *testing.T) {
	const after = 250 * time.Millisecond
	const ms = time.Millisecond
	slow := busyGen{age: 400 * ms, window: 50 * ms, waited: 5 * ms} // asleep: a tarpit registry
	loop := busyGen{age: 2 * time.Second, window: 50 * ms, waited: 20 * ms}
	behind := slow
	behind.behind = true
	for _, tc := range []struct {
		name     string
		starting int
		gens     []busyGen
		want     bool
	}{
		{"two tarpits", 0, []busyGen{slow, slow}, true},
		{"template loops with cores to spare", 0, []busyGen{loop, loop}, true},
		{"one generation may end soon", 0, []busyGen{slow, {age: 100 * ms, window: 50 * ms}}, false},
		{"not watched for a window yet", 0, []busyGen{slow, {age: 300 * ms}}, false},
		{"one waits for a CPU half the window", 0, []busyGen{slow, {age: 400 * ms, window: 50 * ms, waited: 25 * ms}}, false},
		{"cold burst: one fetches, the other waits for its fetch", 0, []busyGen{slow, behind}, false},
		{"a worker is starting", 1, []busyGen{slow, slow}, false},
	} {
		if got := shouldGrow(tc.starting, tc.gens, after); got != tc.want {
			t.Errorf("%s: shouldGrow = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// kill -9 of a worker while its result streams to the client: the client
// gets fewer bytes than announced (Do: ErrLost, one error line), never a
// result that looks complete; the next generation is served.
func TestWorkerKilledWhileDelivering(t *testing.T) {
	p := testPool(t, &Pool{Size: 1, Deadline: time.Minute})
	sock := start(t, &Server{Pool: p, Fingerprint: "fp"})
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := writeRequest(c, &Request{Protocol: ProtocolVersion, Args: []string{"big", "256"}, Fingerprint: "fp"}); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(c, 32<<10)
	if h, err := readHeader(br); err != nil || !h.Accepted {
		t.Fatalf("%+v %v", h, err)
	}
	h, err := readHeader(br) // the worker is done rendering and sends
	if err != nil || h.Stdout != 256<<20 {
		t.Fatalf("%+v %v", h, err)
	}
	for _, pid := range p.Pids() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	_, _, err = readBody(br, h)
	if err == nil {
		t.Fatal("the whole result arrived although its worker was killed while sending it")
	}
	t.Logf("client: %v", err)
	if res, err := Do(context.Background(), sock, &Request{Protocol: ProtocolVersion, Args: []string{"echo", "after"}, Fingerprint: "fp"}); err != nil || res.Exit != 0 {
		t.Fatalf("after: %v %+v", err, res)
	}
}

// The pool tells each generation's worker how many Ps to render with: all
// the cores when it renders alone, a share when others run or wait, and
// nothing (the worker's own GOMAXPROCS) when Procs is negative; and GCAlone
// as GOGC to a generation alone only. The workers start with GOMAXPROCS=3
// and GOGC=90, which no share here equals.
func TestPoolSharesCores(t *testing.T) {
	gcOf := map[*Pool]int{}
	procs := func(t *testing.T, p *Pool) (int, Outcome) {
		t.Helper()
		res, out := do(p, "procs")
		if res == nil || res.Exit != 0 {
			t.Fatalf("procs: %+v %+v", res, out)
		}
		var n, gc int
		if _, err := fmt.Sscanf(string(res.Stdout), "%d %d", &n, &gc); err != nil {
			t.Fatalf("procs printed %q", res.Stdout)
		}
		gcOf[p] = gc
		return n, out
	}
	t.Run("share", func(t *testing.T) {
		p := testPool(t, &Pool{Size: 4, Warm: 1, Eager: 4, Procs: 4, GCAlone: 250, Deadline: 20 * time.Second}, "GOMAXPROCS=3", "GOGC=90")
		if n, out := procs(t, p); n != 4 || out.Procs != 4 || gcOf[p] != 250 {
			t.Errorf("alone: worker rendered with %d Ps (outcome %d) and GOGC %d, want all 4 and 250", n, out.Procs, gcOf[p])
		}
		var wg sync.WaitGroup
		defer wg.Wait()
		for i := 1; i <= 2; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); do(p, "nap", "3000") }()
			waitRunning(t, p, i)
			want := 4 / (i + 1) // i napping + this one
			if n, out := procs(t, p); n != want || out.Procs != want || gcOf[p] != 90 {
				t.Errorf("beside %d running: worker rendered with %d Ps (outcome %d) and GOGC %d, want %d and its own 90", i, n, out.Procs, gcOf[p], want)
			}
		}
	})
	t.Run("off", func(t *testing.T) {
		p := testPool(t, &Pool{Size: 1, Procs: -1, Deadline: 10 * time.Second}, "GOMAXPROCS=3")
		if n, out := procs(t, p); n != 3 || out.Procs != 0 {
			t.Errorf("Procs -1: worker rendered with %d Ps (outcome %d), want its own 3", n, out.Procs)
		}
	})
}

// safetyNet bounds every wait for a condition of these tests: far beyond
// what a loaded machine takes, and nothing a passing test waits for.
const safetyNet = time.Minute

// waitUntil polls cond until it holds, and reports whether it did within
// safetyNet. The polls start 1 ms apart and back off to 20 ms, so that a
// wait ends within a few ms of the condition, without a fixed sleep to
// guess too short on a loaded machine or too long on an idle one.
func waitUntil(cond func() bool) bool {
	deadline := time.Now().Add(safetyNet)
	for poll := time.Millisecond; !cond(); poll = min(2*poll, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(poll)
	}
	return true
}

// waitLocked waits until another process holds an flock on path.
func waitLocked(t *testing.T, path string) {
	t.Helper()
	locked := func() bool {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close() // releases a lock taken just now
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == syscall.EWOULDBLOCK
	}
	if !waitUntil(locked) {
		t.Fatalf("%s not locked after %v", path, safetyNet)
	}
}

// waitRunning waits until n workers render.
func waitRunning(t *testing.T, p *Pool, n int) {
	t.Helper()
	if !waitUntil(func() bool { return p.Stats().Busy >= n }) {
		t.Fatalf("%d workers busy after %v, want %d", p.Stats().Busy, safetyNet, n)
	}
}

func TestProcsFor(t *testing.T) {
	for _, c := range []struct{ cores, running, waiting, want int }{
		{2, 1, 0, 2},   // alone: every core
		{2, 2, 0, 1},   // two at once on two cores
		{2, 1, 5, 1},   // alone in the workers, a queue behind: the burst's share
		{8, 2, 0, 4},   // a share of a larger machine
		{8, 3, 0, 2},   // rounded down: never more Ps than cores in all
		{1, 1, 0, 1},   // one core
		{2, 0, 0, 2},   // nothing counted (defensive): all
		{2, 50, 50, 1}, // never 0
	} {
		if got := ProcsFor(c.cores, c.running, c.waiting); got != c.want {
			t.Errorf("ProcsFor(%d cores, %d running, %d waiting) = %d, want %d", c.cores, c.running, c.waiting, got, c.want)
		}
	}
}

// A worker returns the heap of a large generation once it is idle, and the
// pool's figure of its memory follows: the peak it no longer holds does not
// stay counted against TotalMemory.
func TestPoolIdleWorkerReturnsMemory(t *testing.T) {
	p := testPool(t, &Pool{Size: 1, Deadline: 10 * time.Second, MaxMemory: 512 << 20})
	if res, out := do(p, "usefree", "160"); res == nil || res.Exit != 0 {
		t.Fatalf("usefree: %+v %+v", res, out)
	}
	if got := p.Stats().PrivateBytes; got < 100<<20 {
		t.Logf("private memory right after the generation: %d MiB (already returned)", got>>20)
	}
	if !waitUntil(func() bool { return p.Stats().PrivateBytes <= 64<<20 }) {
		t.Fatalf("idle worker still counted with %d MiB %v after a generation whose 160 MiB were garbage", p.Stats().PrivateBytes>>20, safetyNet)
	}
}

// Issue 35, finding 1: two heavy generations beside two normal ones, many
// times, with the workers' shared limit: every normal generation succeeds
// and every heavy one is stopped by a limit. The watchdog counted a killed
// worker's last figure until it was reaped, so the poll after the second
// heavy generation's kill found the total still passed and killed the
// largest busy worker left, a normal one (3 of 20 normal generations failed
// in 10 rounds of the run). Also with the supervisor's own cores
// busy (two goroutines spinning in it), which delays its polls and the
// workers' exits.
func TestPoolTotalMemorySparesNormalGenerations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 80 generations, 40 of them growing to the pool's shared limit")
	}
	for _, busy := range []bool{false, true} {
		name := "idle supervisor"
		if busy {
			name = "busy supervisor"
		}
		t.Run(name, func(t *testing.T) {
			p := testPool(t, &Pool{Size: 4, Warm: 4, Eager: 4, Deadline: time.Minute, MaxMemory: 1 << 30, TotalMemory: 256 << 20})
			if busy {
				stop := make(chan struct{})
				var wg sync.WaitGroup
				for range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							select {
							case <-stop:
								return
							default:
								spins.Add(1)
							}
						}
					}()
				}
				defer func() { close(stop); wg.Wait() }()
			}
			const rounds = 10
			var failed, heavyOK int
			for round := range rounds {
				type result struct {
					heavy bool
					res   *Result
					out   Outcome
				}
				results := make(chan result, 4)
				for i := range 4 {
					heavy := i < 2
					go func() {
						// The normal ones last until the heavy ones are stopped.
						args := []string{"work", "8", "1500"}
						if heavy {
							args = []string{"hog"}
						}
						res, out := do(p, args...)
						results <- result{heavy, res, out}
					}()
				}
				for range 4 {
					r := <-results
					switch {
					case r.heavy && r.res == nil && (r.out.Cause == CauseTotalMemory || r.out.Cause == CauseMemory):
						heavyOK++
					case r.heavy:
						t.Errorf("round %d: heavy generation: %+v %+v, want it stopped by a memory limit", round, r.res, r.out)
					case r.res == nil || r.res.Exit != 0:
						failed++
						t.Errorf("round %d: normal generation failed: %+v %+v", round, r.res, r.out)
					}
				}
			}
			t.Logf("%d rounds: %d of %d normal generations failed, %d heavy ones stopped", rounds, failed, 2*rounds, heavyOK)
		})
	}
}

// An idle pool's watchdog wakes for its sweep only (once a second, not
// every Poll); a generation wakes it at once, and it polls every Poll
// while the generation runs: a worker past its memory is still stopped.
func TestPoolWatchdogSleepsWhenIdle(t *testing.T) {
	p := testPool(t, &Pool{Size: 1, Warm: 1, Deadline: time.Minute, MaxMemory: 96 << 20, Poll: 10 * time.Millisecond})
	if res, out := do(p, "echo", "warm"); res == nil || res.Exit != 0 {
		t.Fatalf("warm-up: %+v %+v", res, out)
	}
	time.Sleep(50 * time.Millisecond) // the round after the generation
	before := p.polls.Load()
	time.Sleep(500 * time.Millisecond)
	if n := p.polls.Load() - before; n > 2 {
		t.Errorf("idle pool: %d watchdog rounds in 500 ms, want at most 2 (a sweep a second)", n)
	}
	before = p.polls.Load()
	res, out := do(p, "grow")
	if res != nil || out.Cause != CauseMemory {
		t.Fatalf("grow: result %+v, outcome %+v; want cause %s", res, out, CauseMemory)
	}
	if n := p.polls.Load() - before; n < 1 {
		t.Errorf("%d watchdog rounds while a generation grew past its memory", n)
	}
}
