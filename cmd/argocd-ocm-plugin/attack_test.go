//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// hostileCTF writes examples.HostileComponents as the CTF dir/hostile.
func hostileCTF(t *testing.T, dir string) {
	t.Helper()
	comps, err := examples.HostileComponents()
	if err != nil {
		t.Fatal(err)
	}
	if err := ocmbuild.WriteCTF(filepath.Join(dir, "hostile"), comps...); err != nil {
		t.Fatal(err)
	}
}

// tarpit accepts connections and never answers.
func tarpit(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	return l.Addr().String()
}

// startWorkerServer runs serve with its worker pool (the test binary
// re-executed as serve-worker) on a fresh socket, with the sidecar settings
// in settings (the workers read them from their environment).
func startWorkerServer(t *testing.T, settings map[string]string) (socket string, log *testutil.SyncBuffer) {
	t.Helper()
	for k, v := range settings {
		t.Setenv(k, v)
	}
	dir, err := os.MkdirTemp("", "atk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket = filepath.Join(dir, "r.sock")
	log = &testutil.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, serveOptions{socket: socket}, log, os.Getenv) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	for range 500 {
		if _, err := os.Stat(socket); err == nil {
			return socket, log
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no socket; log: %s", log.String())
	return "", nil
}

// children lists this process's child processes (the render workers).
func children() []int {
	var pids []int
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// spinningChild waits until one of the test's child processes has used
// ticks clock ticks of CPU (10 ms each) more than when it was first seen,
// and returns it.
func spinningChild(t *testing.T, ticks int64) int {
	t.Helper()
	first := map[int]int64{}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, pid := range children() {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				continue
			}
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
			utime, _ := strconv.ParseInt(f[11], 10, 64)
			stime, _ := strconv.ParseInt(f[12], 10, 64)
			if seen, ok := first[pid]; !ok {
				first[pid] = utime + stime
			} else if utime+stime-seen >= ticks {
				return pid
			}
		}
	}
	t.Fatalf("no child process used %d ticks of CPU within a minute", ticks)
	return 0
}

func generateVia(socket, dir string, env map[string]string) (*server.Result, error) {
	environ := os.Environ()
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return server.Do(ctx, socket, server.NewRequest([]string{"generate"}, dir, environ))
}

// The attack under load of issue 15: hostile generations (tpl recursion,
// printf doubling, a CPU loop, a FIFO as a value file, /proc/self/fd/1 as
// the repository, a tarpit registry) at the same time as normal ones. Every
// normal generation succeeds within its deadline, every hostile one is one
// error line with nothing on stdout, no worker grows past its hard memory
// limit, and afterwards the server renders as before.
func TestAttackUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts render workers")
	}
	const deadline = 5 * time.Second
	const maxMemory, totalMemory = 256 << 20, 640 << 20
	pit := tarpit(t)
	socket, log := startWorkerServer(t, map[string]string{
		envWorkers: "10", envWarmWorkers: "4", envTimeout: deadline.String(),
		envMaxMemory: "256Mi", envTotalMemory: "640Mi",
		policy.EnvPlainHTTP: pit, "ARGOCD_OCM_CACHE_DIR": t.TempDir(), "DOCKER_CONFIG": t.TempDir(),
	})
	dir := appDir(t)
	hostileCTF(t, dir)
	if err := syscall.Mkfifo(filepath.Join(dir, "values", "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	normal := func(i int) map[string]string {
		return map[string]string{"ARGOCD_APP_NAME": fmt.Sprintf("normal%02d", i), "ARGOCD_APP_NAMESPACE": "ns", "ARGOCD_ENV_REPOSITORY": "ctf",
			"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"}
	}
	hostile := map[string]map[string]string{}
	for name := range hostileNames() {
		hostile[name] = map[string]string{"ARGOCD_APP_NAME": "evil-" + name, "ARGOCD_ENV_REPOSITORY": "hostile",
			"ARGOCD_ENV_COMPONENT": "example.com/hostile/" + name, "ARGOCD_ENV_VERSION": "1.0.0"}
	}
	hostile["fifo"] = map[string]string{"ARGOCD_APP_NAME": "evil-fifo", "ARGOCD_ENV_REPOSITORY": "ctf",
		"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0", "ARGOCD_ENV_VALUE_FILES": "values/fifo.yaml"}
	hostile["proc"] = map[string]string{"ARGOCD_APP_NAME": "evil-proc", "ARGOCD_ENV_REPOSITORY": "/proc/self/fd/1",
		"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"}
	hostile["tarpit"] = map[string]string{"ARGOCD_APP_NAME": "evil-tarpit", "ARGOCD_ENV_REPOSITORY": "http://" + pit + "/ocm",
		"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"}

	// The workers' private memory, sampled every 10 ms: each worker's
	// first figure and peak, and their sum's peak.
	var peak int64
	type workerMemory struct{ first, peak int64 }
	workers := map[int]*workerMemory{}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var sum int64
			for _, pid := range children() {
				if n, err := server.PrivateMemory(pid); err == nil && n > 0 {
					sum += n
					if w := workers[pid]; w == nil {
						workers[pid] = &workerMemory{first: n, peak: n}
					} else {
						w.peak = max(w.peak, n)
					}
				}
			}
			peak = max(peak, sum)
			select {
			case <-stopSampling:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()

	var wg sync.WaitGroup
	var mu sync.Mutex
	refusals := map[string]time.Duration{}
	for name, env := range hostile {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			res, err := generateVia(socket, dir, env)
			took := time.Since(start)
			mu.Lock()
			refusals[name] = took
			mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("%s: %v", name, err)
			case res.Exit == 0 || len(res.Stdout) != 0:
				t.Errorf("%s: exit %d with %d bytes of stdout", name, res.Exit, len(res.Stdout))
			case strings.Count(string(res.Stderr), "\n") != 1 || !strings.Contains(string(res.Stderr), "application evil-"+name):
				t.Errorf("%s: stderr is not one line naming the application: %q", name, res.Stderr)
			case took > deadline+server.DefaultGrace+3*time.Second:
				// The server's own bound is checked on its log below; this
				// one only says the client was answered, on a loaded machine.
				t.Errorf("%s: refused after %v", name, took)
			default:
				t.Logf("%-7s refused after %5v: %s", name, took.Round(time.Millisecond), strings.TrimSpace(string(res.Stderr)))
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // the hostile ones first
	var slowest time.Duration
	for round := range 3 {
		var rwg sync.WaitGroup
		for i := range 4 {
			rwg.Add(1)
			go func() {
				defer rwg.Done()
				env := normal(round*4 + i)
				start := time.Now()
				res, err := generateVia(socket, dir, env)
				took := time.Since(start)
				mu.Lock()
				slowest = max(slowest, took)
				mu.Unlock()
				switch {
				case err != nil:
					t.Errorf("normal %d: %v", round*4+i, err)
				case res.Exit != 0:
					t.Errorf("normal %d: exit %d: %s", round*4+i, res.Exit, res.Stderr)
				case !bytes.Contains(res.Stdout, []byte(env["ARGOCD_APP_NAME"]+"-podinfo")):
					t.Errorf("normal %d: output lacks its name", round*4+i)
				}
				// Within its deadline: the server counts it from the
				// request's arrival, queue included, and ends it there, so a
				// success is one. The client's clock adds the socket's
				// transfers, which a loaded machine stretches: reported, not
				// asserted.
			}()
		}
		rwg.Wait()
		time.Sleep(500 * time.Millisecond)
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	// What the product promises of memory, whatever the machine's load:
	// every normal generation succeeded (above), and no worker grew past
	// its hard limit, the address-space limit the pool sets once it has
	// started: what it had reserved then (which may hold a heap arena it
	// had not used yet) plus MaxMemory and one more arena (server's
	// arenaSlack, 64 MiB). The kernel enforces that; the polled limits
	// (MaxMemory per worker, TotalMemory for all) act as soon as the pool's
	// poll runs, which at load 50 on 2 cores is later than at rest, and a
	// worker killed for them gives its memory back only as it is torn down.
	// So the sum of the workers' memory at any instant is no promise: it
	// is reported, not asserted (it once peaked at 647 MiB against the
	// TotalMemory of 640 MiB at load 50; 508-576 MiB at rest: four
	// hostile generations each racing to 256 MiB of live memory, which no
	// garbage collector setting can free).
	const arena = 64 << 20
	var heaviest int64
	for pid, w := range workers {
		heaviest = max(heaviest, w.peak)
		if grew := w.peak - w.first; grew > maxMemory+2*arena && !raceOn {
			t.Errorf("worker %d grew by %d MiB (%d -> %d MiB), past its hard limit of MaxMemory + two arenas (%d MiB)",
				pid, grew>>20, w.first>>20, w.peak>>20, (maxMemory+2*arena)>>20)
		}
	}
	t.Logf("slowest normal generation %v; %d workers, the heaviest peaked at %d MiB (MaxMemory %d MiB); all together peaked at %d MiB (TotalMemory %d MiB); load %s",
		slowest.Round(time.Millisecond), len(workers), heaviest>>20, maxMemory>>20, peak>>20, totalMemory>>20, loadAvg())
	// Afterwards: the server renders correctly (the same bytes as a process).
	env := normal(99)
	res, err := generateVia(socket, dir, env)
	if err != nil || res.Exit != 0 {
		t.Fatalf("after the attack: %v %+v", err, res)
	}
	var stdout, stderr bytes.Buffer
	t.Chdir(dir)
	if code := run([]string{"generate"}, &stdout, &stderr, envWith(env)); code != 0 || !bytes.Equal(stdout.Bytes(), res.Stdout) {
		t.Errorf("after the attack the server's output differs from a process's (exit %d: %s)", code, stderr.String())
	}
	// Counted by the server from the request's arrival, a hostile
	// generation ends by its deadline and grace (when its worker is killed).
	for _, m := range regexp.MustCompile(`application=(evil-\S+) .* ms=(\d+) `).FindAllStringSubmatch(log.String(), -1) {
		ms, _ := strconv.Atoi(m[2])
		if took := time.Duration(ms) * time.Millisecond; took > deadline+server.DefaultGrace+750*time.Millisecond {
			t.Errorf("%s: the server took %v from its arrival", m[1], took)
		}
	}
	if n := strings.Count(log.String(), "application=evil-"); n < len(hostile) {
		t.Errorf("server log names %d hostile generations, want %d", n, len(hostile))
	}
	for _, want := range []string{"outcome=memory", "outcome=deadline", "project=", "outcome=ok"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("server log lacks %s", want)
		}
	}
}

// Issue 35, finding 1, as the issue ran it: 4 workers sharing a limit, two
// heavy generations (each holds 320 MiB for a few seconds, within its own
// limit; together they pass the shared 600 MiB) beside normal ones, which
// run back to back until both heavy ones end, round after round: every
// normal generation succeeds; one heavy one is stopped (one error line) and
// the other may end on its own once it is alone. The watchdog killed normal ones (6–16 MiB) with
// "exceeded the render workers' shared memory limit of 768 MiB, using the
// most of them", 3 of 20 in 10 rounds, when it kept counting the heavy
// workers it had killed.
func TestHeavyGenerationsSpareTheirNeighbours(t *testing.T) {
	if testing.Short() {
		t.Skip("starts render workers")
	}
	socket, log := startWorkerServer(t, map[string]string{
		envWorkers: "4", envWarmWorkers: "4", envTimeout: "20s", envMaxMemory: "512Mi", envTotalMemory: "600Mi",
		"ARGOCD_OCM_CACHE_DIR": t.TempDir(), "DOCKER_CONFIG": t.TempDir(),
	})
	dir := appDir(t)
	hostileCTF(t, dir)
	const rounds = 5
	var normal, failed atomic.Int32
	for round := range rounds {
		heavyDone := make(chan struct{})
		var heavy, normals sync.WaitGroup
		for i := range 2 {
			heavy.Add(1)
			go func() {
				defer heavy.Done()
				env := map[string]string{"ARGOCD_APP_NAME": fmt.Sprintf("heavy%d", i), "ARGOCD_ENV_REPOSITORY": "hostile",
					"ARGOCD_ENV_COMPONENT": "example.com/hostile/hold", "ARGOCD_ENV_VERSION": "1.0.0"}
				res, err := generateVia(socket, dir, env)
				switch {
				case err != nil:
					t.Errorf("round %d heavy %d: %v", round, i, err)
				case res.Exit == 0:
					// The other one stopped, it kept within the shared limit.
				case len(res.Stdout) != 0 || strings.Count(string(res.Stderr), "\n") != 1:
					t.Errorf("round %d heavy %d: exit %d, %d bytes of stdout, stderr %q", round, i, res.Exit, len(res.Stdout), res.Stderr)
				}
			}()
			normals.Add(1)
			go func() {
				defer normals.Done()
				for n := 0; ; n++ {
					select {
					case <-heavyDone:
						return
					default:
					}
					res, err := generateVia(socket, dir, map[string]string{"ARGOCD_APP_NAME": fmt.Sprintf("normal%d-%d-%d", round, i, n), "ARGOCD_APP_NAMESPACE": "ns",
						"ARGOCD_ENV_REPOSITORY": "ctf", "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"})
					normal.Add(1)
					if err != nil || res.Exit != 0 {
						failed.Add(1)
						if err == nil {
							err = fmt.Errorf("%s", res.Stderr)
						}
						t.Errorf("round %d: normal generation failed: %v", round, err)
					}
				}
			}()
		}
		heavy.Wait()
		close(heavyDone)
		normals.Wait()
	}
	t.Logf("%d rounds: %d of %d normal generations failed", rounds, failed.Load(), normal.Load())
	// Only the heavy ones met the shared limit: at most two a round. And
	// they met it at least once (they start together each round), or the
	// run never reached what it tests.
	n := strings.Count(log.String(), "outcome=total-memory")
	t.Logf("%d heavy generations stopped at the shared limit", n)
	if n == 0 || n > 2*rounds {
		t.Errorf("%d generations stopped at the shared limit in %d rounds, want 1 to %d (heavy ones only; none: the run never reached the limit)", n, rounds, 2*rounds)
	}
}

// hostileNames are the hostile charts' names (examples.HostileComponents).
func hostileNames() map[string]bool {
	names := map[string]bool{}
	for name := range examples.HostileCharts {
		names[name] = true
	}
	for name := range examples.HostileTemplates {
		names[name] = true
	}
	return names
}

func envWith(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		if strings.HasPrefix(k, "ARGOCD_APP_") || strings.HasPrefix(k, "ARGOCD_ENV_") {
			return ""
		}
		return os.Getenv(k)
	}
}

// kill -9 of a worker mid-render: its client gets one error line, the
// other generations are unaffected, and a fresh worker serves the next.
func TestWorkerKilledMidRender(t *testing.T) {
	if testing.Short() {
		t.Skip("starts render workers")
	}
	socket, _ := startWorkerServer(t, map[string]string{envWorkers: "2", envTimeout: "20s",
		"ARGOCD_OCM_CACHE_DIR": t.TempDir(), "DOCKER_CONFIG": t.TempDir()})
	dir := appDir(t)
	hostileCTF(t, dir)
	type reply struct {
		res *server.Result
		err error
	}
	done := make(chan reply, 1)
	go func() {
		res, err := generateVia(socket, dir, map[string]string{"ARGOCD_APP_NAME": "victim", "ARGOCD_ENV_REPOSITORY": "hostile",
			"ARGOCD_ENV_COMPONENT": "example.com/hostile/slow", "ARGOCD_ENV_VERSION": "1.0.0"})
		done <- reply{res, err}
	}()
	// The busy worker is the one whose CPU time grows (the slow chart
	// spins until its deadline), found by watching, not after a fixed wait:
	// on a loaded machine the render may not have begun a second later.
	victim := spinningChild(t, 20)
	syscall.Kill(victim, syscall.SIGKILL)
	r := <-done
	if r.err != nil || r.res.Exit == 0 || len(r.res.Stdout) != 0 || !strings.Contains(string(r.res.Stderr), "application victim: component example.com/hostile/slow:1.0.0: render failed: the render worker died during the generation (signal killed)") {
		t.Fatalf("victim: %v %+v (stderr %q)", r.err, r.res, r.res.Stderr)
	}
	res, err := generateVia(socket, dir, map[string]string{"ARGOCD_APP_NAME": "next", "ARGOCD_APP_NAMESPACE": "ns", "ARGOCD_ENV_REPOSITORY": "ctf",
		"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"})
	if err != nil || res.Exit != 0 {
		t.Fatalf("after the kill: %v %+v", err, res)
	}
}

// A generate process of its own is bounded too: the watchdog ends it at its
// memory limit or deadline with one error line and nothing on stdout.
func TestProcessModeWatchdog(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	hostileCTF(t, dir)
	for _, tc := range []struct {
		chart, want, timeout string
	}{
		{"tpl", "generation exceeded the", "3s"}, // memory or deadline: GOMEMLIMIT slows its growth
		// Only the memory limit may stop it: it took 0.5-1.6 s to reach
		// 256 MiB on 2 cores, and could take over the 3 s on a loaded machine.
		{"double", "generation exceeded the memory limit of 256 MiB: limit exceeded", "60s"},
		{"slow", "generation exceeded the deadline of 3s: limit exceeded", "3s"},
	} {
		t.Run(tc.chart, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelperProcess$")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), cliHelperEnv+"=generate", "ARGOCD_OCM_MAX_MEMORY=256Mi", "ARGOCD_OCM_TIMEOUT="+tc.timeout,
				"ARGOCD_OCM_CACHE_DIR="+t.TempDir(), "ARGOCD_APP_NAME=evil", "ARGOCD_ENV_REPOSITORY=hostile",
				"ARGOCD_ENV_COMPONENT=example.com/hostile/"+tc.chart, "ARGOCD_ENV_VERSION=1.0.0")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			var peak int64
			if cmd.ProcessState != nil {
				peak = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
			}
			if err == nil || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "application evil: component example.com/hostile/"+tc.chart+":1.0.0: ") {
				t.Fatalf("err %v, stdout %d bytes, stderr %q", err, stdout.Len(), stderr.String())
			}
			// The render's own error may come first (Helm's own limits): it
			// must still be one line; the watchdog's is checked when it fired.
			if strings.Contains(stderr.String(), "generation exceeded") && !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.want)
			}
			t.Logf("%s: refused after %v, peak RSS %d MiB: %s", tc.chart, took.Round(time.Millisecond), peak>>20, strings.TrimSpace(stderr.String()))
		})
	}
}

