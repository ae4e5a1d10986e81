package cache

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

var errLockTimeout = errors.New("timed out waiting for the cache lock")

// DefaultDir is $ARGOCD_OCM_CACHE_DIR, else $XDG_CACHE_HOME/argocd-ocm-plugin,
// else ~/.cache/argocd-ocm-plugin.
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "argocd-ocm-plugin"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", fmt.Errorf("no cache directory: set %s or XDG_CACHE_HOME", EnvDir)
	}
	return filepath.Join(home, ".cache", "argocd-ocm-plugin"), nil
}

// LockDir is the directory of the cache in dir whose files are locked while
// a blob is fetched or derived (one file per digest); a process that has one
// open without its lock waits for another's fetch (the render server does
// not start a worker for that: server.Pool.LockDir).
func LockDir(dir string) string { return filepath.Join(dir, "locks") }

// FetchFunc opens the content to cache; the cache verifies what it reads.
type FetchFunc func(ctx context.Context) (io.ReadCloser, error)

// Cache is a content-addressed blob cache on disk; see the package comment.
// It is safe for concurrent use by goroutines and processes. The zero value
// is not usable; Disabled returns a cache that caches nothing.
type Cache struct {
	root     string
	o        options
	disabled atomic.Bool
	warnOnce sync.Once

	mu    sync.Mutex
	locks map[string]chan struct{} // in-process lock per digest

	total     *atomic.Int64 // estimate of bytes under blobs/, -1 unknown (Usage)
	pruneLock *sync.Mutex
}

// Usage is the size estimate of one cache directory that Caches opened on
// it share (WithUsage), and the lock of their pruning in this process.
type Usage struct {
	total atomic.Int64
	prune sync.Mutex
	// writable: a Cache of this directory found it writable (Open's probe
	// file). The Caches opened after it, one per generation of a render
	// server, only make sure its directories exist: a probe costs 80 µs of
	// file creation, a tenth of a small warm generation's own work. A
	// directory that stops being writable then disables the Cache that
	// fails to write it (Fetch), with the same warning and fallback as
	// Open.
	writable atomic.Bool
}

// NewUsage is an estimate not known yet: the first Cache that stores
// something lists the directory.
func NewUsage() *Usage {
	u := &Usage{}
	u.total.Store(-1)
	return u
}

