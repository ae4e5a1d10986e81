package cache

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func newLogger() (*slog.Logger, *logBuf) {
	lb := &logBuf{}
	return slog.New(slog.NewTextHandler(lb, nil)), lb
}

func randomBlob(t testing.TB, n int) ([]byte, string) {
	b := make([]byte, n)
	rand.Read(b)
	return b, blob.Digest(b)
}

// source counts how often content is fetched.
type source struct {
	data  []byte
	calls atomic.Int32
	delay time.Duration
}

func (s *source) fetch(ctx context.Context) (io.ReadCloser, error) {
	s.calls.Add(1)
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	return io.NopCloser(bytes.NewReader(s.data)), nil
}

func readAll(t testing.TB) func(io.ReadCloser, error) []byte {
	return func(rc io.ReadCloser, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func TestFetchColdWarm(t *testing.T) {
	ctx := context.Background()
	c := Open(t.TempDir())
	if !c.Enabled() {
		t.Fatal("cache disabled")
	}
	data, d := randomBlob(t, 100_000)
	src := &source{data: data}
	for i := 0; i < 3; i++ {
		got := readAll(t)(c.Fetch(ctx, d, int64(len(data)), src.fetch))
		if !bytes.Equal(got, data) {
			t.Fatal("content differs")
		}
	}
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("fetched %d times, want 1", n)
	}
	p, _ := c.Path(d)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("entry not at %s: %v", p, err)
	}
	// A second Cache on the same directory (another process) finds it.
	src2 := &source{data: data}
	readAll(t)(Open(c.Dir()).Fetch(ctx, d, -1, src2.fetch))
	if src2.calls.Load() != 0 {
		t.Fatal("shared directory not used")
	}
}

