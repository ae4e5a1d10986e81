package argocdocm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// Fault tolerance (issue 8, item 5): registry 5xx, connections reset in the
// middle of a blob, responses slower than the deadline, cache directories
// that cannot be written or fill up, several processes sharing one cache.
// Each fault gives the exact manifests or a clear error, never a partial
// stream: Render returns objects or an error, never both.
//
// The faults are injected by a proxy in front of an in-process registry
// (the proxy owns its connections, so it can reset them mid-body).

// faultProxy forwards to a registry and injects the current fault into
// requests for the chart blob.
type faultProxy struct {
	*httptest.Server
	host  string
	chart string // digest of the chart blob ("sha256:…")

	fault      atomic.Value // func(w http.ResponseWriter, r *http.Request) bool; true: handled
	chartGets  atomic.Int32 // GETs of the chart blob that reached the proxy
	chart5xx   atomic.Int32
	chartReset atomic.Int32
}

func (p *faultProxy) set(f func(w http.ResponseWriter, r *http.Request) bool) { p.fault.Store(f) }

func (p *faultProxy) isChart(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+p.chart)
}

type faultEnv struct {
	comps []*ocmbuild.Component
	reg   *registrytest.Registry
	proxy *faultProxy
	want  []manifests.Object // podinfo 1.0.0 rendered from a CTF
	chart []byte             // the chart blob
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	comps, err := examples.Demo("testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	ctfDir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(ctfDir, comps...); err != nil {
		t.Fatal(err)
	}
	want, err := (&argocdocm.Renderer{}).Render(context.Background(), faultRequest(ctfDir))
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	reg.Push(t, "ocm", comps...)
	chart := comps[0].Resources[0].Data
	target, _ := url.Parse(reg.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = nil
	p := &faultProxy{chart: blob.Digest(chart)}
	p.set(func(http.ResponseWriter, *http.Request) bool { return false })
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.isChart(r) {
			p.chartGets.Add(1)
		}
		if f := p.fault.Load().(func(http.ResponseWriter, *http.Request) bool); f(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	p.host = strings.TrimPrefix(p.URL, "http://")
	return &faultEnv{comps: comps, reg: reg, proxy: p, want: want.Objects, chart: chart}
}

func faultRequest(repo string) argocdocm.Request {
	return argocdocm.Request{Application: "shop", Repository: repo, Component: examples.Podinfo, Version: "1.0.0", ReleaseName: "demo", Namespace: "demo"}
}

func (e *faultEnv) repo() string { return "http://" + e.proxy.host + "/ocm" }

// faultRenderer renders from the proxy with quick retries and the given cache.
func faultRenderer(t testing.TB, c *cache.Cache, extra ...oci.Option) *argocdocm.Renderer {
	t.Helper()
	opts := append([]oci.Option{oci.WithCache(c), oci.WithRegistryOptions(registry.WithoutDockerConfig(),
		registry.WithEnv(func(string) (string, bool) { return "", false }), registry.WithBackoff(5*time.Millisecond, 20*time.Millisecond))}, extra...)
	src, err := resolve.NewSource(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return argocdocm.NewSourceRenderer(src)
}

// outcome checks the rule for every fault: the exact manifests, or an error
// and no result. It returns the error.
func (e *faultEnv) outcome(t *testing.T, res *argocdocm.Result, err error) error {
	t.Helper()
	if err != nil {
		if res != nil {
			t.Errorf("error %v came with %d objects", err, len(res.Objects))
		}
		if strings.ContainsAny(err.Error(), "\r\n") {
			t.Errorf("message is not one line: %q", err)
		}
		return err
	}
	manifeststest.Equal(t, res.Objects, e.want)
	return nil
}

func mentions(t *testing.T, err error, subs ...string) {
	t.Helper()
	if testing.Verbose() {
		t.Log(err)
	}
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not mention %q", err, s)
		}
	}
}

// status answers the chart blob with code, n times (n < 0: always).
func (p *faultProxy) status(code, n int) func(http.ResponseWriter, *http.Request) bool {
	var left atomic.Int32
	left.Store(int32(n))
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !p.isChart(r) || (n >= 0 && left.Add(-1) < 0) {
			return false
		}
		p.chart5xx.Add(1)
		w.WriteHeader(code)
		return true
	}
}

// reset answers the chart blob with 200, its headers and the first half of
// the body, then resets the connection (SO_LINGER 0: RST), n times (n < 0:
// always).
func (p *faultProxy) reset(body []byte, n int) func(http.ResponseWriter, *http.Request) bool {
	var left atomic.Int32
	left.Store(int32(n))
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !p.isChart(r) || (n >= 0 && left.Add(-1) < 0) {
			return false
		}
		p.chartReset.Add(1)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\nDocker-Content-Digest: %s\r\n\r\n", len(body), p.chart)
		buf.Write(body[:len(body)/2])
		buf.Flush()
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
		return true
	}
}

