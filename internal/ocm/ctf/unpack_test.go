package ctf

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm"
)

const testComp = "example.com/test/unpack"

// countGunzips counts decompressions for the rest of the test.
func countGunzips(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	testHookGunzip = func() { n.Add(1) }
	t.Cleanup(func() { testHookGunzip = nil })
	return &n
}

// writeTgz writes a CTF tgz whose component has a blob of data.
func writeTgz(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	c := &ocmbuild.Component{Name: testComp, Version: "1.0.0", Resources: []ocmbuild.Resource{{Name: "data", Type: "blob", Data: data, MediaType: "application/octet-stream"}}}
	p := filepath.Join(dir, name)
	if err := ocmbuild.WriteCTFArchive(p, true, c); err != nil {
		t.Fatal(err)
	}
	return p
}

// readBlob opens the CTF at p with opts and returns its blob's content.
func readBlob(t *testing.T, p string, opts ...Option) ([]byte, error) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenFile(f, p, opts...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	ctx := context.Background()
	cv, err := r.LookupComponentVersion(ctx, testComp, "1.0.0")
	if err != nil {
		return nil, err
	}
	res, err := cv.Descriptor().Resource(ocm.Identity{"name": "data"})
	if err != nil {
		return nil, err
	}
	b, err := cv.OpenLocalBlob(ctx, res.Access)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return io.ReadAll(b)
}

func quietCache(t *testing.T, dir string) *cache.Cache {
	return cache.Open(dir, cache.WithLogger(slog.New(slog.DiscardHandler)))
}

// A tgz is unpacked once per content digest: later opens through the same
// Unpacker (the render server) neither unpack nor hash the tar again, a new
// Unpacker on the same cache directory (another process) finds the tar
// there, a copy of the archive elsewhere is the same content, and a changed
// archive is unpacked anew. Every read is right and verified.
func TestUnpackOncePerDigest(t *testing.T) {
	gunzips := countGunzips(t)
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<14)
	p := writeTgz(t, dir, "a.tgz", data)
	cdir := filepath.Join(dir, "cache")
	u := NewUnpacker()
	opts := []Option{WithUnpacker(u), WithCache(quietCache(t, cdir))}
	for i := 0; i < 3; i++ {
		got, err := readBlob(t, p, opts...)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("open %d: %d bytes, %v", i, len(got), err)
		}
	}
	if n := gunzips.Load(); n != 1 {
		t.Fatalf("%d decompressions for 3 opens through one Unpacker, want 1", n)
	}
	// Another process: a new Unpacker, the same cache directory.
	if got, err := readBlob(t, p, WithUnpacker(NewUnpacker()), WithCache(quietCache(t, cdir))); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("new Unpacker: %d bytes, %v", len(got), err)
	}
	// The same content in another file (another checkout).
	cp := filepath.Join(dir, "copy.tgz")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(cp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readBlob(t, cp, opts...); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("copy: %d bytes, %v", len(got), err)
	}
	if n := gunzips.Load(); n != 1 {
		t.Fatalf("%d decompressions, want 1", n)
	}
	// Changed content at the same path.
	data2 := bytes.Repeat([]byte("fedcba9876543210"), 1<<14)
	writeTgz(t, dir, "a.tgz", data2)
	if got, err := readBlob(t, p, opts...); err != nil || !bytes.Equal(got, data2) {
		t.Fatalf("changed archive: %d bytes, %v", len(got), err)
	}
	if n := gunzips.Load(); n != 2 {
		t.Fatalf("%d decompressions after the archive changed, want 2", n)
	}
	// Without a cache, or with a disabled one: a temporary file per open.
	for _, o := range [][]Option{{WithUnpacker(u)}, {WithUnpacker(u), WithCache(cache.Disabled())}} {
		if got, err := readBlob(t, p, o...); err != nil || !bytes.Equal(got, data2) {
			t.Fatalf("no cache: %d bytes, %v", len(got), err)
		}
	}
	if n := gunzips.Load(); n != 4 {
		t.Fatalf("%d decompressions, want 4", n)
	}
}

