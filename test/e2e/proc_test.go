package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one process the harness started, in a process group of its own,
// its output in a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

func (c *cluster) start(name string, env []string, argv ...string) (*proc, error) {
	logPath := path(c.dir, "logs", name+".log")
	if err := os.MkdirAll(path(c.dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = env, f, f, c.dir
	// Its own process group, so stop reaches what it starts; killed with
	// the harness whatever happens (and the PID namespace ends with it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
// It reports how long the process took to end after the first signal.
func (p *proc) stop(grace time.Duration) (time.Duration, bool) {
	if p.exited() {
		return 0, true
	}
	start := time.Now()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(start), true
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
	return time.Since(start), false
}

func (p *proc) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

func (p *proc) tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + "…"
		}
	}
	return "--- " + p.name + " (" + p.logPath + "), last lines:\n" + strings.Join(lines, "\n")
}

// waitFor polls ready until it holds, the process exits or the deadline passes.
func (p *proc) waitFor(what string, timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited (%v) before %s\n%s", p.name, p.err, what, p.tail(40))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no %s after %s\n%s", p.name, what, timeout, p.tail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func dials(network, addr string) func() bool {
	return func() bool {
		c, err := net.DialTimeout(network, addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
}

func httpOK(url string) func() bool {
	client := &http.Client{Timeout: 2 * time.Second}
	return func() bool {
		resp, err := client.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}

// procEntry is a process of /proc/<pid>/stat: its command name and the
// fields after it (state(0) ppid(1) … utime(11) stime(12) cutime(13)
// cstime(14)).
type procEntry struct {
	comm   string
	fields []string
}

// ticks is the sum of the fields at ks, in CPU time (USER_HZ ticks).
func (e procEntry) ticks(ks ...int) time.Duration {
	var n int64
	for _, k := range ks {
		if k < len(e.fields) {
			v, _ := strconv.ParseInt(e.fields[k], 10, 64)
			n += v
		}
	}
	return time.Duration(n) * time.Second / clockTicks
}

// procTable reads every process of /proc and who its children are.
func procTable() (procs map[int]procEntry, children map[int][]int) {
	procs, children = map[int]procEntry{}, map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 15 {
			continue
		}
		procs[id] = procEntry{comm: s[open+1 : close], fields: f}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], id)
	}
	return procs, children
}

// walkTree calls visit for pid and its descendants, children in pid order.
func walkTree(pid int, procs map[int]procEntry, children map[int][]int, visit func(int, procEntry)) {
	if e, ok := procs[pid]; ok {
		visit(pid, e)
	}
	kids := children[pid]
	sort.Ints(kids)
	for _, k := range kids {
		walkTree(k, procs, children, visit)
	}
}

// memory is a process tree's resident memory (VmRSS summed over the
// process and its descendants, from /proc), by process.
func memoryOfTree(pid int) (total int64, parts []string) {
	procs, children := procTable()
	walkTree(pid, procs, children, func(id int, e procEntry) {
		if kb := rssKB(id); kb > 0 {
			total += kb << 10
			parts = append(parts, fmt.Sprintf("%s %d MiB", e.comm, kb>>10))
		}
	})
	return total, parts
}

func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
