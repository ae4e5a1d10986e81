package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io/fs"
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

// The sidecar as installed: `argocd-ocm-plugin serve --plugin-socket PATH`
// answers Argo CD's repo-server itself (ConfigManagementPluginService): the
// repo-server streams the Application's directory as a tgz in 1 KiB chunks
// and the render server's workers run generate on it. The harness plays the
// repo-server with cmpservice.Client (a connection per generation, as the
// repo-server dials the plugin's socket per generation) and starts one
// server per distinct sidecar environment (the environment of a generate
// process without its request-scoped variables: the cache directory is the
// one that differs between figures).
//
// The earlier path, argocd-cmp-server running `argocd-ocm-client generate`
// (a process per generation) against `serve --socket`, is what the workers
// section still measures: the build it compares with may predate the
// plugin service.

// envPluginBinary is where argocd-ocm-client's fallback finds the plugin.
// Sidecar-mode commands set it to a path that does not exist, so that a
// client the server did not serve fails loudly instead of silently
// measuring a process render. It is part of the sidecar environment (the
// client's fingerprint covers it), so the servers get it too.
const envPluginBinary = "ARGOCD_OCM_PLUGIN_BINARY"

// renderServer is one `argocd-ocm-plugin serve --socket PATH` process.
type renderServer struct {
	Name   string `json:"name"`
	Socket string `json:"socket"`
	// PluginSocket is where the server answers as Argo CD's plugin ("" for
	// a server of argocd-ocm-client only).
	PluginSocket string `json:"plugin_socket,omitempty"`
	Log          string `json:"log"`
	CacheDir     string `json:"cache_dir"`
	PID          int    `json:"pid"`
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
	cpuMu       sync.Mutex
	workerCPU   map[string]int64 // by procStart: the most CPU time read of each worker
}

// sidecar turns a generate command into the sidecar's: a request to the
// plugin service of the render server for that environment (started on
// first use), streaming the Application's directory as the repo-server does
// (streamDir: the files the command names, not the harness's whole
// directory) with the command's environment, of which the service keeps
// the request-scoped variables.
func (b *bench) sidecar(c cmdSpec) cmdSpec {
	srv := b.serverWith(b.bins.Plugin, sidecarEnv(c.Env), true)
	c.Name = "sidecar " + c.Name
	c.Bin, c.Args = "", nil
	c.Dir = b.streamDir(c)
	c.server = srv
	c.service = true
	return c
}

// sidecarClient turns a generate command into the argocd-cmp-server path's:
// argocd-ocm-client with the same environment plus the socket of the render
// server for that environment, plugin a build's plugin (the workers
// section's before/after comparison: env must then differ from every other
// server's).
func (b *bench) sidecarClient(plugin, client string, c cmdSpec) cmdSpec {
	side := append(sidecarEnv(c.Env), envPluginBinary+"=/nonexistent")
	srv := b.serverWith(plugin, side, false)
	c.Bin = client
	c.Env = append(slices.Clone(c.Env), server.EnvSocket+"="+srv.Socket, envPluginBinary+"=/nonexistent")
	c.server = srv
	return c
}

// sidecarEnv is a generate command's environment without its
// request-scoped variables: the sidecar's own.
func sidecarEnv(env []string) []string {
	var side []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !server.RequestScoped(name) {
			side = append(side, kv)
		}
	}
	return side
}

