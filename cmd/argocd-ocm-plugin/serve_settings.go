package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
)

// Settings of the render server's worker pool (see serve --help and
// docs/render-server.md); sidecar-level, never from an Application.
const (
	envWorkers      = "ARGOCD_OCM_WORKERS"
	envWarmWorkers  = "ARGOCD_OCM_WARM_WORKERS"
	envMaxMemory    = "ARGOCD_OCM_MAX_MEMORY"
	envTotalMemory  = "ARGOCD_OCM_TOTAL_MEMORY"
	envRecycleAfter = "ARGOCD_OCM_RECYCLE_AFTER"
	envMetricsAddr  = "ARGOCD_OCM_METRICS_ADDR"
)

// Defaults sized for the sidecar's documented limit of 1 GiB (manifests/):
// argocd-cmp-server and the supervisor take about 60 MiB, the binary's pages
// (shared by all workers) about 60 MiB more, and the workers' private memory
// together at most DefaultTotalMemory.
const (
	DefaultMaxMemory   int64 = 512 << 20
	DefaultTotalMemory int64 = 768 << 20
)

type serveSettings struct {
	workers, warm, recycleAfter int
	deadline                    time.Duration
	maxMemory, totalMemory      int64
	metricsAddr                 string
}

func readServeSettings(getenv func(string) string) (serveSettings, error) {
	s := serveSettings{workers: server.DefaultWorkers, warm: server.DefaultWarm, recycleAfter: server.DefaultRecycleAfter,
		deadline: DefaultTimeout, maxMemory: DefaultMaxMemory, totalMemory: DefaultTotalMemory}
	if limit := containerMemoryLimit(); limit > 0 {
		s.totalMemory = limit / 4 * 3
		s.maxMemory = min(s.maxMemory, s.totalMemory)
	}
	bad := func(name, v, want string) error {
		return fmt.Errorf("%w: %s=%s is not %s", errdef.ErrInvalidInput, name, errdef.Quote(v), want)
	}
	for _, n := range []struct {
		name string
		dst  *int
		min  int
	}{{envWorkers, &s.workers, 0}, {envWarmWorkers, &s.warm, 1}, {envRecycleAfter, &s.recycleAfter, 1}} {
		if v := strings.TrimSpace(getenv(n.name)); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < n.min {
				return s, bad(n.name, v, fmt.Sprintf("an integer ≥ %d", n.min))
			}
			*n.dst = i
		}
	}
	if v := strings.TrimSpace(getenv(envTimeout)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, bad(envTimeout, v, "a positive duration")
		}
		s.deadline = d
	}
	for _, m := range []struct {
		name string
		dst  *int64
	}{{envMaxMemory, &s.maxMemory}, {envTotalMemory, &s.totalMemory}} {
		if v := strings.TrimSpace(getenv(m.name)); v != "" {
			n, err := parseSize(v)
			if err != nil || n < 32<<20 {
				return s, bad(m.name, v, "a size of at least 32Mi (e.g. 512Mi, 1Gi)")
			}
			*m.dst = n
		}
	}
	if s.totalMemory < s.maxMemory {
		s.totalMemory = s.maxMemory
	}
	if v := strings.TrimSpace(getenv(envTagTTL)); v != "" {
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			return s, bad(envTagTTL, v, "a duration ≥ 0")
		}
	}
	s.metricsAddr = strings.TrimSpace(getenv(envMetricsAddr))
	if s.metricsAddr != "" {
		host, _, err := net.SplitHostPort(s.metricsAddr)
		if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			return s, bad(envMetricsAddr, s.metricsAddr, "a loopback address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT)")
		}
	}
	return s, nil
}

// workerGCAlone is the GOGC of a generation that renders alone, unless
// the sidecar sets GOGC (see server.Pool.GCAlone).
const workerGCAlone = 200

// workerArgv is how a worker is started: this executable, re-executed, with
// extra environment variables. Tests replace it (the test binary is not the
// plugin).
var workerArgv = func() (argv, env []string, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	return []string{self, workerCommand}, nil, nil
}

func (s serveSettings) pool(stderr io.Writer, log *slog.Logger, metrics *server.Metrics) (*server.Pool, error) {
	argv, extra, err := workerArgv()
	if err != nil {
		return nil, fmt.Errorf("serve: no executable to start render workers from: %w", err)
	}
	env := append(os.Environ(), extra...)
	if os.Getenv("GOMEMLIMIT") == "" {
		// The garbage collector works harder near the limit, so a render
		// with much garbage is not killed for memory it could free.
		env = append(env, fmt.Sprintf("GOMEMLIMIT=%dMiB", s.maxMemory/5*4>>20))
	}
	gcAlone := 0
	if os.Getenv("GOGC") == "" {
		// A large chart's render is mostly garbage (decoded and encoded
		// YAML, kustomize's copies): a generation that renders alone
		// collects at 200 % growth instead of 100 %: 6-11 % less worker
		// CPU for kube-prometheus-stack, 21 % for Argo CD's
		// cluster-install, for 8 % more peak memory (136 -> 146 MiB).
		// In a burst the workers keep the default, so that their memory
		// together does not grow (measured with 200 for all: sidecar peak
		// for 100 at once 61 -> 76 MiB). GOMEMLIMIT above still makes the
		// collector work harder near the worker's limit either way.
		gcAlone = workerGCAlone
	}
	// GOMAXPROCS is not set here: workers start with every core (or the
	// sidecar's GOMAXPROCS), and the pool tells each generation how many
	// of them to use (Pool.Procs, server.ProcsFor): all for a render alone,
	// one each in a burst.
	return &server.Pool{
		Command: func() *exec.Cmd {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = env
			return cmd
		},
		GCAlone: gcAlone,
		LockDir: cacheLockDir(),
		Size:    s.workers, Warm: s.warm, Deadline: s.deadline, RecycleAfter: s.recycleAfter,
		MaxMemory: s.maxMemory, TotalMemory: s.totalMemory,
		Stderr: stderr, Log: log, Metrics: metrics,
	}, nil
}

// cacheLockDir is the blob cache's lock directory as the workers' open
// files name it (server.Pool.LockDir); "" without an absolute cache
// directory.
func cacheLockDir() string {
	dir, err := cache.DefaultDir()
	if err != nil || !filepath.IsAbs(dir) {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	return cache.LockDir(dir)
}

// parseSize reads 512Mi, 512MiB, 1Gi, 1G (binary units), or bytes.
func parseSize(v string) (int64, error) {
	num := strings.TrimRight(v, "KMGTiBb")
	unit := strings.TrimSuffix(strings.TrimSuffix(v[len(num):], "B"), "i")
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("not a size")
	}
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
	sh, ok := shift[unit]
	if !ok || n > (1<<62)>>sh {
		return 0, errors.New("not a size")
	}
	return n << sh, nil
}

// containerMemoryLimit is the memory limit of this container's cgroup
// (v2, then v1), or 0 when there is none or it cannot be read.
func containerMemoryLimit() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && n > 0 && n < 1<<40 {
			return n
		}
	}
	return 0
}

// serveMetrics serves the counters in the Prometheus text format on a
// loopback address, at /metrics.
func serveMetrics(addr string, m *server.Metrics) (func(), error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = m.WriteText(w)
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(l) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}
