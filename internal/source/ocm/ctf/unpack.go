package ctf

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/counting"
)

// derivedKind names the unpacked tars of tgz archives in the blob cache.
const derivedKind = "ctf-tar"

// hintKind names the cache's hints from an archive's file identity to its
// digest (see Unpacker.guessTar).
const hintKind = "ctf-tgz-digest"

// Bounds of an Unpacker's memory: archives it remembers by file identity,
// and tar indexes it keeps.
const (
	maxRememberedArchives = 1024
	maxRememberedIndexes  = 64
)

// Unpacker unpacks tgz archives at most once per content digest: the tar is
// kept in the blob cache of the open (WithCache; package cache: shared with
// every process of the plugin on the machine, verified, evicted with the
// rest), and for as long as the Unpacker lives (the render server's
// lifetime) it remembers
//
//   - each archive's content digest by where it is and which file it is
//     (archiveKey: its origin, WithOrigin, and the identity of its file:
//     device, inode, size, modification and change times), so that an
//     unchanged checkout is not hashed again. Every Application shares the
//     Unpacker, so a hit must be the same file of the same Application
//     directory: an archive is remembered only once its change time is
//     settleTime older than the hash (a file replaced or rewritten
//     afterwards, even on the same inode within one timestamp tick, has a
//     later change time), only when its identity did not change while it was
//     hashed, and a hit re-reads a sample of the file (its first and last 64
//     KiB, all of a smaller one) against the one remembered;
//   - each unpacked tar's index of entries, by its digest, with the identity
//     of the cache file it verified, so that a later open of the same tar
//     neither hashes nor indexes it again.
//
// The archive limits (WithMaxSize, WithMaxEntries, the expansion ratio) and
// the context (WithContext) bound an unpacking as without an Unpacker.
// Without a cache (or with a disabled one) an open unpacks into a temporary
// file, as without an Unpacker. The zero value is not usable. It is safe for
// concurrent use.
type Unpacker struct {
	mu       sync.Mutex
	archives map[archiveKey]archiveMemo // archive file → sha256 digest of its content
	indexes  map[string]*tarMemo        // cache directory and archive digest → the unpacked tar and its index
	order    []string                   // indexes, oldest first
	ids      []archiveKey               // archives, oldest first
	inflight map[string]*inflight       // per archive digest: one indexing at a time
}

type inflight struct {
	sync.Mutex
	users int // goroutines holding or waiting for it
}

// tarMemo is a verified, indexed tar of the cache.
type tarMemo struct {
	path    string
	id      fileID
	size    int64
	entries map[string]tarEntry
}

// NewUnpacker returns an empty Unpacker.
func NewUnpacker() *Unpacker {
	return &Unpacker{archives: map[archiveKey]archiveMemo{}, indexes: map[string]*tarMemo{}, inflight: map[string]*inflight{}}
}

// archiveKey is an archive file as an Unpacker remembers it: where it is
// and which file it is.
type archiveKey struct {
	origin string // WithOrigin, else the absolute name of the file
	id     fileID
}

// archiveMemo is what an Unpacker remembers of an archive file.
type archiveMemo struct {
	digest string            // sha256 of its content
	sample [sha256.Size]byte // see sampleOf
}

// settleTime is how much older than the start of its hash an archive's
// change time must be for the Unpacker to remember the digest: more than a
// kernel timestamp tick (jiffies; FAT's 2 s), so that any later write to
// the file, and any file that later takes its inode, has another change
// time. A variable for tests.
var settleTime = 2 * time.Second

// sampleSize is how much of each end of an archive sampleOf reads. A
// variable for tests.
var sampleSize int64 = 64 << 10

