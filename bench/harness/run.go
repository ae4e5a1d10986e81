package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/cmpservice"
)

// cmdSpec is one process to measure.
type cmdSpec struct {
	Name string   // for messages
	Bin  string   // executable
	Args []string // arguments
	Env  []string // complete environment
	Dir  string   // working directory ("" inherits)
	// server is the render server a sidecar-mode command talks to; nil for
	// a process of its own.
	server *renderServer
	// service: the command is a request to server's plugin service
	// (ConfigManagementPluginService, as Argo CD's repo-server sends it)
	// streaming Dir with Env, made from the harness (runService); else
	// Bin is run (argocd-ocm-client, on the argocd-cmp-server path).
	service bool
	// concurrent: runs overlap (a burst), so the server's CPU time per run
	// is not read (it would be wrong, and reading costs CPU).
	concurrent bool
	// direct: started by the harness itself, not through procstat, as
	// argocd-cmp-server starts argocd-ocm-client. For the clients of a
	// burst: 100 procstat start-ups (2-2.5 ms of CPU each, as much as the
	// client's own) are not part of the generations, and the warm
	// reference they are compared with excludes procstat too. CPU time and
	// wall time are the child's (exact for a direct child); peak RSS is not
	// measured (a direct child's ru_maxrss counts the harness's address
	// space, see bench/procstat).
	direct bool
}

// sample is one measured process run.
type sample struct {
	Wall     time.Duration
	CPU      time.Duration // user + system
	MaxRSSKB int64
	// ServerCPU is the CPU time the render server used during a
	// sidecar-mode run (only meaningful when runs do not overlap).
	ServerCPU time.Duration
	Sidecar   bool
	Exit      int
	Stdout    []byte
	Stderr    string
}

// procstat is the small runner measured processes are started through
// (see bench/procstat); statsDir holds its reports.
var (
	procstat string
	statsDir string
	statsSeq atomic.Int64
)

// runProc runs c to completion through procstat and returns its wall time
// (exec to exit), CPU time (user+sys) and peak RSS (the child's getrusage).
func runProc(ctx context.Context, c cmdSpec) sample {
	if c.service {
		return runService(ctx, c)
	}
	if c.direct {
		return runDirect(ctx, c)
	}
	statsFile := filepath.Join(statsDir, fmt.Sprintf("%d.json", statsSeq.Add(1)))
	defer os.Remove(statsFile)
	var cpu0 int64
	if c.server != nil {
		c.server.runs.Add(1)
		if !c.concurrent {
			cpu0 = c.server.cpu()
		}
	}
	cmd := exec.CommandContext(ctx, procstat, append([]string{statsFile, c.Bin}, c.Args...)...)
	cmd.Env = c.Env
	cmd.Dir = c.Dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	s := sample{Stdout: out.Bytes(), Stderr: errb.String(), Sidecar: c.server != nil}
	if c.server != nil {
		c.server.lastRun.Store(time.Now().UnixNano())
		if !c.concurrent {
			s.ServerCPU = time.Duration(max(0, c.server.cpu()-cpu0))
		}
	}
	var st struct {
		WallNS   int64 `json:"wall_ns"`
		CPUNS    int64 `json:"cpu_ns"`
		MaxRSSKB int64 `json:"max_rss_kb"`
		Exit     int   `json:"exit"`
	}
	b, rerr := os.ReadFile(statsFile)
	if rerr != nil || json.Unmarshal(b, &st) != nil {
		s.Exit = -1
		s.Stderr += fmt.Sprintf(" (procstat: %v, %v)", err, rerr)
		return s
	}
	s.Wall, s.CPU, s.MaxRSSKB, s.Exit = time.Duration(st.WallNS), time.Duration(st.CPUNS), st.MaxRSSKB, st.Exit
	return s
}

// mustOK fails the benchmark when a run failed: figures of failed runs mean nothing.
func mustOK(c cmdSpec, s sample) sample {
	if s.Exit != 0 {
		fatalf("%s failed (exit %d): %s", c.Name, s.Exit, strings.TrimSpace(s.Stderr))
	}
	return s
}

// series is the samples of one command.
type series struct {
	Name   string    `json:"name"`
	WallMS []float64 `json:"wall_ms"`
	CPUMS  []float64 `json:"cpu_ms"`
	RSSMiB []float64 `json:"max_rss_mib"`
	// Sidecar mode: CPU time of the render server per run (CPUMS and
	// RSSMiB are the client's).
	ServerCPUMS []float64 `json:"server_cpu_ms,omitempty"`
	samples     []sample
}

func (s *series) add(x sample) {
	if len(s.samples) > 0 && bytes.Equal(x.Stdout, s.samples[0].Stdout) {
		// The same output held once: kept per run, kube-prometheus-stack's
		// 3 MB made the harness (the repo-server's stand-in, and the floor's
		// process) collect a heap of hundreds of MB during the rounds.
		x.Stdout = s.samples[0].Stdout
	}
	s.samples = append(s.samples, x)
	s.WallMS = append(s.WallMS, round(ms(x.Wall)))
	s.CPUMS = append(s.CPUMS, round(ms(x.CPU)))
	s.RSSMiB = append(s.RSSMiB, round(float64(x.MaxRSSKB)/1024))
	if x.Sidecar {
		s.ServerCPUMS = append(s.ServerCPUMS, round(ms(x.ServerCPU)))
	}
}

func (s *series) wall() float64 { return median(s.WallMS) }

