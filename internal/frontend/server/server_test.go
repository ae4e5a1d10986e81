package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// start serves h on a fresh socket until the test ends.
func start(t *testing.T, s *Server) string {
	t.Helper()
	sock := filepath.Join(shortTempDir(t), "r.sock")
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return sock
}

// shortTempDir keeps socket paths under the 108-byte sun_path limit.
func shortTempDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "srv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

var clientEnv = []string{"HOME=/home/argocd", "ARGOCD_APP_NAME=shop", "ARGOCD_ENV_VERSION=1.0.0", "PARAM_COMPONENT=x", "KUBE_VERSION=1.33.0", "PWD=/somewhere"}

func TestRoundTrip(t *testing.T) {
	var got *Request
	var sawEnv map[string]string
	s := &Server{
		Fingerprint: Fingerprint([]string{"HOME=/home/argocd"}),
		Handler: func(ctx context.Context, req *Request, stdout, stderr io.Writer) int {
			got = req
			getenv := req.Getenv(func(name string) string {
				if name == "HOME" {
					return "/srv/home"
				}
				return "sidecar:" + name
			})
			sawEnv = map[string]string{}
			for _, n := range []string{"ARGOCD_APP_NAME", "ARGOCD_ENV_VERSION", "PARAM_COMPONENT", "KUBE_VERSION", "ARGOCD_APP_NAMESPACE", "HOME"} {
				sawEnv[n] = getenv(n)
			}
			io.WriteString(stdout, strings.Repeat("kind: ConfigMap\n", 10000))
			io.WriteString(stderr, "note\n")
			return 3
		},
	}
	sock := start(t, s)
	res, err := Do(context.Background(), sock, NewRequest([]string{"generate"}, "/app", clientEnv))
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 3 || len(res.Stdout) != 160000 || string(res.Stderr) != "note\n" {
		t.Fatalf("result: exit %d, %d bytes stdout, stderr %q", res.Exit, len(res.Stdout), res.Stderr)
	}
	if got.Dir != "/app" || len(got.Args) != 1 || got.Args[0] != "generate" {
		t.Fatalf("request: %+v", got)
	}
	want := map[string]string{
		"ARGOCD_APP_NAME": "shop", "ARGOCD_ENV_VERSION": "1.0.0", "PARAM_COMPONENT": "x", "KUBE_VERSION": "1.33.0",
		"ARGOCD_APP_NAMESPACE": "", // request-scoped, not sent: unset, never the server's
		"HOME":                 "/srv/home",
	}
	for k, v := range want {
		if sawEnv[k] != v {
			t.Errorf("%s = %q, want %q", k, sawEnv[k], v)
		}
	}
	for _, kv := range got.Env {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "PWD=") {
			t.Errorf("sidecar-level variable sent with the request: %s", kv)
		}
	}
}

func TestFingerprint(t *testing.T) {
	base := Fingerprint([]string{"HOME=/h", "DOCKER_CONFIG=/d"})
	same := [][]string{
		{"DOCKER_CONFIG=/d", "HOME=/h"},                          // order
		{"HOME=/h", "DOCKER_CONFIG=/d", "ARGOCD_APP_NAME=a"},     // request-scoped
		{"HOME=/h", "DOCKER_CONFIG=/d", "PWD=/x", "SHLVL=2"},     // volatile
		{"HOME=/h", "DOCKER_CONFIG=/d", EnvSocket + "=/tmp/s"},   // the socket itself
		{"HOME=/h", "DOCKER_CONFIG=/d", "ARGOCD_ENV_HOME=/evil"}, // an Application's variable
		// What argocd-cmp-server sets in its own environment at start-up
		// (cli.SetLogFormat, cli.SetLogLevel), and its other settings.
		{"HOME=/h", "DOCKER_CONFIG=/d", "ARGOCD_LOG_FORMAT=text", "ARGOCD_LOG_LEVEL=info"},
		{"HOME=/h", "DOCKER_CONFIG=/d", "ARGOCD_CMP_WORKDIR=/tmp", "ARGOCD_PLUGINSOCKFILEPATH=/home/argocd/cmp-server/plugins"},
	}
	for _, env := range same {
		if got := Fingerprint(env); got != base {
			t.Errorf("Fingerprint(%q) differs", env)
		}
	}
	differ := [][]string{
		{"HOME=/h", "DOCKER_CONFIG=/other"},
		{"HOME=/h", "DOCKER_CONFIG=/d", "ARGOCD_OCM_SIGNATURE=acme"},
		{"HOME=/h", "DOCKER_CONFIG=/d", "ARGOCD_OCM_TIMEOUT=5s"},
		{"HOME=/h"},
	}
	for _, env := range differ {
		if Fingerprint(env) == base {
			t.Errorf("Fingerprint(%q) equals the base", env)
		}
	}
}

