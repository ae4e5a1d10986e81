package cache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

// Vouch names a source that served the content of Digest, read with
// Credential, and whose bytes were verified against the digest: a proof of
// possession. The blob cache is content-addressed and shared by every
// tenant; a caller that must not be served an entry merely because it knows
// (or was handed) a digest asks FetchVouched, which serves the entry only to
// a vouch recorded before and otherwise reads the source and verifies it.
type Vouch struct {
	Credential string // the registry client's credential key
	Source     string // registry/repository, or a chart URL
	Digest     string
}

// Vouches are empty files under vouches/<xx>/<name>, name the SHA-256 of the
// length-prefixed fields (no two vouches share one) and <xx> its first byte:
// 256 directories of at most vouchesPerDir files, so that a tenant naming digest after digest
// never grows them (65,536 vouches, inodes without data blocks). A full
// directory drops its least recently used quarter; a lost vouch costs one
// download of the blob from its source.
const vouchesPerDir = 256

func (v Vouch) name() string {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{"vouch/v1", v.Credential, v.Source, v.Digest} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Cache) vouchPath(v Vouch) string {
	n := v.name()
	return filepath.Join(c.root, "vouches", n[:2], n)
}

// Vouched reports whether v was recorded (Vouch): one stat. A hit refreshes
// the vouch's modification time (at most once a minute) for the bound.
func (c *Cache) Vouched(v Vouch) bool {
	if !c.Enabled() {
		return false
	}
	p := c.vouchPath(v)
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if time.Since(fi.ModTime()) > touchInterval {
		now := time.Now()
		os.Chtimes(p, now, now) // best effort, like Get
	}
	return true
}

// Vouch records v, atomically (a temporary file renamed into place). Only
// what verified v's digest from v's source may call it; FetchVouched does.
// Failures are ignored: a missing vouch costs one download. A vouch
// already recorded costs a stat.
func (c *Cache) Vouch(v Vouch) {
	if !c.Enabled() {
		return
	}
	if _, _, err := parse(v.Digest); err != nil || c.Vouched(v) {
		return
	}
	p := c.vouchPath(v)
	if err := writeSmall(c.root, p, ""); err != nil {
		c.o.logger.Debug("vouch not recorded", "digest", v.Digest, "cause", err.Error())
		return
	}
	c.boundVouches(filepath.Dir(p))
}

// boundVouches keeps dir at most vouchesPerDir vouches, dropping the least
// recently used quarter when it is over.
func (c *Cache) boundVouches(dir string) {
	des, err := os.ReadDir(dir)
	if err != nil || len(des) <= vouchesPerDir {
		return
	}
	type entry struct {
		name  string
		mtime time.Time
	}
	ents := make([]entry, 0, len(des))
	for _, de := range des {
		if fi, err := de.Info(); err == nil {
			ents = append(ents, entry{de.Name(), fi.ModTime()})
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].mtime.Before(ents[j].mtime) })
	for i := 0; i < len(ents)-vouchesPerDir*3/4; i++ {
		os.Remove(filepath.Join(dir, ents[i].name))
	}
}

// FetchVouched is Fetch for a caller that may be served a cached entry only
// with a proof that v's source serves it to v's credential. With v recorded
// (Vouched) it is Fetch. Otherwise fetch is read even when the digest is
// cached, and verified against the digest exactly as a miss is (bounded by
// the cached entry's size; a wrong byte, one too many or too few fails with
// errdef.ErrDigestMismatch); the cached entry is kept and returned, and v is
// recorded. A miss downloads, verifies and stores as Fetch does, and records
// v. Content that is not cached (a disabled cache, a blob over the cap, a
// download given up on) is streamed verified and records nothing.
func (c *Cache) FetchVouched(ctx context.Context, v Vouch, size int64, fetch FetchFunc) (io.ReadCloser, error) {
	if _, _, err := parse(v.Digest); err != nil {
		return nil, err
	}
	if !c.Enabled() || size > c.o.maxSize {
		return direct(ctx, v.Digest, size, fetch)
	}
	if c.Vouched(v) {
		return c.Fetch(ctx, v.Digest, size, fetch)
	}
	fetched := false // Fetch calls fetch on this goroutine
	rc, err := c.Fetch(ctx, v.Digest, size, func(ctx context.Context) (io.ReadCloser, error) {
		fetched = true
		return fetch(ctx)
	})
	if err != nil {
		return nil, err
	}
	f, stored := rc.(*File)
	switch {
	case fetched && stored: // downloaded, verified and stored
		c.Vouch(v)
		return rc, nil
	case fetched: // streamed, verified as it is read, not cached
		return rc, nil
	}
	// The cache answered: the source must serve the same bytes.
	if err := prove(ctx, v.Digest, f.Size(), fetch); err != nil {
		rc.Close()
		return nil, err
	}
	c.Vouch(v)
	return rc, nil
}

// prove reads fetch to its end, verifying that it is size bytes of dgst.
func prove(ctx context.Context, dgst string, size int64, fetch FetchFunc) error {
	rc, err := fetch(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	vr, err := blob.NewVerifier(rc, dgst, size)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, vr)
	return err
}