// cpu is the median CPU time of a run: the process's, or in sidecar mode
// the client's plus the render server's.
func (s *series) cpu() float64 {
	if len(s.ServerCPUMS) != len(s.CPUMS) {
		return median(s.CPUMS)
	}
	t := make([]float64, len(s.CPUMS))
	for i := range t {
		t[i] = s.CPUMS[i] + s.ServerCPUMS[i]
	}
	return median(t)
}
func (s *series) clientCPU() float64 { return median(s.CPUMS) }
func (s *series) serverCPU() float64 { return median(s.ServerCPUMS) }
func (s *series) rss() float64       { return median(s.RSSMiB) }

// summary is what the JSON result keeps of a series.
type summary struct {
	Name         string  `json:"name"`
	N            int     `json:"n"`
	WallMedianMS float64 `json:"wall_median_ms"`
	WallMinMS    float64 `json:"wall_min_ms"`
	WallMaxMS    float64 `json:"wall_max_ms"`
	CPUMedianMS  float64 `json:"cpu_median_ms"` // sidecar mode: client + server
	ServerCPUMS  float64 `json:"server_cpu_median_ms,omitempty"`
	RSSMedianMiB float64 `json:"max_rss_median_mib"`
	RSSMaxMiB    float64 `json:"max_rss_max_mib"`
	Samples      *series `json:"samples,omitempty"`
}

func (s *series) summary() summary {
	return summary{Name: s.Name, N: len(s.WallMS), WallMedianMS: round(s.wall()), WallMinMS: round(minOf(s.WallMS)),
		WallMaxMS: round(maxOf(s.WallMS)), CPUMedianMS: round(s.cpu()), RSSMedianMiB: round(s.rss()),
		RSSMaxMiB: round(maxOf(s.RSSMiB)), ServerCPUMS: round(s.serverCPU()), Samples: s}
}

// job is one command of an interleaved comparison, with optional hooks
// around each run (e.g. emptying the cache for a cold run, reading the
// registry's request log after it).
type job struct {
	spec   cmdSpec
	before func()
	after  func(sample)
	// fn, when set, is the job instead of spec: work measured inside the
	// harness (the templates-only floor, floor.go).
	fn func(context.Context) sample
	s  *series
}

func newJob(c cmdSpec) *job { return &job{spec: c, s: &series{Name: c.Name}} }

func (j *job) run(ctx context.Context) sample {
	if j.before != nil {
		j.before()
	}
	if j.fn != nil {
		return j.fn(ctx)
	}
	x := mustOK(j.spec, runProc(ctx, j.spec))
	if j.after != nil {
		j.after(x)
	}
	return x
}

// interleave runs the jobs n times each, in rounds, rotating which job goes
// first in each round so that drift in machine load (other engineers
// compiling) hits every job alike; one untimed warm-up run of each first.
func interleave(ctx context.Context, n int, jobs ...*job) {
	for _, j := range jobs {
		j.run(ctx)
	}
	for i := 0; i < n; i++ {
		for k := range jobs {
			j := jobs[(i+k)%len(jobs)]
			j.s.add(j.run(ctx))
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

func round(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return math.Round(x*100) / 100
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
	if globalTB != nil {
		globalTB.close()
	}
	os.Exit(1)
}

// loadAvg is /proc/loadavg's 1-minute figure (-1 when unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l1 float64
	if _, err := fmt.Sscan(string(b), &l1); err != nil {
		return -1
	}
	return l1
}

// runDirect runs c as the harness's own child (see cmdSpec.direct).
func runDirect(ctx context.Context, c cmdSpec) sample {
	if c.server != nil {
		c.server.runs.Add(1)
	}
	cmd := exec.CommandContext(ctx, c.Bin, c.Args...)
	cmd.Env, cmd.Dir = c.Env, c.Dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	s := sample{Wall: time.Since(t0), Stdout: out.Bytes(), Stderr: errb.String(), Sidecar: c.server != nil, Exit: -1}
	if c.server != nil {
		c.server.lastRun.Store(time.Now().UnixNano())
	}
	if ps := cmd.ProcessState; ps != nil {
		s.Exit = ps.ExitCode()
		s.CPU = ps.UserTime() + ps.SystemTime()
	}
	if err != nil && s.Exit == 0 {
		s.Exit = -1
		s.Stderr += " (" + err.Error() + ")"
	}
	return s
}

// runService sends c to its server's plugin service as Argo CD's
// repo-server does (cmpservice.Client: a connection per generation, the
// directory packed as a tgz and streamed in 1 KiB chunks) and returns the
// manifests as stdout. Wall time is the request's, packing included; CPU
// time is the render server's alone (supervisor and workers, from
// /proc; see renderServer.cpu), including what it does after it answered
// (a worker's clean-up, a collection: see quietCPU): packing and streaming the directory are the
// repo-server's work, whichever plugin it calls, and run in the harness
// here. The manifests, one string per document, are printed as generate
// prints them (each after a "---" line), so that they compare byte for
// byte with a generate process's stdout.
func runService(ctx context.Context, c cmdSpec) sample {
	c.server.runs.Add(1)
	var cpu0 int64
	if !c.concurrent {
		cpu0 = c.server.cpu()
	}
	s := sample{Sidecar: true}
	t0 := time.Now()
	cl, err := cmpservice.Dial(c.server.PluginSocket)
	var manifests []string
	if err == nil {
		manifests, err = cl.Generate(ctx, c.Dir, c.Env)
		cl.Close()
	}
	s.Wall = time.Since(t0)
	c.server.lastRun.Store(time.Now().UnixNano())
	if !c.concurrent {
		s.ServerCPU = time.Duration(max(0, c.server.quietCPU()-cpu0))
	}
	if err != nil {
		s.Exit = 1
		if st, ok := status.FromError(err); ok {
			s.Stderr = st.Message()
		} else {
			s.Stderr = err.Error()
		}
		return s
	}
	var out strings.Builder
	for _, m := range manifests {
		out.WriteString("---\n" + m + "\n")
	}
	s.Stdout = []byte(out.String())
	return s
}