// Supervised by argocd-ocm-client (server.EnvGuarded), a generate process
// holds a worker's hard memory limit, not only the 10 ms poll: it hands the
// client its limit line on fd 3, limits its address space, and an
// allocation past it ends the process with the runtime's report (which the
// client replaces by the line; see cmd/argocd-ocm-client), nothing on
// stdout. The doubling template peaked at 861 MiB against 512 MiB with the
// poll alone (and at 1,028 MiB against 1 GiB in the issue).
func TestProcessModeHardLimitWhenSupervised(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	if raceOn {
		t.Skip("the race detector's shadow memory counts against the address-space limit")
	}
	dir := t.TempDir()
	hostileCTF(t, dir)
	lineR, lineW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelperProcess$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), cliHelperEnv+"=generate", "ARGOCD_OCM_MAX_MEMORY=256Mi", "ARGOCD_OCM_TIMEOUT=60s",
		server.EnvGuarded+"=3", "ARGOCD_OCM_CACHE_DIR="+t.TempDir(), "ARGOCD_APP_NAME=evil", "ARGOCD_ENV_REPOSITORY=hostile",
		"ARGOCD_ENV_COMPONENT=example.com/hostile/double", "ARGOCD_ENV_VERSION=1.0.0")
	cmd.ExtraFiles = []*os.File{lineW}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Start()
	lineW.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, _ := io.ReadAll(lineR)
	err = cmd.Wait()
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	if want := "argocd-ocm-plugin: application evil: component example.com/hostile/double:1.0.0: generation exceeded the memory limit of 256 MiB: limit exceeded\n"; string(line) != want {
		t.Errorf("limit line %q, want %q", line, want)
	}
	if err == nil || stdout.Len() != 0 || !server.OutOfMemory([]byte(runtimeReport(stderr.String()))) {
		t.Errorf("err %v, %d bytes of stdout, stderr %.300q: want the runtime's out-of-memory report", err, stdout.Len(), stderr.String())
	}
	// The test binary is larger than the plugin; its own pages are shared.
	if peak > (256+64+64)<<20 {
		t.Errorf("peak RSS %d MiB, want at most the limit of 256 MiB + two 64 MiB heap arenas", peak>>20)
	}
	t.Logf("ended at the address-space limit, peak RSS %d MiB", peak>>20)
}