func TestFetchConcurrentGoroutines(t *testing.T) {
	ctx := context.Background()
	c := Open(t.TempDir())
	data, d := randomBlob(t, 1<<20)
	src := &source{data: data, delay: 50 * time.Millisecond}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc, err := c.Fetch(ctx, d, int64(len(data)), src.fetch)
			if err != nil {
				errs <- err
				return
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err == nil && !bytes.Equal(b, data) {
				err = errors.New("content differs")
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("16 goroutines downloaded %d times, want 1", n)
	}
}

func TestWrongContentIsNotCached(t *testing.T) {
	ctx := context.Background()
	c := Open(t.TempDir())
	_, d := randomBlob(t, 100)
	bad := &source{data: []byte("not the content")}
	rc, err := c.Fetch(ctx, d, -1, bad.fetch)
	if err == nil {
		rc.Close()
	}
	if !errors.Is(err, errdef.ErrDigestMismatch) {
		t.Fatalf("got %v, want ErrDigestMismatch", err)
	}
	if _, ok := c.Get(d, -1); ok {
		t.Fatal("mismatching content was cached")
	}
	ents, _ := os.ReadDir(filepath.Join(c.Dir(), "tmp"))
	if len(ents) != 0 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func TestCorruptEntryRepaired(t *testing.T) {
	ctx := context.Background()
	for name, corrupt := range map[string]func(p string, data []byte){
		"flipped byte": func(p string, data []byte) {
			b := append([]byte(nil), data...)
			b[len(b)/2] ^= 0xff
			os.WriteFile(p, b, 0o644)
		},
		"truncated": func(p string, data []byte) { os.WriteFile(p, data[:len(data)/2], 0o644) },
		"empty":     func(p string, _ []byte) { os.WriteFile(p, nil, 0o644) },
		"directory": func(p string, _ []byte) { os.Remove(p); os.Mkdir(p, 0o755) },
	} {
		t.Run(name, func(t *testing.T) {
			log, lb := newLogger()
			c := Open(t.TempDir(), WithLogger(log))
			data, d := randomBlob(t, 10_000)
			src := &source{data: data}
			readAll(t)(c.Fetch(ctx, d, int64(len(data)), src.fetch))
			p, _ := c.Path(d)
			corrupt(p, data)
			got := readAll(t)(c.Fetch(ctx, d, -1, src.fetch))
			if !bytes.Equal(got, data) {
				t.Fatal("corrupt content handed out")
			}
			if src.calls.Load() != 2 {
				t.Fatalf("fetched %d times, want 2 (repair)", src.calls.Load())
			}
			if name != "directory" && !strings.Contains(lb.String(), "corrupt") {
				t.Errorf("no warning: %s", lb)
			}
			if f, ok := c.Get(d, int64(len(data))); !ok {
				t.Fatal("entry not repaired")
			} else {
				f.Close()
			}
		})
	}
}

func TestStaleTempRemoved(t *testing.T) {
	ctx := context.Background()
	c := Open(t.TempDir())
	data, d := randomBlob(t, 1000)
	alg, h, _ := parse(d)
	stale := filepath.Join(c.Dir(), "tmp", alg+"-"+h+".123456")
	os.WriteFile(stale, data[:100], 0o644)
	readAll(t)(c.Fetch(ctx, d, -1, (&source{data: data}).fetch))
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale temporary file kept: %v", err)
	}
}

func TestEviction(t *testing.T) {
	ctx := context.Background()
	c := Open(t.TempDir(), WithMaxSize(3500))
	var ds []string
	for i := 0; i < 3; i++ {
		data, d := randomBlob(t, 1000)
		readAll(t)(c.Fetch(ctx, d, -1, (&source{data: data}).fetch))
		ds = append(ds, d)
		// Age entries: 0 oldest.
		p, _ := c.Path(d)
		old := time.Now().Add(-time.Duration(10-i) * time.Hour)
		os.Chtimes(p, old, old)
	}
	// Reading entry 0 makes it the most recently used.
	f, ok := c.Get(ds[0], -1)
	if !ok {
		t.Fatal("entry 0 missing")
	}
	f.Close()
	data, d := randomBlob(t, 1000)
	readAll(t)(c.Fetch(ctx, d, -1, (&source{data: data}).fetch))
	present := func(d string) bool { p, _ := c.Path(d); _, err := os.Stat(p); return err == nil }
	if !present(ds[0]) || present(ds[1]) || !present(d) {
		t.Fatalf("LRU: entry0 %v entry1 %v entry2 %v new %v", present(ds[0]), present(ds[1]), present(ds[2]), present(d))
	}
	if total := c.Prune(); total > 3500 {
		t.Fatalf("cache holds %d bytes, cap 3500", total)
	}
	// A blob larger than the cap is streamed, never cached.
	big, bd := randomBlob(t, 5000)
	readAll(t)(c.Fetch(ctx, bd, int64(len(big)), (&source{data: big}).fetch))
	if present(bd) {
		t.Fatal("blob over the cap was cached")
	}
}

func TestUnusableDirDegrades(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	log, lb := newLogger()
	c := Open(filepath.Join(file, "cache"), WithLogger(log))
	if c.Enabled() {
		t.Fatal("cache under a regular file is enabled")
	}
	if !strings.Contains(lb.String(), "blob cache disabled") {
		t.Fatalf("no warning: %q", lb)
	}
	data, d := randomBlob(t, 1000)
	src := &source{data: data}
	for i := 0; i < 2; i++ {
		if got := readAll(t)(c.Fetch(ctx, d, -1, src.fetch)); !bytes.Equal(got, data) {
			t.Fatal("content differs")
		}
	}
	if src.calls.Load() != 2 {
		t.Fatalf("disabled cache fetched %d times", src.calls.Load())
	}
	// The direct stream still verifies.
	rc, err := c.Fetch(ctx, d, -1, (&source{data: []byte("evil")}).fetch)
	if err == nil {
		_, err = io.ReadAll(rc)
	}
	if !errors.Is(err, errdef.ErrDigestMismatch) {
		t.Fatalf("direct stream not verified: %v", err)
	}
}

func TestFullDiskDegrades(t *testing.T) {
	ctx := context.Background()
	log, lb := newLogger()
	c := Open(t.TempDir(), WithLogger(log))
	testHookWrite = func(*os.File, []byte) (int, error) { return 0, syscall.ENOSPC }
	defer func() { testHookWrite = nil }()
	data, d := randomBlob(t, 1000)
	src := &source{data: data}
	if got := readAll(t)(c.Fetch(ctx, d, -1, src.fetch)); !bytes.Equal(got, data) {
		t.Fatal("content differs")
	}
	if c.Enabled() || !strings.Contains(lb.String(), "no space left") {
		t.Fatalf("not degraded: enabled=%v log=%q", c.Enabled(), lb)
	}
	ents, _ := os.ReadDir(filepath.Join(c.Dir(), "tmp"))
	if len(ents) != 0 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func TestBadDigest(t *testing.T) {
	c := Open(t.TempDir())
	for _, d := range []string{"", "sha256:abc", "sha256.0000000000000000000000000000000000000000000000000000000000000000", "md5:d41d8cd98f00b204e9800998ecf8427e", "sha256:../../../../etc/passwd"} {
		if _, err := c.Fetch(context.Background(), d, -1, (&source{}).fetch); !errors.Is(err, errdef.ErrInvalidInput) {
			t.Errorf("%q: %v", d, err)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(EnvDir, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if d, _ := DefaultDir(); d != "/xdg/argocd-ocm-plugin" {
		t.Errorf("XDG: %s", d)
	}
	t.Setenv(EnvDir, "/explicit")
	if d, _ := DefaultDir(); d != "/explicit" {
		t.Errorf("env: %s", d)
	}
	t.Setenv(EnvDir, "")
	t.Setenv("XDG_CACHE_HOME", "relative") // ignored, as the XDG spec says
	t.Setenv("HOME", "/home/argocd")
	if d, _ := DefaultDir(); d != "/home/argocd/.cache/argocd-ocm-plugin" {
		t.Errorf("home: %s", d)
	}
}

func TestMemo(t *testing.T) {
	var m Memo[string, int]
	var calls atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := m.Do(context.Background(), "k", func(context.Context) (int, error) {
				calls.Add(1)
				time.Sleep(20 * time.Millisecond)
				return 42, nil
			})
			if err != nil || v != 42 {
				t.Errorf("%d %v", v, err)
			}
		}()
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("%d calls", calls.Load())
	}
	_, err := m.Do(context.Background(), "e", func(context.Context) (int, error) { return 0, errors.New("boom") })
	if err == nil {
		t.Fatal("error lost")
	}
	v, err := m.Do(context.Background(), "e", func(context.Context) (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Fatal("errors must not be remembered")
	}
	if v, ok := m.Get("k"); !ok || v != 42 {
		t.Fatal("Get")
	}
}

// --- cross-process tests: the test binary re-executes itself -------------

const helperEnv = "ARGOCD_OCM_CACHE_TEST_HELPER"

// TestHelperProcess is not a test: it is the child of the cross-process tests.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for the cross-process tests")
	}
	dir, url, d := os.Getenv("CACHE_DIR"), os.Getenv("CACHE_URL"), os.Getenv("CACHE_DIGEST")
	c := Open(dir)
	rc, err := c.Fetch(context.Background(), d, -1, func(ctx context.Context) (io.ReadCloser, error) {
		resp, err := http.Get(url)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	})
	if err == nil {
		var b []byte
		b, err = io.ReadAll(rc)
		rc.Close()
		if err == nil && blob.Digest(b) != d {
			err = errors.New("wrong content")
		}
	}
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("OK")
	os.Exit(0)
}

func helper(t *testing.T, dir, url, d string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "CACHE_DIR="+dir, "CACHE_URL="+url, "CACHE_DIGEST="+d)
	return cmd
}

func TestCrossProcessSingleDownload(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	data, d := randomBlob(t, 2<<20)
	var downloads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downloads.Add(1)
		time.Sleep(300 * time.Millisecond) // long enough for every process to wait on the lock
		w.Write(data)
	}))
	defer srv.Close()
	dir := t.TempDir()
	const n = 4
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < n; i++ {
		cmd := helper(t, dir, srv.URL, d)
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil || !strings.Contains(outs[i].String(), "OK") {
			t.Fatalf("process %d: %v: %s", i, err, outs[i])
		}
	}
	t.Logf("%d processes fetching one %d-byte blob: %d download(s)", n, len(data), downloads.Load())
	if downloads.Load() != 1 {
		t.Fatalf("%d processes downloaded %d times, want 1", n, downloads.Load())
	}
}