// sampleOf is the SHA-256 of f's size and of its first and last
// sampleSize bytes (all of a file of at most twice that).
func sampleOf(f *os.File, size int64) ([sha256.Size]byte, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", size)
	if size <= 2*sampleSize {
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
			return [sha256.Size]byte{}, err
		}
	} else {
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, sampleSize)); err != nil {
			return [sha256.Size]byte{}, err
		}
		if _, err := io.Copy(h, io.NewSectionReader(f, size-sampleSize, sampleSize)); err != nil {
			return [sha256.Size]byte{}, err
		}
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out, nil
}

// WithOrigin names the archive file for an Unpacker's memory (see
// Unpacker): where it is, as no other Application's file can be, e.g.
// confine.Root.Origin. Default: the absolute name of the file.
func WithOrigin(origin string) Option { return func(o *options) { o.origin = origin } }

// keyOf is f's key in the memory of archives; false when f has no
// identity or no origin (nothing is remembered of it).
func keyOf(f *os.File, fi os.FileInfo, o options) (archiveKey, bool) {
	id, ok := statIdentity(fi)
	if !ok {
		return archiveKey{}, false
	}
	origin := o.origin
	if origin == "" {
		abs, err := filepath.Abs(f.Name())
		if err != nil {
			return archiveKey{}, false
		}
		origin = abs
	}
	return archiveKey{origin: origin, id: id}, true
}

// statIdentity is identity; tests replace it by one whose identities
// collide, as on a file system that reuses an inode within one tick.
var statIdentity = identity

// now is time.Now; tests replace it.
var now = time.Now

// testHookHash, when set, is called at the start of every hash of a
// whole archive (tests count them).
var testHookHash func()

// WithUnpacker and WithCache keep the unpacked tar of a tgz archive in the
// blob cache c and remember it in u (default: neither, a private temporary
// file per open, removed on Close). Both are needed.
func WithUnpacker(u *Unpacker) Option { return func(o *options) { o.unpacker = u } }

// WithCache: see WithUnpacker.
func WithCache(c *cache.Cache) Option { return func(o *options) { o.cache = c } }

// WithContext bounds the unpacking of a tgz archive by ctx (its deadline):
// default context.Background().
func WithContext(ctx context.Context) Option { return func(o *options) { o.ctx = ctx } }

// digestOf returns the sha256 digest of f's content, remembered by its key
// (see Unpacker). f is read from its start; its offset afterwards is
// unspecified.
func (u *Unpacker) digestOf(ctx context.Context, f *os.File, o options) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	key, ok := keyOf(f, fi, o)
	if ok {
		u.mu.Lock()
		m, hit := u.archives[key]
		u.mu.Unlock()
		if hit {
			if s, err := sampleOf(f, key.id.size); err == nil && s == m.sample {
				return m.digest, nil
			}
			// Not the content remembered: a file system that gave another
			// file this identity. Hashed again, and remembered anew.
			u.forget(key)
		}
	}
	start := now()
	if testHookHash != nil {
		testHookHash()
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, &ctxReader{ctx: ctx, r: f}); err != nil {
		return "", err
	}
	d := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if !ok || !key.id.ctime.Before(start.Add(-settleTime)) {
		return d, nil // not settled: a later file could have this identity
	}
	if fi, err := f.Stat(); err != nil {
		return d, nil
	} else if after, ok := keyOf(f, fi, o); !ok || after != key {
		return d, nil // changed while it was hashed
	}
	sample, err := sampleOf(f, key.id.size)
	if err != nil {
		return d, nil
	}
	u.mu.Lock()
	if _, dup := u.archives[key]; !dup {
		u.archives[key] = archiveMemo{digest: d, sample: sample}
		u.ids = append(u.ids, key)
		if len(u.ids) > maxRememberedArchives {
			delete(u.archives, u.ids[0])
			u.ids = u.ids[1:]
		}
	}
	u.mu.Unlock()
	return d, nil
}

// forget drops what the Unpacker remembers of key.
func (u *Unpacker) forget(key archiveKey) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.archives, key)
	u.ids = slices.DeleteFunc(u.ids, func(k archiveKey) bool { return k == key })
}