// slow holds every chart blob request until the client gives up.
func (p *faultProxy) slow() func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !p.isChart(r) {
			return false
		}
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		return true
	}
}

// trickle answers the chart blob at one byte per 100 ms.
func (p *faultProxy) trickle(body []byte) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !p.isChart(r) {
			return false
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Header().Set("Docker-Content-Digest", p.chart)
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		for i := range body {
			if _, err := w.Write(body[i : i+1]); err != nil {
				return true
			}
			rc.Flush()
			select {
			case <-r.Context().Done():
				return true
			case <-time.After(100 * time.Millisecond):
			}
		}
		return true
	}
}

func TestRegistryFaults(t *testing.T) {
	e := newFaultEnv(t)
	p := e.proxy
	chartRepo := "repository ocm/component-descriptors/" + examples.Podinfo
	render := func(t *testing.T, ctx context.Context, r *argocdocm.Renderer) error {
		t.Helper()
		res, err := r.Render(ctx, faultRequest(e.repo()))
		return e.outcome(t, res, err)
	}
	clean := func() {
		p.set(func(http.ResponseWriter, *http.Request) bool { return false })
		p.chartGets.Store(0)
		p.chart5xx.Store(0)
		p.chartReset.Store(0)
	}

	t.Run("transient 503 is retried", func(t *testing.T) {
		defer clean()
		p.set(p.status(http.StatusServiceUnavailable, 2))
		if err := render(t, context.Background(), faultRenderer(t, cache.Open(t.TempDir()))); err != nil {
			t.Fatal(err)
		}
		if p.chart5xx.Load() != 2 || p.chartGets.Load() != 3 {
			t.Errorf("chart blob: %d requests, %d answered 503; want 3 and 2", p.chartGets.Load(), p.chart5xx.Load())
		}
	})
	t.Run("persistent 502", func(t *testing.T) {
		defer clean()
		p.set(p.status(http.StatusBadGateway, -1))
		err := render(t, context.Background(), faultRenderer(t, cache.Open(t.TempDir())))
		mentions(t, err, "application shop", examples.Podinfo+":1.0.0", "resource chart", "registry "+p.host, chartRepo, p.chart, "HTTP 502")
		if n := p.chartGets.Load(); n != registry.DefaultRetries+1 {
			t.Errorf("%d attempts, want %d", n, registry.DefaultRetries+1)
		}
	})
	t.Run("persistent 500 on every request", func(t *testing.T) {
		defer clean()
		p.set(func(w http.ResponseWriter, r *http.Request) bool {
			w.WriteHeader(http.StatusInternalServerError)
			return true
		})
		err := render(t, context.Background(), faultRenderer(t, cache.Open(t.TempDir())))
		mentions(t, err, "registry "+p.host, chartRepo, "HTTP 500")
	})
	t.Run("connection reset mid-blob, once, is resumed", func(t *testing.T) {
		defer clean()
		p.set(p.reset(e.chart, 1))
		dir := t.TempDir()
		if err := render(t, context.Background(), faultRenderer(t, cache.Open(dir))); err != nil {
			t.Fatal(err)
		}
		if p.chartReset.Load() != 1 || p.chartGets.Load() != 2 {
			t.Errorf("%d resets, %d requests of the chart blob; want 1 and 2", p.chartReset.Load(), p.chartGets.Load())
		}
		assertNoTemps(t, dir)
	})
	t.Run("connection reset mid-blob, once, no cache", func(t *testing.T) {
		defer clean()
		p.set(p.reset(e.chart, 1))
		if err := render(t, context.Background(), faultRenderer(t, cache.Disabled())); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("resumed after a reset, but the first bytes were wrong", func(t *testing.T) {
		defer clean()
		bad := append([]byte(nil), e.chart...)
		bad[len(bad)/4] ^= 0xff // in the half served before the reset
		p.set(p.reset(bad, 1))
		dir := t.TempDir()
		err := render(t, context.Background(), faultRenderer(t, cache.Open(dir)))
		mentions(t, err, "resource chart", p.chart)
		if !errors.Is(err, errdef.ErrDigestMismatch) {
			t.Errorf("%v is not a digest mismatch", err)
		}
		if f, ok := cache.Open(dir).Get(p.chart, -1); ok {
			f.Close()
			t.Error("a corrupt blob is in the cache")
		}
	})
	t.Run("connection reset mid-blob, always", func(t *testing.T) {
		defer clean()
		p.set(p.reset(e.chart, -1))
		dir := t.TempDir()
		err := render(t, context.Background(), faultRenderer(t, cache.Open(dir)))
		mentions(t, err, "resource chart", "registry "+p.host, chartRepo, p.chart, "fetch blob: read", "connection reset by peer")
		if n := p.chartGets.Load(); n != registry.DefaultRetries+1 {
			t.Errorf("%d attempts, want %d", n, registry.DefaultRetries+1)
		}
		if f, ok := cache.Open(dir).Get(p.chart, -1); ok {
			f.Close()
			t.Error("a cut-off blob is in the cache")
		}
		assertNoTemps(t, dir)
		// Once the registry behaves, the same cache renders exactly.
		clean()
		if err := render(t, context.Background(), faultRenderer(t, cache.Open(dir))); err != nil {
			t.Fatalf("render after the resets: %v", err)
		}
		if f, ok := cache.Open(dir).Get(p.chart, int64(len(e.chart))); !ok {
			t.Error("the chart is not cached after a clean download")
		} else {
			f.Close()
		}
	})
	t.Run("connection reset mid-blob, no cache", func(t *testing.T) {
		defer clean()
		p.set(p.reset(e.chart, -1))
		err := render(t, context.Background(), faultRenderer(t, cache.Disabled()))
		mentions(t, err, "resource chart", "registry "+p.host, p.chart, "connection reset by peer")
	})
	t.Run("no answer within the deadline", func(t *testing.T) {
		defer clean()
		p.set(p.slow())
		// 2s: room for the unfaulted descriptor fetch on a loaded machine.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		err := render(t, ctx, faultRenderer(t, cache.Open(t.TempDir())))
		if el := time.Since(start); el > 7*time.Second {
			t.Errorf("took %v after a 2s deadline", el)
		}
		mentions(t, err, "resource chart", "registry "+p.host, "timed out")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%v is not context.DeadlineExceeded", err)
		}
	})
	t.Run("body slower than the deadline", func(t *testing.T) {
		defer clean()
		p.set(p.trickle(e.chart))
		// 2s: room for the unfaulted descriptor fetch on a loaded machine.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		err := render(t, ctx, faultRenderer(t, cache.Open(t.TempDir())))
		if el := time.Since(start); el > 7*time.Second {
			t.Errorf("took %v after a 2s deadline", el)
		}
		mentions(t, err, "resource chart", "registry "+p.host, p.chart, "timed out")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%v is not context.DeadlineExceeded", err)
		}
	})
	t.Run("no answer within the per-operation timeout", func(t *testing.T) {
		defer clean()
		p.set(p.slow())
		start := time.Now()
		err := render(t, context.Background(), faultRenderer(t, cache.Open(t.TempDir()), oci.WithTimeout(1500*time.Millisecond)))
		if el := time.Since(start); el > 7*time.Second {
			t.Errorf("took %v after a 1.5s timeout", el)
		}
		mentions(t, err, "resource chart", "registry "+p.host, "timed out")
	})
}

