package ctf

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/confine"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

const testComp = "example.com/test/unpack"

// The archives are built by internal/testsupport/ocmbuild, which imports this package:
// the external test package sets these (fixtures_test.go).
var (
	// WriteTestTgz writes at p a CTF tgz whose component comp, version
	// 1.0.0, has a resource "data" of data.
	WriteTestTgz func(p, comp string, data []byte) error
	// StoredTestTgz is that CTF as a tgz gzipped without compression.
	StoredTestTgz func(comp string, data []byte) ([]byte, error)
)

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
	p := filepath.Join(dir, name)
	if err := WriteTestTgz(p, testComp, data); err != nil {
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

	keyA := archiveKey{origin: pa, id: mustIdentity(t, pa)}.hintKey()
	c := quietCache(t, cdir)
	digestB, _ := c.Hint(hintKind, archiveKey{origin: pb, id: mustIdentity(t, pb)}.hintKey())
	if !strings.HasPrefix(digestB, "sha256:") {
		t.Fatalf("no hint for b: %q", digestB)
	}
	for _, wrong := range []string{digestB, "sha256:" + strings.Repeat("0", 64), "nonsense"} {
		c.SetHint(hintKind, keyA, wrong)
		before := taken.Load()
		process(pa, dataA)
		if taken.Load() != before {
			t.Fatalf("hint %q: a guess was taken", wrong)
		}
		if h, _ := c.Hint(hintKind, keyA); h == wrong {
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
	id, ok := statIdentity(fi)
	if !ok {
		t.Skip("no file identity on this system")
	}
	return id
}

// randomData is n bytes that do not compress: two archives of as many such
// bytes have the same size.
func randomData(seed byte, n int) []byte {
	r := rand.New(rand.NewChaCha8([32]byte{seed}))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// writeStoredTgz writes a CTF tgz whose component has a blob of data,
// gzipped without compression: archives of data of one length have one size.
func writeStoredTgz(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	tgz, err := StoredTestTgz(testComp, data)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, tgz, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// collideIdentities makes every file's identity the same but for its size
// and modification time, as on a file system that gives a freed inode to
// the next file within one timestamp tick of an old change time, for the
// rest of the test.
func collideIdentities(t *testing.T) {
	old := statIdentity
	statIdentity = func(fi os.FileInfo) (fileID, bool) {
		if _, ok := old(fi); !ok {
			return fileID{}, false
		}
		return fileID{dev: 1, ino: 1, size: fi.Size(), mtime: fi.ModTime(), ctime: time.Unix(1_000_000_000, 0)}, true
	}
	t.Cleanup(func() { statIdentity = old })
}

func countHashes(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	testHookHash = func() { n.Add(1) }
	t.Cleanup(func() { testHookHash = nil })
	return &n
}

// readBlobAs is readBlob of the archive at p, named as the Application
// directory dir's file name (WithOrigin, as the pipeline does).
func readBlobAs(t *testing.T, dir *confine.Root, name, p string, opts ...Option) ([]byte, error) {
	t.Helper()
	return readBlob(t, p, append(opts, WithOrigin(dir.Origin(name)))...)
}

// The render server's Unpacker is shared by every Application, and a file's
// identity does not tell two files apart on every file system. Two tenants'
// archives of the same name and size, with the same modification time and
// (simulated) the same inode and change time, are each read as their own,
// by origin and by absolute name; an archive replaced in place by another of
// the same size and times is read as the new one (the sample a hit re-reads
// differs); an unchanged archive is still not hashed again.
func TestUnpackMemoIsPerApplicationFile(t *testing.T) {
	collideIdentities(t)
	hashes := countHashes(t)
	base := t.TempDir()
	appA, appB := filepath.Join(base, "app-a"), filepath.Join(base, "app-b")
	for _, d := range []string{appA, appB} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const size = 48 << 10
	dataA, dataB, dataC := randomData(1, size), randomData(2, size), randomData(3, size)
	pa, pb := writeStoredTgz(t, appA, "ctf.tgz", dataA), writeStoredTgz(t, appB, "ctf.tgz", dataB)
	pc := writeStoredTgz(t, appA, "next.tgz", dataC)
	mtime := time.Unix(1_700_000_000, 0)
	var sizes []int64
	for _, p := range []string{pa, pb, pc} {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, fi.Size())
	}
	if sizes[0] != sizes[1] || sizes[0] != sizes[2] {
		t.Fatalf("archive sizes %v differ: the test needs identities that collide", sizes)
	}
	if mustIdentity(t, pa) != mustIdentity(t, pb) {
		t.Fatal("identities do not collide")
	}
	rootA, err := confine.Open(appA)
	if err != nil {
		t.Fatal(err)
	}
	defer rootA.Close()
	rootB, err := confine.Open(appB)
	if err != nil {
		t.Fatal(err)
	}
	defer rootB.Close()

	cdir := filepath.Join(base, "cache")
	read := func(what string, want []byte, open func() ([]byte, error)) {
		t.Helper()
		got, err := open()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		switch {
		case bytes.Equal(got, want):
		case bytes.Equal(got, dataA), bytes.Equal(got, dataB), bytes.Equal(got, dataC):
			t.Fatalf("%s: served another file's archive", what)
		default:
			t.Fatalf("%s: %d bytes of unknown content", what, len(got))
		}
	}
	// With a sample of 4 bytes at each end (the gzip magic and the
	// uncompressed size: the same for both), only the origin tells them apart.
	defaultSample := sampleSize
	t.Cleanup(func() { sampleSize = defaultSample })
	for _, sample := range []int64{4, defaultSample} {
		sampleSize = sample
		opts := []Option{WithUnpacker(NewUnpacker()), WithCache(quietCache(t, cdir))}
		before := hashes.Load()
		for range 2 {
			read("tenant A by origin", dataA, func() ([]byte, error) { return readBlobAs(t, rootA, "ctf.tgz", pa, opts...) })
			read("tenant B by origin", dataB, func() ([]byte, error) { return readBlobAs(t, rootB, "ctf.tgz", pb, opts...) })
			read("tenant A by name", dataA, func() ([]byte, error) { return readBlob(t, pa, opts...) })
			read("tenant B by name", dataB, func() ([]byte, error) { return readBlob(t, pb, opts...) })
		}
		if n := hashes.Load() - before; n != 4 {
			t.Fatalf("sample %d: %d hashes for 8 opens of 2 archives under 2 names each, want 4 (unchanged archives are remembered)", sample, n)
		}
	}

	// Replaced in place: a rename over it (the inode reused, as the
	// collision simulates), same size, same times.
	sampleSize = defaultSample
	hashes.Store(0)
	opts := []Option{WithUnpacker(NewUnpacker()), WithCache(quietCache(t, cdir))}
	read("tenant A by origin", dataA, func() ([]byte, error) { return readBlobAs(t, rootA, "ctf.tgz", pa, opts...) })
	read("tenant A by name", dataA, func() ([]byte, error) { return readBlob(t, pa, opts...) })
	read("tenant B by origin", dataB, func() ([]byte, error) { return readBlobAs(t, rootB, "ctf.tgz", pb, opts...) })
	if err := os.Rename(pc, pa); err != nil {
		t.Fatal(err)
	}
	if mustIdentity(t, pa) != mustIdentity(t, pb) {
		t.Fatal("identities do not collide after the rename")
	}
	read("tenant A replaced, by origin", dataC, func() ([]byte, error) { return readBlobAs(t, rootA, "ctf.tgz", pa, opts...) })
	read("tenant A replaced, by name", dataC, func() ([]byte, error) { return readBlob(t, pa, opts...) })
	read("tenant B unchanged", dataB, func() ([]byte, error) { return readBlobAs(t, rootB, "ctf.tgz", pb, opts...) })
	if n := hashes.Load(); n != 5 {
		t.Fatalf("%d hashes, want 5 (the replaced archive hashed once per name, tenant B's not again)", n)
	}
}

// An archive whose change time is within settleTime of its hash is not
// remembered: a file that takes its inode within the same timestamp tick
// could not be told from it. Once settled it is.
func TestUnpackMemoWaitsUntilSettled(t *testing.T) {
	hashes := countHashes(t)
	dir := t.TempDir()
	p := writeTgz(t, dir, "a.tgz", randomData(4, 1<<10))
	ctime := mustIdentity(t, p).ctime
	opts := []Option{WithUnpacker(NewUnpacker()), WithCache(quietCache(t, filepath.Join(dir, "cache")))}
	for _, tc := range []struct {
		after time.Duration // of the change time, when the hash starts
		want  int64         // hashes of three opens
	}{{0, 3}, {settleTime / 2, 3}, {settleTime + time.Millisecond, 1}} {
		now = func() time.Time { return ctime.Add(tc.after) }
		t.Cleanup(func() { now = time.Now })
		before := hashes.Load()
		for range 3 {
			if _, err := readBlob(t, p, opts...); err != nil {
				t.Fatal(err)
			}
		}
		if n := hashes.Load() - before; n != tc.want {
			t.Fatalf("hash %v after the change time: %d hashes of 3 opens, want %d", tc.after, n, tc.want)
		}
	}
}