// Open returns the cache rooted at dir, creating it. It never fails: a dir
// that cannot be created or written yields a disabled cache and one warning.
func Open(dir string, opts ...Option) *Cache {
	o := options{maxSize: DefaultMaxSize, lockTimeout: DefaultLockTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.usage == nil {
		o.usage = NewUsage()
	}
	c := &Cache{root: dir, o: o, locks: map[string]chan struct{}{}, total: &o.usage.total, pruneLock: &o.usage.prune}
	if dir == "" {
		c.disable(errors.New("no cache directory"))
		return c
	}
	if err := c.init(); err != nil {
		c.disable(err)
	}
	return c
}

// Disabled returns a cache that stores nothing: Fetch streams verified content.
func Disabled() *Cache {
	u := NewUsage()
	c := &Cache{locks: map[string]chan struct{}{}, o: options{logger: slog.Default(), usage: u}, total: &u.total, pruneLock: &u.prune}
	c.disabled.Store(true)
	c.warnOnce.Do(func() {})
	return c
}

func (c *Cache) init() error {
	for _, d := range []string{"blobs/sha256", "blobs/sha512", "tmp", "locks/sha256", "locks/sha512"} {
		if err := os.MkdirAll(filepath.Join(c.root, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	if c.o.usage.writable.Load() {
		return nil
	}
	if testHookProbe != nil {
		testHookProbe()
	}
	f, err := os.CreateTemp(filepath.Join(c.root, "tmp"), "probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, err = f.Write([]byte("probe"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	os.Remove(name)
	if err == nil {
		c.o.usage.writable.Store(true)
	}
	return err
}

// testHookProbe, when set, is called for every probe file (tests).
var testHookProbe func()

// disable turns caching off for this process, warning once.
func (c *Cache) disable(cause error) {
	c.disabled.Store(true)
	c.warnOnce.Do(func() {
		c.o.logger.Warn("blob cache disabled, downloading without caching", "dir", c.root, "cause", cause.Error())
	})
}

// Dir is the cache's root directory ("" for Disabled).
func (c *Cache) Dir() string { return c.root }

// Enabled reports whether content is being cached.
func (c *Cache) Enabled() bool { return !c.disabled.Load() }

// parse checks a digest and returns its algorithm and hex.
func parse(dgst string) (string, string, error) {
	alg, h, err := blob.ParseDigest(dgst)
	if err != nil {
		return "", "", err
	}
	if strings.Contains(dgst, ".") {
		return "", "", fmt.Errorf("%w: %s is not a digest", errdef.ErrInvalidInput, errdef.Quote(dgst))
	}
	return alg, h, nil
}

// Path is where the entry for dgst lives (whether or not it exists).
func (c *Cache) Path(dgst string) (string, error) {
	alg, h, err := parse(dgst)
	if err != nil {
		return "", err
	}
	return filepath.Join(c.root, "blobs", alg, h), nil
}

// File is a verified cache entry, positioned at its start.
type File struct {
	*os.File
	size int64
}

// Size of the content in bytes.
func (f *File) Size() int64 { return f.size }

// Get returns the verified entry for dgst. size < 0 means unknown. A missing
// entry is a miss; a corrupt one is deleted, with a warning, and is a miss.
func (c *Cache) Get(dgst string, size int64) (*File, bool) {
	if !c.Enabled() {
		return nil, false
	}
	p, err := c.Path(dgst)
	if err != nil {
		return nil, false
	}
	f, err := openRegular(p, os.O_RDONLY, 0)
	if errors.Is(err, errNotRegular) {
		c.o.logger.Warn("blob cache entry that is not a regular file removed, fetching it again", "digest", dgst)
		os.RemoveAll(p) // does not follow a link; a planted directory goes with what it holds
		return nil, false
	}
	if err != nil {
		return nil, false
	}
	ok, n, why := verifyFile(f, dgst, size)
	if !ok && size >= 0 && n > 0 {
		// The entry is the digest's content; the caller's size is wrong
		// (a descriptor naming another tenant's digest with a made-up
		// size must not evict that tenant's entry): a miss, kept.
		f.Close()
		return nil, false
	}
	if !ok {
		f.Close()
		c.o.logger.Warn("corrupt blob cache entry removed, fetching it again", "digest", dgst, "cause", why)
		os.Remove(p)
		return nil, false
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, false
	}
	if fi, err := f.Stat(); err == nil && time.Since(fi.ModTime()) > touchInterval {
		now := time.Now()
		os.Chtimes(p, now, now) // LRU: best effort (a read-only cache stays usable)
	}
	return &File{File: f, size: n}, true
}

func newHash(alg string) hash.Hash {
	if alg == "sha512" {
		return sha512.New()
	}
	return sha256.New()
}

// copyBuffers are verifyFile's read buffers: a warm generation verifies
// every blob it reads (descriptor, config, chart), 32 KiB of garbage each.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// verifyFile reports whether f holds dgst's content of size bytes (size < 0:
// any) and its length. An f that holds dgst's content but not of size bytes
// is not ok, with its length (> 0, or 1 for empty content) so that the
// caller can tell a wrong size claim from a corrupt entry (length 0).
func verifyFile(f *os.File, dgst string, size int64) (bool, int64, string) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false, 0, "not a regular file"
	}
	alg, want, _ := parse(dgst)
	h := newHash(alg)
	buf := copyBuffers.Get().(*[]byte)
	n, err := io.CopyBuffer(h, struct{ io.Reader }{f}, *buf) // not os.File's WriteTo, which allocates its own
	copyBuffers.Put(buf)
	if err != nil {
		return false, 0, "read: " + err.Error()
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return false, 0, "content hashes to " + alg + ":" + got
	}
	if size >= 0 && n != size {
		return false, max(n, 1), fmt.Sprintf("%d bytes, want %d", n, size)
	}
	return true, n, ""
}

// lockKey takes the in-process lock of a digest. The wait ends with
// errLockTimeout when the holder stalls (see stall) or after lockTimeout.
func (c *Cache) lockKey(ctx context.Context, key string, stalled func(time.Time) bool) (func(), error) {
	deadline := time.Now().Add(c.o.lockTimeout)
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		c.mu.Lock()
		ch, busy := c.locks[key]
		if !busy {
			ch = make(chan struct{})
			c.locks[key] = ch
			c.mu.Unlock()
			return func() {
				c.mu.Lock()
				delete(c.locks, key)
				c.mu.Unlock()
				close(ch)
			}, nil
		}
		c.mu.Unlock()
	wait:
		for {
			select {
			case <-ch:
				break wait
			case <-ctx.Done():
				return nil, ctx.Err()
			case now := <-tick.C:
				if now.After(deadline) || stalled(now) {
					return nil, errLockTimeout
				}
			}
		}
	}
}

// The wait for another download of the same blob (in this process or
// another: the render server's workers are processes) lasts while the
// holder makes progress: a holder that wrote less than minLockProgress in
// the last lockStall — a registry that trickles, or hangs — is given up on,
// and the waiter downloads by itself, without caching. So one tenant's slow
// registry never holds another tenant's generation.
const (
	lockPoll        = 50 * time.Millisecond
	lockStall       = 2 * time.Second
	minLockProgress = 64 << 10
)

// stallDetector reports whether the download of one digest (its temporary
// files' size) has stopped progressing.
func (c *Cache) stallDetector(alg, h string) func(time.Time) bool {
	return c.tempStallDetector(alg + "-" + h + ".")
}

// tempBytes is the size of the temporary files whose names start with prefix.
func (c *Cache) tempBytes(prefix string) int64 {
	ents, err := os.ReadDir(filepath.Join(c.root, "tmp"))
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

// Fetch returns the content named by dgst (size < 0: unknown): from the cache,
// else from fetch, once across goroutines and processes, verified and stored.
// The reader is an *os.File of the entry when cached, else a verifying stream
// that fails on Read with errdef.ErrDigestMismatch when the bytes are wrong.
func (c *Cache) Fetch(ctx context.Context, dgst string, size int64, fetch FetchFunc) (io.ReadCloser, error) {
	alg, h, err := parse(dgst)
	if err != nil {
		return nil, err
	}
	if !c.Enabled() || (size > c.o.maxSize) {
		return direct(ctx, dgst, size, fetch)
	}
	if f, ok := c.Get(dgst, size); ok {
		c.o.logger.Debug("cache hit", "digest", dgst)
		return f, nil
	}
	unlock, err := c.lockKey(ctx, dgst, c.stallDetector(alg, h))
	switch {
	case errors.Is(err, errLockTimeout):
		c.o.logger.Warn("another download of the blob makes no progress, downloading without caching", "digest", dgst)
		return direct(ctx, dgst, size, fetch)
	case err != nil:
		return nil, err
	}
	defer unlock()
	if f, ok := c.Get(dgst, size); ok {
		return f, nil
	}
	fl, err := lockFile(ctx, filepath.Join(LockDir(c.root), alg, h), c.o.lockTimeout, c.stallDetector(alg, h))
	switch {
	case errors.Is(err, errLockTimeout):
		c.o.logger.Warn("another process's download of the blob makes no progress, downloading without caching", "digest", dgst)
		return direct(ctx, dgst, size, fetch)
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		c.disable(err)
		return direct(ctx, dgst, size, fetch)
	}
	defer fl.unlock()
	if f, ok := c.Get(dgst, size); ok {
		return f, nil
	}
	// The lock is ours: temporary files of this digest belong to dead downloads.
	c.removeTemps(alg + "-" + h + ".")
	f, n, err := c.download(ctx, alg, h, dgst, size, fetch)
	if err != nil {
		var we *writeError
		if errors.As(err, &we) {
			c.disable(we.err)
			return direct(ctx, dgst, size, fetch)
		}
		return nil, err
	}
	c.added(n)
	c.o.logger.Debug("cache miss: downloaded and stored", "digest", dgst, "bytes", n)
	return f, nil
}

// writeError marks a failure to write the cache (as opposed to fetching).
type writeError struct{ err error }

func (e *writeError) Error() string { return "cache write: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

type trackingWriter struct {
	f   *os.File
	err error
}

func (w *trackingWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// testHookWrite, when set, replaces writes to temporary files (tests simulate
// a full disk with it).
var testHookWrite func(f *os.File, p []byte) (int, error)

func (c *Cache) download(ctx context.Context, alg, h, dgst string, size int64, fetch FetchFunc) (*File, int64, error) {
	tmp, err := os.CreateTemp(filepath.Join(c.root, "tmp"), alg+"-"+h+".*")
	if err != nil {
		return nil, 0, &writeError{err}
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	rc, err := fetch(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	v, err := blob.NewVerifier(rc, dgst, size)
	if err != nil {
		return nil, 0, err
	}
	w := &trackingWriter{f: tmp}
	var dst io.Writer = w
	if testHookWrite != nil {
		dst = writerFunc(func(p []byte) (int, error) {
			n, err := testHookWrite(tmp, p)
			if err != nil {
				w.err = err
			}
			return n, err
		})
	}
	n, err := io.Copy(dst, v)
	if err != nil {
		if w.err != nil {
			return nil, 0, &writeError{w.err}
		}
		return nil, 0, err
	}
	// No fsync before the rename: every Get hashes the entry again, so one
	// that a crash left short or empty is a miss (removed, fetched again),
	// and an fsync is 1-3 ms on the path of every cold generation, once per
	// sequential round of requests (index, manifests, layers).
	final := filepath.Join(c.root, "blobs", alg, h)
	if err := os.Rename(tmp.Name(), final); err != nil {
		return nil, 0, &writeError{err}
	}
	keep = true
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return nil, 0, err
	}
	return &File{File: tmp, size: n}, n, nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (c *Cache) removeTemps(prefix string) {
	ents, err := os.ReadDir(filepath.Join(c.root, "tmp"))
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			c.o.logger.Info("removing an interrupted download from the blob cache", "file", e.Name())
			os.Remove(filepath.Join(c.root, "tmp", e.Name()))
		}
	}
}

// direct streams content without caching, verified as it is read.
func direct(ctx context.Context, dgst string, size int64, fetch FetchFunc) (io.ReadCloser, error) {
	rc, err := fetch(ctx)
	if err != nil {
		return nil, err
	}
	v, err := blob.NewVerifier(rc, dgst, size)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return v, nil
}

// Put stores content read from r under dgst, verifying it. An existing entry
// is kept. It returns an error when r's content does not match or the cache
// cannot be written (a disabled cache stores nothing and returns nil).
func (c *Cache) Put(ctx context.Context, dgst string, r io.Reader) error {
	rc, err := c.Fetch(ctx, dgst, -1, func(context.Context) (io.ReadCloser, error) { return io.NopCloser(r), nil })
	if err != nil {
		return err
	}
	if !c.Enabled() {
		// direct: drain to verify.
		_, err = io.Copy(io.Discard, rc)
	}
	rc.Close()
	return err
}

// added accounts n new bytes and evicts when the cap is exceeded.
func (c *Cache) added(n int64) {
	t := c.total.Load()
	if t < 0 {
		c.Prune()
		return
	}
	if c.total.Add(n) > c.o.maxSize {
		c.Prune()
	}
}

// Prune deletes least recently used entries until the cache is at most 90 %
// of its cap (when it is over the cap), and temporary files of dead downloads.
// Only one process prunes at a time; others skip. It returns the bytes left.
func (c *Cache) Prune() int64 {
	if !c.Enabled() {
		return 0
	}
	c.pruneLock.Lock()
	defer c.pruneLock.Unlock()
	gl, ok, err := tryLockFile(filepath.Join(c.root, "gc.lock"))
	if err != nil || !ok {
		return c.total.Load()
	}
	defer gl.unlock()

	type entry struct {
		path  string
		size  int64
		mtime time.Time
	}
	var ents []entry
	var total int64
	for _, alg := range []string{"sha256", "sha512"} {
		dir := filepath.Join(c.root, "blobs", alg)
		des, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, de := range des {
			fi, err := de.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			ents = append(ents, entry{filepath.Join(dir, de.Name()), fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
	}
	if total > c.o.maxSize {
		sort.Slice(ents, func(i, j int) bool { return ents[i].mtime.Before(ents[j].mtime) })
		low := c.o.maxSize / 10 * 9
		for _, e := range ents {
			if total <= low {
				break
			}
			if err := os.Remove(e.path); err == nil || errors.Is(err, fs.ErrNotExist) {
				total -= e.size
			}
		}
	}
	c.total.Store(total)
	if des, err := os.ReadDir(filepath.Join(c.root, "tmp")); err == nil {
		for _, de := range des {
			if fi, err := de.Info(); err == nil && time.Since(fi.ModTime()) > staleTempAge {
				os.Remove(filepath.Join(c.root, "tmp", de.Name()))
			}
		}
	}
	return total
}