func TestKilledDownloadRepaired(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	data, d := randomBlob(t, 1<<20)
	var downloads atomic.Int32
	halfSent := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if downloads.Add(1) == 1 {
			// First download: send half, then hang until the test ends.
			w.Write(data[:len(data)/2])
			w.(http.Flusher).Flush()
			close(halfSent)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Write(data)
	}))
	defer srv.Close()
	defer close(release)
	dir := t.TempDir()
	cmd := helper(t, dir, srv.URL, d)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-halfSent:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("child did not start downloading")
	}
	// Wait until the half-written temporary file is on disk, then kill.
	tmpDir := filepath.Join(dir, "tmp")
	deadline := time.Now().Add(10 * time.Second)
	for {
		ents, _ := os.ReadDir(tmpDir)
		if len(ents) == 1 {
			if fi, err := ents[0].Info(); err == nil && fi.Size() > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no half-written temporary file: %v", ents)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	log, lb := newLogger()
	c := Open(dir, WithLogger(log))
	rc, err := c.Fetch(context.Background(), d, int64(len(data)), func(ctx context.Context) (io.ReadCloser, error) {
		resp, err := http.Get(srv.URL)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	})
	if got := readAll(t)(rc, err); !bytes.Equal(got, data) {
		t.Fatal("content differs")
	}
	if ents, _ := os.ReadDir(tmpDir); len(ents) != 0 {
		t.Fatalf("half-written temporary file not removed: %v", ents)
	}
	if !strings.Contains(lb.String(), "interrupted download") {
		t.Errorf("no log of the repair: %s", lb)
	}
	if downloads.Load() != 2 {
		t.Fatalf("%d downloads, want 2", downloads.Load())
	}
}

// A caller naming a cached digest with a wrong size (a tenant's descriptor
// naming another tenant's blob) gets a miss, and its fetch fails on the
// size, but the entry stays for those who name it right; a truncated entry
// of the wrong size is still corrupt and replaced.
func TestWrongSizeClaimKeepsTheEntry(t *testing.T) {
	ctx := context.Background()
	log, lb := newLogger()
	c := Open(t.TempDir(), WithLogger(log))
	data, d := randomBlob(t, 10_000)
	src := &source{data: data}
	readAll(t)(c.Fetch(ctx, d, int64(len(data)), src.fetch))
	for _, size := range []int64{1, int64(len(data)) - 1, int64(len(data)) + 1} {
		if f, ok := c.Get(d, size); ok {
			f.Close()
			t.Fatalf("size %d: a hit", size)
		}
		if rc, err := c.Fetch(ctx, d, size, src.fetch); err == nil {
			_, err = io.ReadAll(rc)
			rc.Close()
			if err == nil {
				t.Fatalf("size %d: fetched", size)
			}
		}
	}
	if strings.Contains(lb.String(), "corrupt") {
		t.Errorf("a wrong size claim was taken for corruption: %s", lb)
	}
	f, ok := c.Get(d, int64(len(data)))
	if !ok {
		t.Fatal("the entry was evicted by wrong size claims")
	}
	f.Close()
	p, _ := c.Path(d)
	os.WriteFile(p, data[:100], 0o644)
	if _, ok := c.Get(d, 100); ok || !strings.Contains(lb.String(), "corrupt") {
		t.Fatal("a truncated entry named with its truncated size was not removed as corrupt")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("truncated entry kept: %v", err)
	}
}

// Caches opened on one directory with one Usage (the render server opens
// one per generation) list the directory once: the second learns the size
// from the first, and the shared estimate still evicts at the cap.
func TestSharedUsageListsTheDirectoryOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const limit = 5000
	u := NewUsage()
	store := func(c *Cache, n int) {
		data, d := randomBlob(t, n)
		readAll(t)(c.Fetch(ctx, d, -1, (&source{data: data}).fetch))
	}
	first := Open(dir, WithMaxSize(limit), WithUsage(u))
	store(first, 1000)
	if got := u.total.Load(); got != 1000 {
		t.Fatalf("estimate after the first cache's store: %d, want 1000", got)
	}
	// A file the estimate does not know: a listing would count it.
	stray, sd := randomBlob(t, 700)
	p, _ := first.Path(sd)
	if err := os.WriteFile(p, stray, 0o644); err != nil {
		t.Fatal(err)
	}
	second := Open(dir, WithMaxSize(limit), WithUsage(u))
	store(second, 1000)
	if got := u.total.Load(); got != 2000 {
		t.Fatalf("estimate after the second cache's store: %d, want 2000 (a second listing would say 2700)", got)
	}
	// Without a shared Usage, a new Cache lists the directory.
	alone := Open(dir, WithMaxSize(limit))
	store(alone, 1000)
	if got := alone.total.Load(); got != 3700 {
		t.Fatalf("a cache of its own: estimate %d, want the listing's 3700", got)
	}
	// The shared estimate goes over the cap with the next store (2000 +
	// 3100): the prune lists the directory (6800 bytes) and evicts to 90 %.
	store(second, 3100)
	if total := u.total.Load(); total <= 0 || total > limit/10*9 {
		t.Fatalf("shared estimate %d after a store over the cap, want a prune to ≤ %d", total, limit/10*9)
	}
}