// The fingerprint leaves Argo CD's own settings out (argoCDOwn): that is
// sound only while the plugin reads none of them. Every "ARGOCD_..." literal
// of the product's code must be the plugin's own or request-scoped.
func TestPluginReadsNoArgoCDSetting(t *testing.T) {
	literal := regexp.MustCompile(`"(ARGOCD_[A-Z0-9_]*)`)
	seen := 0
	// The product: the root package, its public leaves, cmd/ and internal/.
	for _, dir := range []string{"../../..", "../../../errdef", "../../../ocm", "../../../signing", "../../../policy", "../../../cmd", "../../../internal"} {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && dir == "../../.." && p != dir {
				return filepath.SkipDir // the root package only; its folders are listed
			}
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range literal.FindAllStringSubmatch(string(b), -1) {
				seen++
				if m[1] != "ARGOCD_" && argoCDOwn(m[1]) {
					t.Errorf("%s reads %s, one of Argo CD's own settings, which Fingerprint leaves out", p, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen < 10 {
		t.Fatalf("found %d ARGOCD_ literals: the scan is broken", seen)
	}
}

// A client whose settings differ is refused, and the server's log names
// the variables that differ, never their values.
func TestRefusalNamesDifferingVariables(t *testing.T) {
	var logMu sync.Mutex
	var logBuf bytes.Buffer
	logText := func() string { logMu.Lock(); defer logMu.Unlock(); return logBuf.String() }
	metrics := NewMetrics()
	s := &Server{Log: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logBuf}, nil)), Metrics: metrics,
		Handler: func(context.Context, *Request, io.Writer, io.Writer) int { return 0 }}
	sock := start(t, s)
	env := append(os.Environ(), "ARGOCD_OCM_REGISTRY_PASSWORD=s3cr3t-value", "ARGOCD_LOG_FORMAT=json")
	if _, err := Do(context.Background(), sock, NewRequest([]string{"generate"}, "/app", env)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	log := logText()
	if !strings.Contains(log, "variables=ARGOCD_OCM_REGISTRY_PASSWORD") || strings.Contains(log, "s3cr3t") || strings.Contains(log, "ARGOCD_LOG_FORMAT") {
		t.Errorf("log should name ARGOCD_OCM_REGISTRY_PASSWORD only, without its value:\n%s", log)
	}
	var text bytes.Buffer
	if err := metrics.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), `argocd_ocm_requests_refused_total{reason="environment"} 1`) {
		t.Errorf("refusal not counted:\n%s", text.String())
	}
	// The same client with the server's environment plus what
	// argocd-cmp-server adds is served.
	if _, err := Do(context.Background(), sock, NewRequest([]string{"generate"}, "/app", append(os.Environ(), "ARGOCD_LOG_FORMAT=json", "ARGOCD_LOG_LEVEL=debug"))); err != nil {
		t.Fatalf("a client with Argo CD's log settings was refused: %v\n%s", err, logText())
	}
}