// runtimeReport is the first line of s that is the Go runtime's
// out-of-memory report.
func runtimeReport(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if server.OutOfMemory([]byte(l)) {
			return l
		}
	}
	return ""
}

// A process-mode generation of a runaway template (Helm's loops do not see
// the canceled context) ends within a second of SIGTERM, with one error
// line and nothing on stdout, instead of rendering on until SIGKILL.
func TestProcessModeEndsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir := t.TempDir()
	hostileCTF(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelperProcess$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), cliHelperEnv+"=generate", "ARGOCD_OCM_TIMEOUT=60s", "ARGOCD_OCM_VERBOSE=", "ARGOCD_OCM_LOG_LEVEL=debug",
		"ARGOCD_OCM_CACHE_DIR="+t.TempDir(), "ARGOCD_APP_NAME=evil", "ARGOCD_ENV_REPOSITORY=hostile",
		"ARGOCD_ENV_COMPONENT=example.com/hostile/slow", "ARGOCD_ENV_VERSION=1.0.0")
	var stdout bytes.Buffer
	stderr := &lineWatcher{want: "component version resolved", seen: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Signal once the render runs (its debug line), not after a sleep.
	select {
	case <-stderr.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("the render did not start:\n%s", stderr.String())
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		took := time.Since(sent)
		t.Logf("ended %s after SIGTERM: %s", took.Round(time.Millisecond), lastLine(stderr.String()))
		if err == nil || stdout.Len() != 0 {
			t.Errorf("exit %v, stdout %d bytes", err, stdout.Len())
		}
		if took > 2*time.Second {
			t.Errorf("took %s after SIGTERM, want about stopGrace (%s)", took, stopGrace)
		}
		if !strings.Contains(lastLine(stderr.String()), "application evil: component example.com/hostile/slow:1.0.0: ") {
			t.Errorf("last line %q does not name the generation", lastLine(stderr.String()))
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("still rendering 20 s after SIGTERM")
	}
}

// lineWatcher collects stderr and closes seen once want appears.
type lineWatcher struct {
	syncBuf
	want string
	seen chan struct{}
	once sync.Once
}

func (l *lineWatcher) Write(p []byte) (int, error) {
	n, err := l.syncBuf.Write(p)
	if strings.Contains(l.String(), l.want) {
		l.once.Do(func() { close(l.seen) })
	}
	return n, err
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

// loadAvg is the machine's load average (1, 5, 15 min), for the figures.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