// Caches opened on one directory with one Usage (a render server's
// generations) probe it once; the directories are made again by every
// Open (a cache directory removed between generations comes back). A
// directory that stops being writable after that degrades the Cache that
// fails to write it, as Open would have.
func TestOpenProbesOncePerUsage(t *testing.T) {
	var probes atomic.Int64
	testHookProbe = func() { probes.Add(1) }
	defer func() { testHookProbe = nil }()
	dir := filepath.Join(t.TempDir(), "cache")
	u := NewUsage()
	for i := 0; i < 3; i++ {
		if c := Open(dir, WithUsage(u)); !c.Enabled() {
			t.Fatalf("open %d: disabled", i)
		}
	}
	if n := probes.Load(); n != 1 {
		t.Fatalf("%d probes for 3 opens with one usage, want 1", n)
	}
	if c := Open(dir); !c.Enabled() || probes.Load() != 2 {
		t.Fatalf("another usage: enabled=%v, %d probes in all, want 2", c.Enabled(), probes.Load())
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	log, lb := newLogger()
	c := Open(dir, WithUsage(u), WithLogger(log))
	if _, err := os.Stat(filepath.Join(dir, "tmp")); err != nil || !c.Enabled() {
		t.Fatalf("removed directory not made again: %v, enabled=%v", err, c.Enabled())
	}
	testHookWrite = func(*os.File, []byte) (int, error) { return 0, syscall.EROFS }
	defer func() { testHookWrite = nil }()
	data, d := randomBlob(t, 1000)
	if got := readAll(t)(c.Fetch(context.Background(), d, -1, (&source{data: data}).fetch)); !bytes.Equal(got, data) {
		t.Fatal("content differs")
	}
	if c.Enabled() || !strings.Contains(lb.String(), "blob cache disabled") {
		t.Fatalf("unwritable directory: enabled=%v log=%q", c.Enabled(), lb)
	}
}