func TestRefusals(t *testing.T) {
	var ran atomic.Int32
	s := &Server{Fingerprint: Fingerprint([]string{"HOME=/home/argocd"}), Handler: func(context.Context, *Request, io.Writer, io.Writer) int {
		ran.Add(1)
		return 0
	}}
	sock := start(t, s)
	for name, req := range map[string]*Request{
		"other environment": NewRequest([]string{"generate"}, "/app", []string{"HOME=/root"}),
		"other protocol":    {Protocol: ProtocolVersion + 1, Fingerprint: s.Fingerprint},
	} {
		_, err := Do(context.Background(), sock, req)
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: err = %v, want ErrUnavailable", name, err)
		}
	}
	if _, err := Do(context.Background(), filepath.Join(t.TempDir(), "none.sock"), NewRequest(nil, "/", nil)); !errors.Is(err, ErrUnavailable) {
		t.Errorf("no server: err = %v", err)
	}
	if ran.Load() != 0 {
		t.Fatalf("handler ran %d times for refused requests", ran.Load())
	}
}

// Hostile and broken clients must not take the server down or reach the handler.
func TestMalformedRequests(t *testing.T) {
	var ran atomic.Int32
	s := &Server{Fingerprint: "fp", Handler: func(context.Context, *Request, io.Writer, io.Writer) int { ran.Add(1); return 0 }}
	sock := start(t, s)
	for name, payload := range map[string]string{
		"not json":        "hello\n",
		"empty line":      "\n",
		"no newline, EOF": `{"protocol":1`,
		"huge line":       strings.Repeat("x", MaxRequestSize+10) + "\n",
		"wrong types":     `{"protocol":"1","args":7}` + "\n",
	} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		go func() { io.WriteString(c, payload); c.(*net.UnixConn).CloseWrite() }()
		b, _ := io.ReadAll(c)
		c.Close()
		if len(b) != 0 {
			t.Errorf("%s: answered %q", name, b)
		}
	}
	// Still serving.
	req := &Request{Protocol: ProtocolVersion, Fingerprint: "fp", Args: []string{"generate"}}
	if res, err := Do(context.Background(), sock, req); err != nil || res.Exit != 0 {
		t.Fatalf("after malformed requests: %v", err)
	}
	if ran.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", ran.Load())
	}
}

