package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

func readVouched(t *testing.T, c *Cache, v Vouch, size int64, fetch FetchFunc) []byte {
	t.Helper()
	return readAll(t)(c.FetchVouched(context.Background(), v, size, fetch))
}

// TestFetchVouchedNeedsTheSource: an entry another source put into the
// cache is served to a vouch only after its own source served the same
// bytes; a source serving other bytes (of any length) gets a digest
// mismatch and no vouch, and the entry stays. Once vouched, the cache
// answers alone, also after a restart.
func TestFetchVouchedNeedsTheSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := Open(dir)
	data, dgst := randomBlob(t, 4096)
	if err := c.Put(ctx, dgst, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	b := Vouch{Credential: "anonymous", Source: "evil.example/x", Digest: dgst}
	for _, lie := range [][]byte{bytes.Repeat([]byte{'x'}, len(data)), data[:len(data)-1], append(append([]byte(nil), data...), 0), nil} {
		liar := &source{data: lie}
		rc, err := c.FetchVouched(ctx, b, -1, liar.fetch)
		if err == nil {
			rc.Close()
		}
		if !errors.Is(err, errdef.ErrDigestMismatch) || liar.calls.Load() != 1 {
			t.Fatalf("%d lying bytes: %v after %d fetches, want a digest mismatch after one", len(lie), err, liar.calls.Load())
		}
		if c.Vouched(b) {
			t.Fatal("a lying source was vouched for")
		}
	}
	if f, ok := c.Get(dgst, int64(len(data))); !ok {
		t.Fatal("the cached entry was lost to a lying source")
	} else {
		f.Close()
	}

	honest := &source{data: data}
	a := Vouch{Credential: "scope\x00a", Source: "registry.example/a", Digest: dgst}
	for i := range 3 {
		if got := readVouched(t, c, a, int64(len(data)), honest.fetch); !bytes.Equal(got, data) {
			t.Fatalf("read %d: wrong content", i)
		}
		if n := honest.calls.Load(); n != 1 {
			t.Fatalf("read %d: %d fetches, want 1 (the proof)", i, n)
		}
	}
	// A restart (another process) keeps the vouch.
	c2 := Open(dir)
	if !c2.Vouched(a) || c2.Vouched(b) {
		t.Fatal("vouches did not persist as recorded")
	}
	if got := readVouched(t, c2, a, -1, honest.fetch); !bytes.Equal(got, data) || honest.calls.Load() != 1 {
		t.Fatalf("after a restart: %d fetches", honest.calls.Load())
	}
}

// TestFetchVouchedMiss: a miss downloads once and vouches; a lying source
// on a miss stores and vouches nothing.
func TestFetchVouchedMiss(t *testing.T) {
	ctx := context.Background()
	c := Open(t.TempDir())
	data, dgst := randomBlob(t, 1000)
	liar := &source{data: bytes.Repeat([]byte{'y'}, 1000)}
	v := Vouch{Credential: "anonymous", Source: "r/x", Digest: dgst}
	if _, err := c.FetchVouched(ctx, v, -1, liar.fetch); !errors.Is(err, errdef.ErrDigestMismatch) {
		t.Fatalf("lying source on a miss: %v", err)
	}
	if c.Vouched(v) {
		t.Fatal("vouched a lying source")
	}
	if f, ok := c.Get(dgst, -1); ok {
		f.Close()
		t.Fatal("stored a lying source's bytes")
	}
	src := &source{data: data}
	for range 2 {
		if got := readVouched(t, c, v, -1, src.fetch); !bytes.Equal(got, data) {
			t.Fatal("wrong content")
		}
	}
	if src.calls.Load() != 1 || !c.Vouched(v) {
		t.Fatalf("%d fetches, vouched %v; want one and vouched", src.calls.Load(), c.Vouched(v))
	}
}

// TestVouchNames: the fields are length-prefixed, so moving a byte from one
// field to the next names another vouch.
func TestVouchNames(t *testing.T) {
	c := Open(t.TempDir())
	d := "sha256:" + strings.Repeat("a", 64)
	c.Vouch(Vouch{Credential: "ab", Source: "c", Digest: d})
	for _, v := range []Vouch{{"a", "bc", d}, {"abc", "", d}, {"", "abc", d}, {"ab", "c", "sha256:" + strings.Repeat("b", 64)}} {
		if c.Vouched(v) {
			t.Errorf("%q vouched by another", v)
		}
	}
	if !c.Vouched(Vouch{Credential: "ab", Source: "c", Digest: d}) {
		t.Fatal("not vouched")
	}
	c.Vouch(Vouch{Credential: "x", Source: "y", Digest: "sha256:../../x"})
	if c.Vouched(Vouch{Credential: "x", Source: "y", Digest: "sha256:../../x"}) {
		t.Fatal("vouched a name that is no digest")
	}
	if Disabled().Vouched(Vouch{Credential: "ab", Source: "c", Digest: d}) {
		t.Fatal("a disabled cache vouches")
	}
}

// TestVouchesAreBounded: a tenant naming digest after digest (here all in
// one directory, the worst case) never keeps more than vouchesPerDir
// vouches in it; the least recently used go first.
func TestVouchesAreBounded(t *testing.T) {
	c := Open(t.TempDir())
	var vs []Vouch
	for i := 0; len(vs) < vouchesPerDir*2; i++ {
		v := Vouch{Credential: "anonymous", Source: fmt.Sprintf("evil.example/r%d", i), Digest: "sha256:" + strings.Repeat("c", 64)}
		if strings.HasPrefix(v.name(), "00") {
			vs = append(vs, v)
		}
	}
	base := time.Now().Add(-time.Hour)
	for i, v := range vs {
		c.Vouch(v)
		// Distinct times, oldest first (a file system may not tell
		// writes of one millisecond apart).
		os.Chtimes(c.vouchPath(v), base.Add(time.Duration(i)*time.Second), base.Add(time.Duration(i)*time.Second))
	}
	ents, err := os.ReadDir(filepath.Join(c.Dir(), "vouches", "00"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) > vouchesPerDir || len(ents) < vouchesPerDir*3/4 {
		t.Fatalf("%d vouches in one directory, want at most %d (and more than %d kept)", len(ents), vouchesPerDir, vouchesPerDir*3/4)
	}
	if !c.Vouched(vs[len(vs)-1]) || c.Vouched(vs[0]) {
		t.Fatal("the newest vouch was dropped, or the oldest kept")
	}
	dirs, err := os.ReadDir(filepath.Join(c.Dir(), "vouches"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("%d vouch directories, %v", len(dirs), err)
	}
}
