package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/counting"
)

// ErrNotCached is returned by Derived when the cache is disabled or cannot
// hold the product: the caller produces it without the cache.
var ErrNotCached = errors.New("not cached")

// kindRE is what a kind of derived content may be named.
var kindRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`) })

// ProduceFunc writes content derived from a source blob (the unpacked tar of
// a tgz, say) to w. It must stop with ctx.
type ProduceFunc func(ctx context.Context, w io.Writer) error

// Derived returns content of the given kind derived from the content with
// digest src, producing it with produce at most once across goroutines and
// processes sharing the cache directory. The product is stored like a
// fetched blob, under its own SHA-256 digest (so it is verified on every
// read, counted against the cache's size and evicted like any entry), and a
// link <dir>/derived/<kind>/<alg>/<hex of src> names that digest. A link to
// an evicted or corrupt entry is a miss.
//
// Derived returns ErrNotCached without producing anything when the cache is
// disabled, and a file of the product outside the cache (already deleted
// from the file system, readable through the handle) when it is larger than
// the cache's cap or cannot be stored. Errors of produce are returned as
// they are.
func (c *Cache) Derived(ctx context.Context, kind, src string, produce ProduceFunc) (*File, error) {
	if !kindRE().MatchString(kind) {
		return nil, fmt.Errorf("derived content kind %s", errdef.Quote(kind))
	}
	alg, h, err := parse(src)
	if err != nil {
		return nil, err
	}
	if !c.Enabled() {
		return nil, ErrNotCached
	}
	link := filepath.Join(c.root, "derived", kind, alg, h)
	if f, ok := c.derivedHit(link); ok {
		return f, nil
	}
	key := "derived/" + kind + "/" + src
	prefix := "derived-" + kind + "-" + alg + "-" + h + "."
	unlock, err := c.lockKey(ctx, key, c.tempStallDetector(prefix))
	switch {
	case errors.Is(err, errLockTimeout):
		c.o.logger.Warn("another production of derived content makes no progress, producing it without caching", "kind", kind, "source", src)
		return c.produceUncached(ctx, produce)
	case err != nil:
		return nil, err
	}
	defer unlock()
	if f, ok := c.derivedHit(link); ok {
		return f, nil
	}
	lockPath := filepath.Join(LockDir(c.root), alg, h+"."+kind)
	fl, err := lockFile(ctx, lockPath, c.o.lockTimeout, c.tempStallDetector(prefix))
	switch {
	case errors.Is(err, errLockTimeout):
		c.o.logger.Warn("another process's production of derived content makes no progress, producing it without caching", "kind", kind, "source", src)
		return c.produceUncached(ctx, produce)
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		c.disable(err)
		return nil, ErrNotCached
	}
	defer fl.unlock()
	if f, ok := c.derivedHit(link); ok {
		return f, nil
	}
	c.removeTemps(prefix)
	tmp, n, dgst, err := c.produceTemp(ctx, prefix, produce)
	if err != nil {
		return nil, err
	}
	return c.storeDerived(tmp, n, dgst, link, kind, src), nil
}

// produceTemp writes the product to a new temporary file of the cache and
// returns it, read from its start, with its size and digest. On an error the
// file is gone.
func (c *Cache) produceTemp(ctx context.Context, prefix string, produce ProduceFunc) (*os.File, int64, string, error) {
	tmp, err := os.CreateTemp(filepath.Join(c.root, "tmp"), prefix+"*")
	if err != nil {
		c.disable(err)
		return nil, 0, "", ErrNotCached
	}
	hash := sha256.New()
	w := &trackingWriter{f: tmp}
	cw := &counting.Writer{W: io.MultiWriter(w, hash)}
	if err := produce(ctx, cw); err != nil {
		if w.err != nil {
			c.disable(w.err)
		}
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, 0, "", err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, 0, "", err
	}
	return tmp, cw.N, "sha256:" + hex.EncodeToString(hash.Sum(nil)), nil
}

// storeDerived moves the product tmp (n bytes of digest dgst) into the cache
// under its digest, links it from link, and returns it opened under its name
// in the cache. A product larger than the cache's cap, or one that cannot be
// stored, is returned as tmp, its name removed.
func (c *Cache) storeDerived(tmp *os.File, n int64, dgst, link, kind, src string) *File {
	uncached := func() *File {
		// The handle stays readable; the name goes now.
		os.Remove(tmp.Name())
		return &File{File: tmp, size: n}
	}
	if n > c.o.maxSize {
		return uncached()
	}
	final, _ := c.Path(dgst)
	if err := tmp.Sync(); err != nil {
		return uncached()
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return uncached()
	}
	c.added(n)
	if err := writeLink(c.root, link, dgst, n); err != nil {
		c.o.logger.Warn("cannot record derived content in the cache", "kind", kind, "source", src, "cause", err.Error())
	}
	c.o.logger.Debug("derived content produced and stored", "kind", kind, "source", src, "digest", dgst, "bytes", n)
	// Under its name in the cache (tmp's name is gone).
	f, err := openRegular(final, os.O_RDONLY, 0)
	if err != nil {
		return &File{File: tmp, size: n}
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return &File{File: f, size: n}
}

// derivedHit opens the verified entry a link names.
func (c *Cache) derivedHit(link string) (*File, bool) {
	b, err := readSmall(link, 256)
	if err != nil {
		return nil, false
	}
	dgst, sizeText, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	size, serr := strconv.ParseInt(sizeText, 10, 64)
	if !ok || serr != nil || size < 0 {
		os.Remove(link)
		return nil, false
	}
	f, ok := c.Get(dgst, size)
	if !ok {
		return nil, false
	}
	if fi, err := os.Stat(link); err == nil && time.Since(fi.ModTime()) > touchInterval {
		now := time.Now()
		os.Chtimes(link, now, now)
	}
	return f, true
}

// writeLink records "<digest> <size>" at link, atomically.
func writeLink(root, link, dgst string, size int64) error {
	return writeSmall(root, link, fmt.Sprintf("%s %d\n", dgst, size))
}

// writeSmall writes content to p atomically: into a temporary file of the
// cache's tmp directory, renamed to p.
func writeSmall(root, p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(root, "tmp"), "small-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// produceUncached produces into a temporary file outside the cache.
func (c *Cache) produceUncached(ctx context.Context, produce ProduceFunc) (*File, error) {
	tmp, err := os.CreateTemp(filepath.Join(c.root, "tmp"), "uncached-*")
	if err != nil {
		return nil, ErrNotCached
	}
	os.Remove(tmp.Name())
	cw := &counting.Writer{W: tmp}
	if err := produce(ctx, cw); err != nil {
		tmp.Close()
		return nil, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return nil, err
	}
	return &File{File: tmp, size: cw.N}, nil
}

// tempStallDetector reports whether the temporary files whose names start
// with prefix have stopped growing (see stallDetector).
func (c *Cache) tempStallDetector(prefix string) func(time.Time) bool {
	var last int64 = -1
	since := time.Now()
	return func(now time.Time) bool {
		n := c.tempBytes(prefix)
		if last < 0 || n-last >= minLockProgress || n < last {
			last, since = n, now
			return false
		}
		return now.Sub(since) >= lockStall
	}
}

// DerivedLookup returns the stored content of the given kind derived from
// src, verified as Get verifies it, without producing it or waiting for a
// production: a miss is false.
func (c *Cache) DerivedLookup(kind, src string) (*File, bool) {
	if !kindRE().MatchString(kind) || !c.Enabled() {
		return nil, false
	}
	alg, h, err := parse(src)
	if err != nil {
		return nil, false
	}
	return c.derivedHit(filepath.Join(c.root, "derived", kind, alg, h))
}

// maxHint bounds a hint's value; hintSlots the hints kept of a kind (a
// hint takes the slot of its key's hash, replacing the one there), so that
// hints never grow the cache.
const (
	maxHint   = 256
	hintSlots = 256
)

// Hint returns the note SetHint kept for key, if it is still there. A hint
// is not verified: a caller uses it only to start work it checks
// afterwards (such as verifying the entry a digest names while that digest
// is computed).
func (c *Cache) Hint(kind, key string) (string, bool) {
	if !kindRE().MatchString(kind) || !c.Enabled() {
		return "", false
	}
	b, err := readSmall(c.hintPath(kind, key), len(key)+1+maxHint)
	if err != nil {
		return "", false
	}
	k, v, ok := strings.Cut(string(b), "\x00")
	if !ok || k != key {
		return "", false
	}
	return v, true
}

// SetHint keeps value (at most 256 bytes) as the note for key, atomically;
// best effort.
func (c *Cache) SetHint(kind, key, value string) {
	if !kindRE().MatchString(kind) || !c.Enabled() || len(value) > maxHint || strings.Contains(key, "\x00") {
		return
	}
	writeSmall(c.root, c.hintPath(kind, key), key+"\x00"+value) // best effort
}

func (c *Cache) hintPath(kind, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(c.root, "hints", kind, strconv.Itoa(int(sum[0])%hintSlots))
}