// open returns the indexed tar of the tgz f, unpacking it into the cache
// unless it is there already; errNoUnpacker when the cache keeps nothing.
func (u *Unpacker) open(f *os.File, o options) (*tarStore, error) {
	if o.cache == nil || !o.cache.Enabled() {
		return nil, errNoUnpacker
	}
	ctx := o.context()
	// A process (no memory of this archive) verifies the tar it unpacked
	// to last time while it hashes the archive: the hint of the archive's
	// digest is only a guess, used when the hash confirms it.
	hintKey, guess := u.guessTar(f, o)
	src, err := u.digestOf(ctx, f, o)
	if guess != nil {
		defer closeUntaken(guess)
	}
	if err != nil {
		return nil, err
	}
	release := u.exclusive(src)
	defer release()
	key := o.cache.Dir() + "\x00" + src // remembered tars are files of that cache
	if ts, ok := u.remembered(key, o); ok {
		return ts, nil
	}
	cf, hinted := takeGuess(guess, src)
	if hintKey != "" && hinted != src {
		o.cache.SetHint(hintKind, hintKey, src)
	}
	if cf == nil {
		cf, err = unpackTar(ctx, f, src, o)
	}
	if errors.Is(err, cache.ErrNotCached) {
		return nil, errNoUnpacker
	}
	if err != nil {
		return nil, err
	}
	return u.indexTar(cf, key, o)
}

// exclusive holds the indexing of the archive src until the returned
// release is called: a burst of generations of one Application set waits
// for the first instead of hashing the tar N times.
func (u *Unpacker) exclusive(src string) (release func()) {
	u.mu.Lock()
	l := u.inflight[src]
	if l == nil {
		l = &inflight{}
		u.inflight[src] = l
	}
	l.users++
	u.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		u.mu.Lock()
		if l.users--; l.users == 0 {
			delete(u.inflight, src)
		}
		u.mu.Unlock()
	}
}

// takeGuess takes the guessed tar when its hint is the archive's digest
// src, and returns the hint ("" without a guess). What is not taken goes
// back to the channel, for closeUntaken.
func takeGuess(guess chan guessedTar, src string) (*cache.File, string) {
	if guess == nil {
		return nil, ""
	}
	var cf *cache.File
	g := <-guess
	if g.f != nil && g.src == src {
		cf, g.f = g.f, nil
		if testHookGuessTaken != nil {
			testHookGuessTaken()
		}
	}
	guess <- g
	return cf, g.src
}

// closeUntaken closes the guessed tar unless open took it.
func closeUntaken(guess chan guessedTar) {
	if g := <-guess; g.f != nil {
		g.f.Close() // not taken
	}
}

// unpackTar gunzips f into the cache entry of the archive digest src.
func unpackTar(ctx context.Context, f *os.File, src string, o options) (*cache.File, error) {
	return o.cache.Derived(ctx, derivedKind, src, func(ctx context.Context, w io.Writer) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		return gunzipTo(ctx, w, f, o)
	})
}

// indexTar indexes the unpacked tar cf and remembers it under key when its
// file has an identity, so that the next open skips the indexing.
func (u *Unpacker) indexTar(cf *cache.File, key string, o options) (*tarStore, error) {
	ts := &tarStore{f: cf.File}
	if err := ts.index(o); err != nil {
		ts.close()
		return nil, err
	}
	if fi, err := cf.Stat(); err == nil {
		if id, ok := identity(fi); ok {
			u.remember(key, &tarMemo{path: cf.Name(), id: id, size: fi.Size(), entries: ts.entries})
		}
	}
	return ts, nil
}