// serverWith returns the render server of plugin whose environment is
// exactly env, starting it if there is none yet; pluginService says whether
// it answers as Argo CD's plugin too (serve --plugin-socket), else it
// serves argocd-ocm-client only, whose fingerprint must match env.
func (b *bench) serverWith(plugin string, env []string, pluginService bool) *renderServer {
	fp := server.Fingerprint(env)
	if pluginService {
		fp += " plugin-service"
	}
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
	if pluginService {
		s.PluginSocket = filepath.Join(dir, "plugin.sock")
		s.cmd.Args = append(s.cmd.Args, "--plugin-socket", s.PluginSocket)
		// The service unpacks streams under $TMPDIR: one per server, so
		// that a bench's files stay in its own directory.
		s.cmd.Env = append(s.cmd.Env, "TMPDIR="+b.dir(s.Name, "tmp"))
	}
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
	accepted := false
	for {
		select {
		case <-s.exited:
			fatalf("render server %s exited at start-up (%v): %s", s.Name, s.exitErr, s.logTail())
		default:
		}
		// The probe connection sends nothing: the server logs one "bad
		// request" (EOF) for it. The plugin service starts listening after
		// the render socket and says so in the log.
		if !accepted {
			if c, err := net.DialTimeout("unix", s.Socket, time.Second); err == nil {
				c.Close()
				accepted = true
			}
		}
		if accepted && (!pluginService || strings.Contains(s.logText(), `msg="plugin service listening"`)) {
			break
		}
		if time.Since(t0) > 30*time.Second {
			fatalf("render server %s: no connection on %s after 30 s: %s", s.Name, s.Socket, s.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
	logf("render server %s (pid %d) accepts connections on %s after %.0f ms; cache %s; log %s",
		s.Name, s.PID, cmp.Or(s.PluginSocket, s.Socket), ms(time.Since(t0)), s.CacheDir, s.Log)
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
		refused := strings.Count(log, `msg="request refused"`) + strings.Count(log, `msg="repository stream refused"`)
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
// as long as the process) of the server and of every worker seen so far, a
// live one's as it is now, one that has ended as last read (what it used
// after that is lost: little, as figures read it before and after each
// generation). The clock ticks of reaped children (cutime, cstime) are not
// used: their rounding made a figure negative when a worker ended between
// its readings.
func (s *renderServer) cpu() int64 {
	s.cpuMu.Lock()
	defer s.cpuMu.Unlock()
	if s.workerCPU == nil {
		s.workerCPU = map[string]int64{}
	}
	for _, pid := range childPIDs(s.PID) {
		if id := procStart(pid); id != "" {
			s.workerCPU[id] = max(s.workerCPU[id], taskCPU(pid))
		}
	}
	sum := taskCPU(s.PID)
	for _, n := range s.workerCPU {
		sum += n
	}
	return sum
}

// procStart names a process by its PID and start time (PIDs are reused),
// "" when it is gone.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return ""
	}
	return fmt.Sprintf("%d/%s", pid, f[19]) // starttime, field 22
}

// quietCPU is cpu once the server has gone quiet: a worker's work after
// it sent its result (returning memory to the system, removing the
// streamed directory) belongs to the generation that caused it, and would
// otherwise fall between two figures' readings. Quiet: less than 0.1 ms of
// CPU in 2 ms, read for at most 250 ms.
func (s *renderServer) quietCPU() int64 {
	last := s.cpu()
	for range 125 {
		time.Sleep(2 * time.Millisecond)
		now := s.cpu()
		if now-last < 100_000 {
			return now
		}
		last = now
	}
	return last
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

// streamDir is the Application's directory the repo-server streams for c:
// what c's request-scoped variables name in the harness's Application
// directory (values files, a CTF or CTF archive named relatively),
// hard-linked into a directory per distinct set. A request then streams
// what an Application's own directory holds, as Argo CD streams it with
// manifest-generate-paths set (docs/scaling.md), not every fixture of the
// harness.
func (b *bench) streamDir(c cmdSpec) string {
	app := cmp.Or(c.Dir, b.appDir)
	var names []string
	add := func(v string) {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" || !filepath.IsLocal(p) {
				continue
			}
			if _, err := os.Lstat(filepath.Join(app, p)); err == nil {
				names = append(names, filepath.Clean(p))
			}
		}
	}
	for _, kv := range c.Env {
		name, v, _ := strings.Cut(kv, "=")
		switch {
		case !server.RequestScoped(name):
		case name == "ARGOCD_APP_PARAMETERS":
			var params []struct {
				String *string  `json:"string"`
				Array  []string `json:"array"`
			}
			if err := json.Unmarshal([]byte(v), &params); err != nil {
				fatalf("%s: ARGOCD_APP_PARAMETERS: %v", c.Name, err)
			}
			for _, p := range params {
				if p.String != nil {
					add(*p.String)
				}
				for _, a := range p.Array {
					add(a)
				}
			}
		default:
			add(v)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	// A name below another (an ApplicationSet's directory and a file in
	// it) comes with that one's tree.
	all := slices.Clone(names)
	names = slices.DeleteFunc(names, func(n string) bool {
		return slices.ContainsFunc(all, func(o string) bool { return strings.HasPrefix(n, o+string(filepath.Separator)) })
	})
	key := app + "\x00" + strings.Join(names, "\x00")
	b.streamMu.Lock()
	defer b.streamMu.Unlock()
	if d, ok := b.streamDirs[key]; ok {
		return d
	}
	if b.streamDirs == nil {
		b.streamDirs = map[string]string{}
	}
	d := b.dir("streams", strconv.Itoa(len(b.streamDirs)+1))
	for _, n := range names {
		if err := linkTree(filepath.Join(app, n), filepath.Join(d, n)); err != nil {
			fatalf("streamed directory of %s: %v", c.Name, err)
		}
	}
	b.streamDirs[key] = d
	return d
}

// linkTree recreates the tree at src under dst: directories made, regular
// files hard-linked, symbolic links copied.
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			return os.Symlink(t, to)
		default:
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			return os.Link(p, to)
		}
	})
}