func assertNoTemps(t *testing.T, cacheDir string) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(cacheDir, "tmp"))
	if len(ents) != 0 {
		t.Errorf("temporary files left in the cache: %v", ents)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A cache that cannot be written degrades to downloading without caching,
// with one warning; the render is exact. Tests run as root, for whom mode
// 0555 does not make a directory read-only; unwritable is simulated with a
// path under a regular file (ENOTDIR) and with a cache whose tmp directory
// is replaced by a file after it opened, so that every write fails as on a
// read-only file system. Mode 0555 is checked when not running as root.
func TestUnwritableCache(t *testing.T) {
	e := newFaultEnv(t)
	render := func(t *testing.T, c *cache.Cache) {
		t.Helper()
		res, err := faultRenderer(t, c).Render(context.Background(), faultRequest(e.repo()))
		if err := e.outcome(t, res, err); err != nil {
			t.Fatal(err)
		}
	}
	logger := func() (*slog.Logger, *syncBuf) {
		b := &syncBuf{}
		return slog.New(slog.NewTextHandler(b, nil)), b
	}

	t.Run("under a regular file (ENOTDIR)", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		os.WriteFile(file, nil, 0o644)
		l, logs := logger()
		c := cache.Open(filepath.Join(file, "cache"), cache.WithLogger(l))
		render(t, c)
		if c.Enabled() || !strings.Contains(logs.String(), "blob cache disabled") || !strings.Contains(logs.String(), "not a directory") {
			t.Errorf("enabled=%v, logs %q", c.Enabled(), logs)
		}
	})
	t.Run("writes fail after opening", func(t *testing.T) {
		dir := t.TempDir()
		l, logs := logger()
		c := cache.Open(dir, cache.WithLogger(l))
		os.RemoveAll(filepath.Join(dir, "tmp"))
		os.WriteFile(filepath.Join(dir, "tmp"), nil, 0o444)
		render(t, c)
		if c.Enabled() || strings.Count(logs.String(), "blob cache disabled") != 1 {
			t.Errorf("enabled=%v, logs %q", c.Enabled(), logs)
		}
	})
	t.Run("mode 0555", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into mode 0555 directories; covered by the two cases above")
		}
		dir := t.TempDir()
		os.Chmod(dir, 0o555)
		defer os.Chmod(dir, 0o755)
		l, logs := logger()
		c := cache.Open(filepath.Join(dir, "cache"), cache.WithLogger(l))
		render(t, c)
		if c.Enabled() || !strings.Contains(logs.String(), "blob cache disabled") {
			t.Errorf("enabled=%v, logs %q", c.Enabled(), logs)
		}
	})
	t.Run("full: over its size cap", func(t *testing.T) {
		dir := t.TempDir()
		c := cache.Open(dir, cache.WithMaxSize(int64(len(e.chart)/2)))
		render(t, c)
		render(t, c)
		if f, ok := c.Get(e.proxy.chart, -1); ok {
			f.Close()
			t.Error("a blob larger than the cap was cached")
		}
		if n := c.Prune(); n > int64(len(e.chart)/2) {
			t.Errorf("cache holds %d bytes, cap %d", n, len(e.chart)/2)
		}
	})
}

