package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The parts the fleet scenarios add to the run: a CNCF distribution
// registry, the repo-server Service as a proxy over replicas, more
// replicas, and what a round measures of the processes.

const (
	registryAddr = "127.0.0.1:5000"
	// webhookGeneratorAddr is the generator the registry notifies (its own
	// ConfigMap, so the list TTLs of scenario f's generator stay as they are).
	webhookGeneratorAddr = "127.0.0.1:8096"
	webhookSecret        = "e2e-registry-webhook-secret-0123456789"
	webhookSource        = "e2e-registry"
)

// startRegistry runs the CNCF distribution registry (hack/registry: its own
// command, local storage drivers only) with notifications of pushes to the
// webhook generator, pulls ignored. Its access log counts requests by client.
func (c *cluster) startRegistry() error {
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog: {disabled: false}
storage:
  filesystem: {rootdirectory: %s}
  delete: {enabled: true}
  maintenance: {uploadpurging: {enabled: false}}
http:
  addr: %s
  secret: e2e
notifications:
  endpoints:
    - name: argocd-ocm-generator
      url: http://%s/api/v1/webhook/%s
      headers:
        Authorization: [Bearer %s]
      timeout: 2s
      threshold: 3
      backoff: 500ms
      ignore:
        actions: [pull]
`, path(c.dir, "registry", "storage"), registryAddr, webhookGeneratorAddr, webhookSource, webhookSecret)
	f := path(c.dir, "registry", "config.yml")
	if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
		return err
	}
	var err error
	c.registry, err = c.start("registry", c.baseEnv("home"), path(e2eBin, "registry"), "serve", f)
	if err != nil {
		return err
	}
	return c.registry.waitFor("its listener", 30*time.Second, dials("tcp", registryAddr))
}

// accessLine is one line of the registry's access log (combined log format).
var accessLine = regexp.MustCompile(`"(GET|HEAD|PUT|POST|PATCH|DELETE) (\S+) HTTP/[0-9.]+" (\d+) \d+ "[^"]*" "([^"]*)"`)

// registryRequest is one request the registry served.
type registryRequest struct {
	method, path, agent string
	status              int
}

// registryLog returns the requests logged after byte offset from, and the
// offset after them.
func (c *cluster) registryLog(from int64) ([]registryRequest, int64) {
	f, err := os.Open(c.registry.logPath)
	if err != nil {
		return nil, from
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, from
	}
	var out []registryRequest
	r := bufio.NewReader(f)
	off := from
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break // a partial last line is read next time
		}
		off += int64(len(line))
		if m := accessLine.FindStringSubmatch(line); m != nil {
			st, _ := strconv.Atoi(m[3])
			out = append(out, registryRequest{method: m[1], path: m[2], agent: m[4], status: st})
		}
	}
	return out, off
}

// registryLogEnd is the access log's current size.
func (c *cluster) registryLogEnd() int64 {
	fi, err := os.Stat(c.registry.logPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// repoService is what a Kubernetes Service of the repo-server does for Argo
// CD: each connection (the controller opens one per call) goes to one of the
// replicas, in turn.
type repoService struct {
	l        net.Listener
	mu       sync.Mutex
	backends []string
	next     atomic.Uint64
	conns    map[string]*atomic.Int64 // connections per backend
}

func newRepoService(addr string, backends ...string) (*repoService, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &repoService{l: l, backends: backends, conns: map[string]*atomic.Int64{}}
	for _, b := range backends {
		s.conns[b] = &atomic.Int64{}
	}
	go s.serve()
	return s, nil
}

func (s *repoService) add(backend string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.backends = append(s.backends, backend)
	s.conns[backend] = &atomic.Int64{}
}

func (s *repoService) remove(backend string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keep []string
	for _, b := range s.backends {
		if b != backend {
			keep = append(keep, b)
		}
	}
	s.backends = keep
}

// connections returns the connections each backend was given so far.
func (s *repoService) connections() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for b, n := range s.conns {
		out[b] = n.Load()
	}
	return out
}

func (s *repoService) serve() {
	for {
		in, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		b := s.backends[int(s.next.Add(1)-1)%len(s.backends)]
		s.conns[b].Add(1)
		s.mu.Unlock()
		go func() {
			defer in.Close()
			out, err := net.DialTimeout("tcp", b, 5*time.Second)
			if err != nil {
				return
			}
			defer out.Close()
			done := make(chan struct{}, 2)
			go func() { io.Copy(out, in); out.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			go func() { io.Copy(in, out); in.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

func (s *repoService) close() { s.l.Close() }

// replica is a repo-server with its own sidecar, plugin sockets, work
// directory and blob cache, as one pod of the repo-server Deployment.
type replica struct {
	n                   int
	sidecar, repoServer *proc
	addr, metrics       string
	cache               string
}

// addReplica starts replica n (2, 3, …) and adds it to the Service.
func (c *cluster) addReplica(n int) (*replica, error) {
	r, err := c.startReplica(n, nil)
	if err != nil {
		return nil, err
	}
	c.replicas = append(c.replicas, r)
	c.service.add(r.addr)
	return r, nil
}

// startReplica starts replica n with repoEnv added to its repo-server's
// installed environment (e.g. ARGOCD_REPO_SERVER_PLUGIN_TAR_EXCLUSIONS), outside the
// Service.
func (c *cluster) startReplica(n int, repoEnv []string) (*replica, error) {
	sfx := fmt.Sprintf("-%d", n)
	for _, d := range []string{"plugins", "sidecar-tmp", "repo-tmp", "cache"} {
		if err := os.MkdirAll(path(c.dir, d+sfx), 0o755); err != nil {
			return nil, err
		}
	}
	r := &replica{n: n, addr: fmt.Sprintf("127.0.0.1:%d", 8090+n), metrics: fmt.Sprintf("127.0.0.1:%d", 9463+n), cache: path(c.dir, "cache"+sfx)}
	args, env, err := c.sidecarCommand(sfx)
	if err != nil {
		return nil, err
	}
	env = append(env, "ARGOCD_OCM_METRICS_ADDR="+r.metrics, "ARGOCD_OCM_PLAIN_HTTP="+registryAddr)
	r.sidecar, err = c.start("sidecar"+sfx, env, args...)
	if err != nil {
		return nil, err
	}
	if err := r.sidecar.waitFor("the plugin socket", 30*time.Second, dials("unix", path(c.dir, "plugins"+sfx, pluginName+".sock"))); err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(r.addr)
	r.repoServer, err = c.start("repo-server"+sfx, append(append(append(c.baseEnv("repo-tmp"+sfx),
		"ARGOCD_PLUGINSOCKFILEPATH="+path(c.dir, "plugins"+sfx),
		"ARGOCD_GPG_ENABLED=false",
		"KUBECONFIG="+path(c.dir, "kubeconfig"),
	), installedRepoServerEnv...), repoEnv...), path(e2eBin, "argocd-repo-server"), "--disable-tls", "--client-ca-path", "",
		"--redis", redisAddr, "--port", port, "--metrics-port", strconv.Itoa(8083+10*n), "--address", "127.0.0.1")
	if err != nil {
		return nil, err
	}
	if err := r.repoServer.waitFor("a gRPC listener", 60*time.Second, dials("tcp", r.addr)); err != nil {
		return nil, err
	}
	return r, nil
}

// only makes the Service send every connection to r, until the returned
// function puts the replicas back.
func (c *cluster) only(r *replica) func() {
	c.service.mu.Lock()
	saved := c.service.backends
	c.service.backends = []string{r.addr}
	if c.service.conns[r.addr] == nil {
		c.service.conns[r.addr] = &atomic.Int64{}
	}
	c.service.mu.Unlock()
	return func() {
		c.service.mu.Lock()
		c.service.backends = saved
		c.service.mu.Unlock()
	}
}

// removeReplica takes a replica out of the Service and stops it.
func (c *cluster) removeReplica(r *replica) {
	c.service.remove(r.addr)
	r.repoServer.stop(5 * time.Second)
	r.sidecar.stop(10 * time.Second)
	var keep []*replica
	for _, x := range c.replicas {
		if x != r {
			keep = append(keep, x)
		}
	}
	c.replicas = keep
}

// --- what a round measures ---

// procStat is a process tree's CPU time (its own and that of the children
// it waited for, so a Helm execution the repo-server waited for counts, and
// so does a worker the render server replaced) and its resident memory.
type procStat struct {
	cpu time.Duration
	rss int64
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

func treeStat(pid int) procStat {
	var st procStat
	procs, children := procTable()
	walkTree(pid, procs, children, func(id int, e procEntry) {
		st.cpu += e.ticks(11, 12, 13, 14)
		st.rss += rssKB(id) << 10
	})
	return st
}

// treeCPUByCommand splits a process tree's CPU time by process role
// (processRole): a process's own time under its role, the time of the
// children it waited for under endedRole (the render server's ended
// workers count as render workers, the repo-server's git and Helm
// executions as its executions), so a round shows where its generation CPU
// went.
func treeCPUByCommand(pid int, into map[string]time.Duration) {
	procs, children := procTable()
	walkTree(pid, procs, children, func(id int, e procEntry) {
		role := processRole(e.comm, id == pid)
		into[role] += e.ticks(11, 12)
		into[endedRole(role)] += e.ticks(13, 14)
	})
}

// processRole names a process of a measured tree by what it is: the
// sidecar's first process is the render server, the others of its binary
// its workers; /proc truncates command names to 15 bytes.
func processRole(comm string, root bool) string {
	switch {
	case comm == renderServerComm && root:
		return "render server"
	case comm == renderServerComm:
		return "render workers"
	case comm == "argocd-repo-ser":
		return "repo-server"
	}
	return comm
}

// endedRole is what the children a process of role waited for were: a
// worker that ended keeps counting as a worker, so a round's worker CPU
// does not move between keys when one is replaced.
func endedRole(role string) string {
	switch role {
	case "render server", "render workers":
		return "render workers"
	case "repo-server":
		return "repo-server's git and helm executions"
	}
	return role + ">ended children"
}

// sampler records the peak resident memory of process trees until stopped.
type sampler struct {
	mu    sync.Mutex
	peaks map[string]int64
	stop  chan struct{}
	done  chan struct{}
}

func sample(every time.Duration, procs map[string][]*proc) *sampler {
	s := &sampler{peaks: map[string]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			for name, ps := range procs {
				var rss int64
				for _, p := range ps {
					if !p.exited() {
						rss += treeStat(p.cmd.Process.Pid).rss
					}
				}
				s.mu.Lock()
				s.peaks[name] = max(s.peaks[name], rss)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) end() map[string]int64 {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peaks
}

// cpuOf sums the CPU time of process trees.
func cpuOf(ps []*proc) time.Duration {
	var d time.Duration
	for _, p := range ps {
		if !p.exited() {
			d += treeStat(p.cmd.Process.Pid).cpu
		}
	}
	return d
}

// loadavg is /proc/loadavg's first three fields.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
