package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// The sidecar as installed: argocd-cmp-server runs `argocd-ocm-client
// generate` (plugin.yaml), which hands the command to the long-lived
// `argocd-ocm-plugin serve` over a unix socket. The harness starts one
// server per distinct sidecar environment (the environment of a generate
// process without its request-scoped variables: the cache directory is the
// one that differs between figures) and runs the client through procstat
// like every other measured process.

// envPluginBinary is where argocd-ocm-client's fallback finds the plugin.
// Sidecar-mode commands set it to a path that does not exist, so that a
// client the server did not serve fails loudly instead of silently
// measuring a process render. It is part of the sidecar environment (the
// client's fingerprint covers it), so the servers get it too.
const envPluginBinary = "ARGOCD_OCM_PLUGIN_BINARY"

// renderServer is one `argocd-ocm-plugin serve --socket PATH` process.
type renderServer struct {
	Name     string `json:"name"`
	Socket   string `json:"socket"`
	Log      string `json:"log"`
	CacheDir string `json:"cache_dir"`
	PID      int    `json:"pid"`
	// Filled in when the server stops.
	Commands     int64   `json:"commands"`      // sidecar-mode client runs sent to it
	CommandLines int     `json:"command_lines"` // "command done" lines in its log
	RSSMiB       float64 `json:"rss_mib_at_end"`
	PeakMiB      float64 `json:"peak_rss_mib"` // largest VmHWM seen (it is reset between figures)
	CPUSeconds   float64 `json:"cpu_seconds"`
	IdleSeconds  float64 `json:"idle_seconds_at_end"` // since its last command ended
	Exit         string  `json:"exit"`

	fingerprint string
	cmd         *exec.Cmd
	logFile     *os.File
	exited      chan struct{}
	exitErr     error
	runs        atomic.Int64
	lastRun     atomic.Int64 // UnixNano when the last command ended
	mu          sync.Mutex
	maxHWM      float64
	stopped     bool
}

// sidecar turns a generate command into the sidecar's: argocd-ocm-client
// with the same environment plus the socket of the render server for that
// environment (started on first use).
func (b *bench) sidecar(c cmdSpec) cmdSpec {
	var side []string
	for _, kv := range c.Env {
		if name, _, _ := strings.Cut(kv, "="); !server.RequestScoped(name) {
			side = append(side, kv)
		}
	}
	side = append(side, envPluginBinary+"=/nonexistent")
	srv := b.server(side)
	c.Name = "sidecar " + c.Name
	c.Bin = b.bins.Client
	c.Env = append(slices.Clone(c.Env), server.EnvSocket+"="+srv.Socket, envPluginBinary+"=/nonexistent")
	c.server = srv
	return c
}

// server returns the render server whose environment is exactly env,
// starting it if there is none yet.
func (b *bench) server(env []string) *renderServer { return b.serverWith(b.bins.Plugin, env) }