// remembered opens a tar indexed before, when its cache file is the very
// file verified then (same identity) and within this open's limits.
func (u *Unpacker) remembered(src string, o options) (*tarStore, bool) {
	u.mu.Lock()
	m := u.indexes[src]
	u.mu.Unlock()
	if m == nil || m.size > o.maxSize || len(m.entries) > o.maxEntries {
		return nil, false
	}
	f, err := os.Open(m.path)
	if err != nil {
		return nil, false
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false
	}
	if id, ok := identity(fi); !ok || id != m.id {
		f.Close()
		return nil, false
	}
	return &tarStore{f: f, entries: m.entries}, true
}

func (u *Unpacker) remember(src string, m *tarMemo) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.indexes[src]; !ok {
		u.order = append(u.order, src)
	}
	u.indexes[src] = m
	if len(u.order) > maxRememberedIndexes {
		delete(u.indexes, u.order[0])
		u.order = u.order[1:]
	}
}

var errNoUnpacker = errors.New("no unpack cache")

// testHookGunzip, when set, is called at the start of every decompression
// (tests count them).
var testHookGunzip func()

// gunzipTo decompresses the tgz r into w within the archive limits and ctx.
func gunzipTo(ctx context.Context, w io.Writer, r io.Reader, o options) error {
	if testHookGunzip != nil {
		testHookGunzip()
	}
	in := &counting.Reader{R: &ctxReader{ctx: ctx, r: r}}
	zr, err := gzip.NewReader(bufio.NewReader(in))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: gzip: %v", errdef.ErrInvalidInput, err)
	}
	n, err := io.Copy(w, &ratioReader{r: io.LimitReader(zr, o.maxSize+1), in: in})
	switch {
	case err == nil && n > o.maxSize:
		return fmt.Errorf("%w: archive is larger than %d bytes uncompressed", errdef.ErrLimitExceeded, o.maxSize)
	case err == nil, errors.Is(err, errdef.ErrLimitExceeded):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return fmt.Errorf("%w: gzip: %v", errdef.ErrInvalidInput, err)
	}
}

// ctxReader fails reads once ctx is done (a tgz of gigabytes takes seconds
// to unpack; the render's deadline covers it).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("unpacking the archive: %w", err)
	}
	return c.r.Read(p)
}

// fileID identifies a file and its version.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime time.Time
}

// guessedTar is the verified cache entry of the tar that the hint src names
// (f nil on a miss).
type guessedTar struct {
	src string
	f   *cache.File
}

// guessTar starts verifying, on another goroutine, the unpacked tar that
// the cache's hint for f's key names, when this Unpacker does not
// remember f: the channel then yields one guessedTar (and takes it back).
// hintKey is the key to record f's digest under ("" without an identity).
func (u *Unpacker) guessTar(f *os.File, o options) (string, chan guessedTar) {
	fi, err := f.Stat()
	if err != nil {
		return "", nil
	}
	ak, ok := keyOf(f, fi, o)
	if !ok {
		return "", nil
	}
	u.mu.Lock()
	_, known := u.archives[ak]
	u.mu.Unlock()
	if known {
		return "", nil
	}
	key := ak.hintKey()
	hint, ok := o.cache.Hint(hintKind, key)
	if !ok {
		return key, nil
	}
	ch := make(chan guessedTar, 1)
	go func() {
		cf, ok := o.cache.DerivedLookup(derivedKind, hint)
		if !ok {
			cf = nil
		}
		ch <- guessedTar{src: hint, f: cf}
	}()
	return key, ch
}

// hintKey is k as the text of a cache hint's key: the file's identity and
// (hashed) its origin, so that another Application's file with the same
// identity does not make a process verify a tar for nothing.
func (k archiveKey) hintKey() string {
	sum := sha256.Sum256([]byte(k.origin))
	id := k.id
	return fmt.Sprintf("%x:%d:%d:%d:%d:%d", sum[:16], id.dev, id.ino, id.size, id.mtime.UnixNano(), id.ctime.UnixNano())
}

// testHookGuessTaken, when set, is called when an open takes the tar it
// verified on a hint.
var testHookGuessTaken func()