// A tampered cache entry is detected (the cache verifies the tar's digest
// before an Unpacker first uses it; a file rewritten in place is no longer
// the one it verified), removed, and unpacked again.
func TestUnpackTamperedCache(t *testing.T) {
	gunzips := countGunzips(t)
	dir := t.TempDir()
	data := bytes.Repeat([]byte("tamper me "), 1<<12)
	p := writeTgz(t, dir, "a.tgz", data)
	cdir := filepath.Join(dir, "cache")
	u := NewUnpacker()
	opts := []Option{WithUnpacker(u), WithCache(quietCache(t, cdir))}
	if _, err := readBlob(t, p, opts...); err != nil {
		t.Fatal(err)
	}
	tars, _ := filepath.Glob(filepath.Join(cdir, "blobs", "sha256", "*"))
	if len(tars) != 1 {
		t.Fatalf("cache holds %v", tars)
	}
	b, _ := os.ReadFile(tars[0])
	b = bytes.Replace(b, []byte("tamper me"), []byte("tampered!"), 1)
	time.Sleep(10 * time.Millisecond) // a distinct modification time
	if err := os.WriteFile(tars[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, o := range [][]Option{opts, {WithUnpacker(NewUnpacker()), WithCache(quietCache(t, cdir))}} {
		if got, err := readBlob(t, p, o...); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("after tampering: %d bytes, %v", len(got), err)
		}
	}
	if n := gunzips.Load(); n != 2 {
		t.Fatalf("%d decompressions, want 2 (one after the tampering)", n)
	}
}

// Concurrent opens of one archive unpack it once.
func TestUnpackConcurrent(t *testing.T) {
	gunzips := countGunzips(t)
	dir := t.TempDir()
	data := bytes.Repeat([]byte("concurrent"), 1<<14)
	p := writeTgz(t, dir, "a.tgz", data)
	opts := []Option{WithUnpacker(NewUnpacker()), WithCache(quietCache(t, filepath.Join(dir, "cache")))}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			got, err := readBlob(t, p, opts...)
			if err == nil && !bytes.Equal(got, data) {
				err = errors.New("wrong content")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := gunzips.Load(); n != 1 {
		t.Fatalf("%d decompressions for 20 concurrent opens, want 1", n)
	}
}

// The archive limits and the deadline bound an unpacking into the cache as
// they bound one into a temporary file, and a failed unpacking leaves
// nothing in the cache.
func TestUnpackBounded(t *testing.T) {
	dir := t.TempDir()
	data := blob.Digest([]byte("x")) // any content
	p := writeTgz(t, dir, "a.tgz", bytes.Repeat([]byte(data), 1<<12))
	cdir := filepath.Join(dir, "cache")
	u := NewUnpacker()
	base := []Option{WithUnpacker(u), WithCache(quietCache(t, cdir))}
	if _, err := readBlob(t, p, append(base, WithMaxSize(4096))...); !errors.Is(err, errdef.ErrLimitExceeded) {
		t.Fatalf("small WithMaxSize: %v, want ErrLimitExceeded", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := readBlob(t, p, append(base, WithContext(ctx))...); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v, want context.Canceled", err)
	}
	if tars, _ := filepath.Glob(filepath.Join(cdir, "blobs", "sha256", "*")); len(tars) != 0 {
		t.Fatalf("failed unpackings left %v in the cache", tars)
	}
	// Unpacked once within the limits, a later open with smaller limits
	// is still refused.
	if _, err := readBlob(t, p, base...); err != nil {
		t.Fatal(err)
	}
	if _, err := readBlob(t, p, append(base, WithMaxEntries(1))...); !errors.Is(err, errdef.ErrLimitExceeded) {
		t.Fatalf("cached tar, WithMaxEntries(1): %v, want ErrLimitExceeded", err)
	}
	if _, err := readBlob(t, p, append(base, WithMaxSize(4096))...); !errors.Is(err, errdef.ErrLimitExceeded) {
		t.Fatalf("cached tar, small WithMaxSize: %v, want ErrLimitExceeded", err)
	}
}

// A new Unpacker (another process) verifies the tar the cache's hint names
// while it hashes the archive, and takes it only when the hash confirms the
// hint: a hint naming another archive's tar, or nonsense, never changes
// what is read, and is corrected.
func TestUnpackGuessedTar(t *testing.T) {
	gunzips := countGunzips(t)
	var taken atomic.Int64
	testHookGuessTaken = func() { taken.Add(1) }
	t.Cleanup(func() { testHookGuessTaken = nil })
	dir := t.TempDir()
	dataA := bytes.Repeat([]byte("0123456789abcdef"), 1<<14)
	dataB := bytes.Repeat([]byte("fedcba9876543210"), 1<<14)
	pa, pb := writeTgz(t, dir, "a.tgz", dataA), writeTgz(t, dir, "b.tgz", dataB)
	cdir := filepath.Join(dir, "cache")
	process := func(p string, want []byte) {
		t.Helper()
		got, err := readBlob(t, p, WithUnpacker(NewUnpacker()), WithCache(quietCache(t, cdir)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, %v", p, len(got), err)
		}
	}
	process(pa, dataA)
	process(pb, dataB)
	if n, g := gunzips.Load(), taken.Load(); n != 2 || g != 0 {
		t.Fatalf("first opens: %d decompressions, %d guesses taken; want 2, 0", n, g)
	}
	process(pa, dataA)
	process(pb, dataB)
	if n, g := gunzips.Load(), taken.Load(); n != 2 || g != 2 {
		t.Fatalf("second opens: %d decompressions, %d guesses taken; want 2, 2", n, g)
	}

	fi, err := os.Stat(pa)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := identity(fi)
	if !ok {
		t.Skip("no file identity on this system")
	}
	c := quietCache(t, cdir)
	digestB, _ := c.Hint(hintKind, mustIdentity(t, pb).key())
	for _, wrong := range []string{digestB, "sha256:" + strings.Repeat("0", 64), "nonsense"} {
		c.SetHint(hintKind, id.key(), wrong)
		before := taken.Load()
		process(pa, dataA)
		if taken.Load() != before {
			t.Fatalf("hint %q: a guess was taken", wrong)
		}
		if h, _ := c.Hint(hintKind, id.key()); h == wrong {
			t.Fatalf("hint %q not corrected", wrong)
		}
	}
	if n := gunzips.Load(); n != 2 {
		t.Fatalf("%d decompressions, want 2", n)
	}
}

func mustIdentity(t *testing.T, p string) fileID {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := identity(fi)
	if !ok {
		t.Skip("no file identity on this system")
	}
	return id
}