// serverWith is server for another plugin build (the workers section's
// before/after comparison): env must then differ from every other
// server's.
func (b *bench) serverWith(plugin string, env []string) *renderServer {
	fp := server.Fingerprint(env)
	for _, s := range b.servers {
		if s.fingerprint == fp {
			return s
		}
	}
	dir := b.dir(fmt.Sprintf("srv-%d", len(b.servers)+1))
	s := &renderServer{Name: filepath.Base(dir), Socket: filepath.Join(dir, "r.sock"), Log: filepath.Join(dir, "serve.log"),
		fingerprint: fp, exited: make(chan struct{})}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ARGOCD_OCM_CACHE_DIR="); ok {
			s.CacheDir = v
		}
	}
	f, err := os.Create(s.Log)
	if err != nil {
		fatalf("%v", err)
	}
	s.logFile = f
	// The environment is exactly the sidecar's (a non-nil Env gets nothing
	// added by os/exec), so that client and server fingerprints match.
	s.cmd = exec.Command(plugin, "serve", "--socket", s.Socket)
	s.cmd.Env = slices.Clone(env)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = f, f
	if err := s.cmd.Start(); err != nil {
		fatalf("starting the render server: %v", err)
	}
	s.PID = s.cmd.Process.Pid
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()
	b.servers = append(b.servers, s)
	b.tb.Cleanup(func() { s.stop() }) // also on fatalf
	t0 := time.Now()
	for {
		select {
		case <-s.exited:
			fatalf("render server %s exited at start-up (%v): %s", s.Name, s.exitErr, s.logTail())
		default:
		}
		// The probe connection sends nothing: the server logs one "bad
		// request" (EOF) for it.
		if c, err := net.DialTimeout("unix", s.Socket, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Since(t0) > 30*time.Second {
			fatalf("render server %s: no connection on %s after 30 s: %s", s.Name, s.Socket, s.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
	logf("render server %s (pid %d) accepts connections on %s after %.0f ms; cache %s; log %s",
		s.Name, s.PID, s.Socket, ms(time.Since(t0)), s.CacheDir, s.Log)
	return s
}

// stop sends SIGTERM and waits for the server (it drains running commands
// for up to 10 s), then records its figures.
func (s *renderServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	rss, hwm := s.memLocked()
	s.RSSMiB, s.PeakMiB = round(rss), round(max(s.maxHWM, hwm))
	s.CPUSeconds = round(float64(s.cpu()) / 1e9)
	s.Commands = s.runs.Load()
	if t := s.lastRun.Load(); t > 0 {
		s.IdleSeconds = round(time.Since(time.Unix(0, t)).Seconds())
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.Exit = "0"
	if s.exitErr != nil {
		s.Exit = s.exitErr.Error()
	}
	s.logFile.Close()
	s.CommandLines = s.count(`msg="command done"`)
}

// logText is the server's log so far.
func (s *renderServer) logText() string {
	b, err := os.ReadFile(s.Log)
	if err != nil {
		fatalf("render server log: %v", err)
	}
	return string(b)
}

func (s *renderServer) count(sub string) int { return strings.Count(s.logText(), sub) }

func (s *renderServer) logTail() string {
	lines := strings.Split(strings.TrimSpace(s.logText()), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], " | ")
}

// checkServers fails the benchmark unless every render server ran exactly
// the commands its clients sent (warm-ups included): a client that fell
// back to a process of its own, or a refused request, would otherwise make
// a sidecar figure a process figure.
func (b *bench) checkServers(section string) {
	for _, s := range b.servers {
		if s.isStopped() {
			continue // checked when stopped (stopServer)
		}
		select {
		case <-s.exited:
			fatalf("%s: render server %s exited (%v): %s", section, s.Name, s.exitErr, s.logTail())
		default:
		}
		log := s.logText()
		done, want := strings.Count(log, `msg="command done"`), s.runs.Load()
		refused := strings.Count(log, `msg="request refused"`)
		if int64(done) != want || refused > 0 || strings.Contains(log, "level=ERROR") {
			fatalf("%s: render server %s logged %d \"command done\" lines and %d refused requests for %d sidecar-mode runs (log %s): %s",
				section, s.Name, done, refused, want, s.Log, s.logTail())
		}
		if w := strings.Count(log, "level=WARN") - strings.Count(log, `msg="bad request" cause=EOF`); w > 0 {
			logf("WARNING: %s: render server %s logged %d warnings (log %s): %s", section, s.Name, w, s.Log, s.logTail())
		}
	}
	if len(b.servers) > 0 {
		var parts []string
		for _, s := range b.servers {
			parts = append(parts, fmt.Sprintf("%s %d", s.Name, s.runs.Load()))
		}
		logf("%s: render servers ran every sidecar-mode command (%s)", section, strings.Join(parts, ", "))
	}
}

// isStopped reports whether stop has been called.
func (s *renderServer) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// stopServer stops s before the end of the run (a server started for one
// figure, such as a concurrent burst's) and checks it as stopServers does.
func (b *bench) stopServer(s *renderServer) {
	s.stop()
	if s.Exit != "0" || int64(s.CommandLines) != s.Commands {
		fatalf("render server %s: exit %s, %d \"command done\" lines for %d commands: %s", s.Name, s.Exit, s.CommandLines, s.Commands, s.logTail())
	}
}

// stopServers stops every render server and checks their logs once more.
func (b *bench) stopServers() {
	b.checkServers("end")
	for _, s := range b.servers {
		b.stopServer(s)
	}
	b.res.Servers = b.servers
	if len(b.servers) == 0 {
		return
	}
	// Memory a server keeps between renders: its RSS when it stops, after
	// every figure (the big directoryTree included).
	var parts []string
	top := b.servers[0]
	for _, s := range b.servers {
		parts = append(parts, fmt.Sprintf("%s (cache %s, %d commands, %.1f s CPU): RSS %.0f MiB after %.0f s idle, peak %.0f MiB",
			s.Name, filepath.Base(s.CacheDir), s.Commands, s.CPUSeconds, s.RSSMiB, s.IdleSeconds, s.PeakMiB))
		if s.Commands > top.Commands {
			top = s
		}
	}
	b.modeGoal("sidecar", goal{ID: "info", What: fmt.Sprintf("render server RSS when stopped, after all figures (%d commands)", top.Commands),
		Value: top.RSSMiB, Unit: "MiB", Reference: top.PeakMiB, RefWhat: "MiB peak", Note: strings.Join(parts, "; ")})
}

// mem is the render server's VmRSS and VmHWM (peak RSS since start or the
// last resetPeak) in MiB, from /proc/PID/status: those of the supervisor
// plus the private part (RssAnon) of its render workers, whose pages of the
// binary are the supervisor's too. A worker's peak counts as its private
// memory at its own peak (VmHWM less its file pages).
func (s *renderServer) mem() (rss, hwm float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memLocked()
}

func (s *renderServer) memLocked() (rss, hwm float64) {
	st := procStatus(s.PID)
	if st == nil {
		return 0, 0
	}
	rss, hwm = st["VmRSS"], st["VmHWM"]
	for _, pid := range childPIDs(s.PID) {
		if c := procStatus(pid); c != nil {
			rss += c["RssAnon"]
			hwm += max(c["VmHWM"]-c["RssFile"]-c["RssShmem"], 0)
		}
	}
	s.maxHWM = max(s.maxHWM, hwm)
	return rss, hwm
}

// procStatus reads the kB fields of /proc/PID/status, in MiB.
func procStatus(pid int) map[string]float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		out[k] = kb / 1024
	}
	return out
}

// childPIDs lists the children of pid (the render server's workers).
func childPIDs(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// resetPeak sets VmHWM to the current RSS (clear_refs 5), so that the next
// mem reports the peak of what runs in between; it returns that RSS.
func (s *renderServer) resetPeak() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memLocked()
	for _, pid := range append([]int{s.PID}, childPIDs(s.PID)...) {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			logf("WARNING: cannot reset the peak RSS of render server %s: %v (peaks include earlier figures)", s.Name, err)
		}
	}
	rss, _ := s.memLocked()
	return rss
}

// cpu is the CPU time the server's threads and its render workers' have
// used, in ns: the sum of /proc/PID/task/*/schedstat (nanosecond
// resolution, unlike the clock ticks of /proc/PID/stat; Go's threads live
// as long as the process) of the server and its live workers, plus the
// clock ticks of the workers it has reaped (cutime, cstime).
func (s *renderServer) cpu() int64 {
	sum := taskCPU(s.PID)
	for _, pid := range childPIDs(s.PID) {
		sum += taskCPU(pid)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.PID)); err == nil {
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			f := bytes.Fields(b[i+2:])
			if len(f) > 14 {
				cu, _ := strconv.ParseInt(string(f[13]), 10, 64)
				cs, _ := strconv.ParseInt(string(f[14]), 10, 64)
				sum += (cu + cs) * 10_000_000 // USER_HZ = 100
			}
		}
	}
	return sum
}

func taskCPU(pid int) int64 {
	dirs, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var sum int64
	for _, d := range dirs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, d.Name()))
		if err != nil {
			continue
		}
		f := bytes.Fields(b)
		if len(f) > 0 {
			n, _ := strconv.ParseInt(string(f[0]), 10, 64)
			sum += n
		}
	}
	return sum
}