// helperEnv selects what TestFaultHelperProcess does in a re-executed test binary.
const helperEnv = "PIPELINE_FAULT_HELPER"

// TestFaultHelperProcess renders podinfo 1.0.0 from REG_REPO with the cache
// in CACHE_DIR and prints the manifests (or "ERR <error>", exit 1). With
// PIPELINE_FAULT_HELPER=fsize, files may grow to 1 KiB at most
// (RLIMIT_FSIZE): every cache write of a blob fails as on a full disk.
func TestFaultHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process of the cross-process fault tests")
	}
	if mode == "fsize" {
		signal.Ignore(syscall.SIGXFSZ)
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 1 << 10, Max: 1 << 10}); err != nil {
			fmt.Println("ERR setrlimit", err)
			os.Exit(1)
		}
	}
	logs := &syncBuf{}
	c := cache.Open(os.Getenv("CACHE_DIR"), cache.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	res, err := faultRenderer(t, c).Render(context.Background(), faultRequest(os.Getenv("REG_REPO")))
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	var out bytes.Buffer
	manifests.Encode(&out, res.Objects)
	fmt.Fprintf(os.Stderr, "cache enabled=%v\n%s", c.Enabled(), logs)
	os.Stdout.Write(out.Bytes())
	os.Exit(0)
}

func helperCmd(t *testing.T, mode, repo, cacheDir string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "REG_REPO="+repo, "CACHE_DIR="+cacheDir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

// A full disk (here: RLIMIT_FSIZE, so that no file can grow past 1 KiB and
// the chart blob cannot be written) degrades the cache; the render is exact.
func TestFullDiskCache(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	e := newFaultEnv(t)
	var want bytes.Buffer
	manifests.Encode(&want, e.want)
	cmd, stdout, stderr := helperCmd(t, "fsize", e.repo(), t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s %s", err, stdout, stderr)
	}
	if stdout.String() != want.String() {
		t.Fatalf("output differs:\n%s\nwant:\n%s", stdout, want.String())
	}
	if !strings.Contains(stderr.String(), "cache enabled=false") || !strings.Contains(stderr.String(), "file too large") {
		t.Errorf("the cache did not degrade on the failed write: %s", stderr)
	}
}

// Several processes render at once against one cache directory and one
// (slow) registry: all succeed with identical output, and the chart blob is
// downloaded once (the others wait for the cache lock).
func TestConcurrentProcessesShareTheCache(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	e := newFaultEnv(t)
	p := e.proxy
	p.set(func(w http.ResponseWriter, r *http.Request) bool {
		if p.isChart(r) {
			time.Sleep(300 * time.Millisecond) // keep the download in flight while the others start
		}
		return false
	})
	var want bytes.Buffer
	manifests.Encode(&want, e.want)
	cacheDir := t.TempDir()
	const n = 4
	type proc struct {
		cmd            *exec.Cmd
		stdout, stderr *bytes.Buffer
	}
	var procs []proc
	for i := 0; i < n; i++ {
		cmd, o, er := helperCmd(t, "render", e.repo(), cacheDir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, proc{cmd, o, er})
	}
	for i, pr := range procs {
		if err := pr.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v: %s %s", i, err, pr.stdout, pr.stderr)
		}
		if pr.stdout.String() != want.String() {
			t.Errorf("process %d: output differs:\n%s", i, pr.stdout)
		}
	}
	t.Logf("%d processes: chart blob requested %d time(s)", n, p.chartGets.Load())
	if g := p.chartGets.Load(); g != 1 {
		t.Errorf("chart blob downloaded %d times, want 1", g)
	}
	assertNoTemps(t, cacheDir)
}