func TestPanicIsAFailedCommand(t *testing.T) {
	s := &Server{Fingerprint: "fp", Handler: func(_ context.Context, req *Request, stdout, _ io.Writer) int {
		io.WriteString(stdout, "kind: Partial\n")
		if req.Args[0] == "boom" {
			panic("nil map")
		}
		return 0
	}}
	sock := start(t, s)
	env := []string{"ARGOCD_APP_NAME=shop"}
	req := &Request{Protocol: ProtocolVersion, Fingerprint: "fp", Args: []string{"boom"}, Env: env}
	res, err := Do(context.Background(), sock, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit == 0 || len(res.Stdout) != 0 || !strings.Contains(string(res.Stderr), "application shop: internal error") {
		t.Fatalf("panic: exit %d, stdout %q, stderr %q", res.Exit, res.Stdout, res.Stderr)
	}
	req.Args = []string{"ok"}
	if res, err := Do(context.Background(), sock, req); err != nil || res.Exit != 0 {
		t.Fatalf("after a panic: %v", err)
	}
}

// A client that goes away (killed at Argo CD's deadline) cancels its command.
func TestClientGoneCancels(t *testing.T) {
	started := make(chan struct{})
	canceled := make(chan struct{})
	s := &Server{Fingerprint: "fp", Handler: func(ctx context.Context, _ *Request, _, _ io.Writer) int {
		close(started)
		select {
		case <-ctx.Done():
			close(canceled)
		case <-time.After(10 * time.Second):
		}
		return 0
	}}
	sock := start(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := Do(ctx, sock, &Request{Protocol: ProtocolVersion, Fingerprint: "fp", Args: []string{"generate"}})
		errc <- err
	}()
	<-started
	cancel()
	// Accepted, then given up by the client: lost, not to be run again.
	if err := <-errc; !errors.Is(err, ErrLost) {
		t.Fatalf("err = %v", err)
	}
	select {
	case <-canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the command was not canceled when its client went away")
	}
}

// Parallelism bounds running commands; the rest wait and all complete.
func TestParallelism(t *testing.T) {
	var running, peak atomic.Int32
	s := &Server{Fingerprint: "fp", Parallelism: 2, Handler: func(_ context.Context, req *Request, stdout, _ io.Writer) int {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		fmt.Fprint(stdout, req.Dir)
		return 0
	}}
	sock := start(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := fmt.Sprintf("/app-%d", i)
			res, err := Do(context.Background(), sock, &Request{Protocol: ProtocolVersion, Fingerprint: "fp", Args: []string{"generate"}, Dir: dir})
			if err == nil && string(res.Stdout) != dir {
				err = fmt.Errorf("got %q for %s", res.Stdout, dir)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if p := peak.Load(); p > 2 {
		t.Fatalf("%d commands ran at once, parallelism is 2", p)
	}
}

// Shutting down lets a running command finish and deliver its result.
func TestDrain(t *testing.T) {
	started := make(chan struct{})
	s := &Server{Fingerprint: "fp", Handler: func(ctx context.Context, _ *Request, stdout, _ io.Writer) int {
		close(started)
		time.Sleep(100 * time.Millisecond)
		if ctx.Err() != nil {
			return 9
		}
		io.WriteString(stdout, "done")
		return 0
	}}
	sock := filepath.Join(shortTempDir(t), "r.sock")
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l) }()
	resc := make(chan *Result, 1)
	go func() {
		res, err := Do(context.Background(), sock, &Request{Protocol: ProtocolVersion, Fingerprint: "fp", Args: []string{"generate"}})
		if err != nil {
			t.Error(err)
		}
		resc <- res
	}()
	<-started
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if res := <-resc; res == nil || res.Exit != 0 || string(res.Stdout) != "done" {
		t.Fatalf("drained command: %+v", res)
	}
	if _, err := Do(context.Background(), sock, &Request{Protocol: ProtocolVersion, Fingerprint: "fp"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("after shutdown: %v", err)
	}
}

func TestListen(t *testing.T) {
	dir := filepath.Join(shortTempDir(t), "sub")
	sock := filepath.Join(dir, "r.sock")
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, sock: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", p, fi.Mode().Perm(), want)
		}
	}
	if _, err := Listen(sock); err == nil || !strings.Contains(err.Error(), "another server") {
		t.Errorf("second Listen on a live socket: %v", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // leaves a stale socket file behind
	l2, err := Listen(sock)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	l2.Close()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o600)
	if _, err := Listen(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen over a regular file: %v", err)
	}
}

func TestReadLineLimit(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("a", 100)+"\n"), 16)
	if _, err := readLine(r, 50); err == nil {
		t.Fatal("a line over the limit was accepted")
	}
	r = bufio.NewReaderSize(strings.NewReader(strings.Repeat("a", 100)+"\n"), 16)
	if b, err := readLine(r, 100); err != nil || len(b) != 100 {
		t.Fatalf("readLine: %d bytes, %v", len(b), err)
	}
}

// After a burst of work the server returns freed memory once idle, not while
// commands run.
func TestReleaseMemoryWhenIdle(t *testing.T) {
	block, started := make(chan struct{}), make(chan struct{})
	s := &Server{Fingerprint: "fp", ReleaseMemoryAfter: 50 * time.Millisecond, Handler: func(_ context.Context, req *Request, _, _ io.Writer) int {
		if req.Args[0] == "slow" {
			close(started)
			<-block
		}
		return 0
	}}
	sock := start(t, s)
	do := func(arg string) {
		if _, err := Do(context.Background(), sock, &Request{Protocol: ProtocolVersion, Fingerprint: "fp", Args: []string{arg}}); err != nil {
			t.Error(err)
		}
	}
	go do("slow")
	<-started
	do("fast")
	time.Sleep(200 * time.Millisecond)
	if n := s.releases.Load(); n != 0 {
		t.Fatalf("memory released %d times while a command was running", n)
	}
	close(block)
	deadline := time.Now().Add(5 * time.Second)
	for s.releases.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := s.releases.Load(); n != 1 {
		t.Fatalf("memory released %d times after going idle, want 1", n)
	}
}

