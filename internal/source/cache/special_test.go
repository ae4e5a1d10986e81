//go:build unix

package cache

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

// promptly bounds what a miss may cost; a blocked open costs the whole
// deadline instead.
const promptly = time.Second

// plant replaces p with a file of the given kind that is not a regular
// file. A FIFO is opened for writing at cleanup, so that a reader blocked
// on it (the failure this guards against) is released.
func plant(t *testing.T, p, kind string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := func(p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		})
	}
	switch kind {
	case "fifo":
		fifo(p)
	case "symlink to a fifo":
		target := filepath.Join(t.TempDir(), "fifo")
		fifo(target)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	case "symlink to a device":
		if err := os.Symlink(os.DevNull, p); err != nil {
			t.Fatal(err)
		}
	case "directory":
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	case "socket":
		// A socket's path is short; the entry's name is given by rename.
		dir, err := os.MkdirTemp("", "s")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		l, err := net.Listen("unix", filepath.Join(dir, "s"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		if err := os.Rename(filepath.Join(dir, "s"), p); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown kind %s", kind)
	}
}

// read is what a read returned, handed back from within's goroutine.
type read struct {
	b   []byte
	err error
}

var plantedKinds = []string{"fifo", "symlink to a fifo", "symlink to a device", "directory", "socket"}

// within runs f, failing the test when it takes longer than promptly (f
// is left blocked then: the planted FIFO's cleanup releases it).
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	start := time.Now()
	go func() { done <- f() }()
	timer := time.NewTimer(promptly)
	defer timer.Stop()
	select {
	case v := <-done:
		t.Logf("%s: %v", what, time.Since(start))
		return v
	case <-timer.C:
		t.Fatalf("%s blocked for more than %v", what, promptly)
		panic("unreachable")
	}
}

// A blob entry replaced by anything but a regular file is a miss, found at
// once, and the blob is fetched and stored again.
func TestNonRegularBlobEntryIsAMiss(t *testing.T) {
	for _, kind := range plantedKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			c := Open(t.TempDir(), WithLogger(slog.New(slog.DiscardHandler)))
			data, dgst := randomBlob(t, 4096)
			src := &source{data: data}
			readAll(t)(c.Fetch(ctx, dgst, int64(len(data)), src.fetch))
			p, err := c.Path(dgst)
			if err != nil {
				t.Fatal(err)
			}
			plant(t, p, kind)
			if hit := within(t, "Get", func() bool { f, ok := c.Get(dgst, int64(len(data))); return ok && f.Close() == nil }); hit {
				t.Fatal("a non-regular entry was a hit")
			}
			plant(t, p, kind) // Get removed it; the generation meets it too
			got := within(t, "Fetch", func() read {
				rc, err := c.Fetch(ctx, dgst, int64(len(data)), src.fetch)
				if err != nil {
					return read{err: err}
				}
				defer rc.Close()
				b, err := io.ReadAll(rc)
				return read{b, err}
			})
			if got.err != nil || !bytes.Equal(got.b, data) || src.calls.Load() != 2 {
				t.Fatalf("read %d bytes (%v) after %d fetches", len(got.b), got.err, src.calls.Load())
			}
			if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("the entry was not stored again: %v %v", fi, err)
			}
		})
	}
}

// Derived links, hints and lock files are opened the same way.
func TestNonRegularDerivedFilesAreMisses(t *testing.T) {
	for _, kind := range plantedKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			c := Open(dir, WithLogger(slog.New(slog.DiscardHandler)))
			src := blob.Digest([]byte("source"))
			product := []byte("derived content")
			produced := 0
			produce := func(_ context.Context, w io.Writer) error { produced++; _, err := w.Write(product); return err }
			derive := func() read {
				f, err := c.Derived(ctx, "test-kind", src, produce)
				if err != nil {
					return read{err: err}
				}
				defer f.Close()
				b, err := io.ReadAll(f)
				return read{b, err}
			}
			h := src[len("sha256:"):]
			// The lock file of the production, then the link to the product.
			plant(t, filepath.Join(LockDir(dir), "sha256", h+".test-kind"), kind)
			if got := within(t, "Derived with a planted lock", derive); got.err != nil || !bytes.Equal(got.b, product) || !c.Enabled() {
				t.Fatalf("derived %q, %v (cache enabled: %v)", got.b, got.err, c.Enabled())
			}
			plant(t, filepath.Join(dir, "derived", "test-kind", "sha256", h), kind)
			if got := within(t, "Derived with a planted link", derive); got.err != nil || !bytes.Equal(got.b, product) || produced != 2 {
				t.Fatalf("derived %q, %v, produced %d times", got.b, got.err, produced)
			}
			c.SetHint("test-kind", "key", "value")
			plant(t, c.hintPath("test-kind", "key"), kind)
			if ok := within(t, "Hint", func() bool { _, ok := c.Hint("test-kind", "key"); return ok }); ok {
				t.Fatal("a planted hint was read")
			}
			c.SetHint("test-kind", "key", "value")
			if v, ok := c.Hint("test-kind", "key"); !ok || v != "value" {
				t.Fatalf("hint not kept again: %q %v", v, ok)
			}
		})
	}
}