// The job header between supervisor and worker grows by optional fields: a
// header without procs (an older supervisor) reads as 0 (the worker keeps
// its GOMAXPROCS), one with a field the worker does not know still reads.
func TestJobHeaderCompatible(t *testing.T) {
	raw := []byte(`{"protocol":2,"args":["generate"],"dir":"/app"}`)
	deadline := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	if err := writeJob(&buf, jobHeader{Deadline: deadline, Procs: 2}, raw); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"procs":2`) {
		t.Fatalf("job header without procs: %q", buf.String())
	}
	for _, c := range []struct {
		name, wire string
		procs      int
	}{
		{"current", buf.String(), 2},
		{"without procs", `{"deadline":"2026-12-01T15:00:00Z"}` + "\n" + string(raw) + "\n", 0},
		{"unknown field", `{"deadline":"2026-12-01T15:00:00Z","procs":1,"later":true}` + "\n" + string(raw) + "\n", 1},
	} {
		req, h, err := readJob(bufio.NewReader(strings.NewReader(c.wire)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if h.Procs != c.procs || !req.Deadline.Equal(deadline) || req.Dir != "/app" {
			t.Errorf("%s: procs %d deadline %v dir %q, want %d %v /app", c.name, h.Procs, req.Deadline, req.Dir, c.procs, deadline)
		}
	}
}

// countingWrites records each Write it gets.
type countingWrites struct {
	bytes.Buffer
	writes int
}

func (c *countingWrites) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}

// A usual request reaches its worker in one write with its header; a
// large one in three, not copied; the worker reads both the same.
func TestWriteJobJoined(t *testing.T) {
	for _, c := range []struct {
		size, writes int
	}{{1 << 10, 1}, {maxJoinedJob + 1, 3}} {
		raw := fmt.Appendf(nil, `{"protocol":2,"args":["generate"],"dir":"/app","env":["ARGOCD_APP_PARAMETERS=%s"]}`, strings.Repeat("x", c.size))
		var w countingWrites
		if err := writeJob(&w, jobHeader{Procs: 1}, raw); err != nil {
			t.Fatal(err)
		}
		if w.writes != c.writes {
			t.Errorf("request of %d bytes: %d writes, want %d", len(raw), w.writes, c.writes)
		}
		req, h, err := readJob(bufio.NewReader(&w.Buffer))
		if err != nil || h.Procs != 1 || req.Dir != "/app" || len(req.Env) != 1 || len(req.Env[0]) != len("ARGOCD_APP_PARAMETERS=")+c.size {
			t.Fatalf("request of %d bytes read back: %v %+v", len(raw), err, h)
		}
	}
}

// resultConn is a net.Conn that records what streamResult writes.
type resultConn struct {
	net.Conn
	countingWrites
}

func (c *resultConn) Write(p []byte) (int, error)      { return c.countingWrites.Write(p) }
func (c *resultConn) SetWriteDeadline(time.Time) error { return nil }

// A small result is one write, header and output; a large one arrives
// whole, in buffer-sized writes; one cut short ends with the reader's
// error after what was read, which the client reads as a lost result.
func TestStreamResult(t *testing.T) {
	for _, size := range []int{0, 100, 32 << 10, 200 << 10} {
		out := bytes.Repeat([]byte("y"), size)
		var c resultConn
		if err := streamResult(&c, 0, size, 1, &bodyReader{r: bytes.NewReader(append(out, 'e')), left: int64(size) + 1}); err != nil {
			t.Fatal(err)
		}
		if want := 1 + (size+64)/(32<<10); size < 32<<10 && c.writes != 1 || c.writes > want {
			t.Errorf("result of %d bytes: %d writes", size, c.writes)
		}
		res, refused, err := readResult(bufio.NewReader(&c.Buffer))
		if err != nil || refused != "" || !bytes.Equal(res.Stdout, out) || string(res.Stderr) != "e" {
			t.Fatalf("result of %d bytes read back: %v %q, %d bytes", size, err, refused, len(res.Stdout))
		}
	}
	var c resultConn
	cut := &bodyReader{r: strings.NewReader("short"), left: 100}
	if err := streamResult(&c, 0, 100, 0, cut); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("body cut short: %v", err)
	}
	if _, _, err := readResult(bufio.NewReader(&c.Buffer)); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("client reading a cut result: %v", err)
	}
}
