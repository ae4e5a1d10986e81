package cache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

// Derived content is produced once and then served verified from the
// cache; a product over the cap is handed out without being stored; a
// disabled cache produces nothing; a failed production stores nothing.
func TestDerived(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := Open(dir, WithMaxSize(1<<20), WithLogger(slog.New(slog.DiscardHandler)))
	src := blob.Digest([]byte("source"))
	produced := 0
	product := bytes.Repeat([]byte("derived "), 1000)
	produce := func(_ context.Context, w io.Writer) error { produced++; _, err := w.Write(product); return err }
	for i := 0; i < 3; i++ {
		f, err := c.Derived(ctx, "test-kind", src, produce)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(f)
		f.Close()
		if !bytes.Equal(got, product) || f.Size() != int64(len(product)) {
			t.Fatalf("read %d bytes (size %d)", len(got), f.Size())
		}
	}
	if produced != 1 {
		t.Fatalf("produced %d times, want 1", produced)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", blob.Digest(product)[len("sha256:"):])); err != nil {
		t.Fatalf("product not stored under its digest: %v", err)
	}
	// Over the cap: handed out, not stored.
	big := bytes.Repeat([]byte("x"), 2<<20)
	f, err := c.Derived(ctx, "test-kind", blob.Digest([]byte("big")), func(_ context.Context, w io.Writer) error { _, err := w.Write(big); return err })
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if !bytes.Equal(got, big) {
		t.Fatalf("big product: read %d bytes", len(got))
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", blob.Digest(big)[len("sha256:"):])); err == nil {
		t.Fatal("a product over the cap was stored")
	}
	// A failing production stores nothing and returns its error.
	boom := errors.New("boom")
	fail := blob.Digest([]byte("fail"))
	if _, err := c.Derived(ctx, "test-kind", fail, func(_ context.Context, w io.Writer) error { w.Write([]byte("partial")); return boom }); !errors.Is(err, boom) {
		t.Fatalf("failing production: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "derived", "test-kind", "sha256", fail[len("sha256:"):])); err == nil {
		t.Fatal("a failed production left a link")
	}
	// Disabled, or a bad kind.
	if _, err := Disabled().Derived(ctx, "test-kind", src, produce); !errors.Is(err, ErrNotCached) {
		t.Fatalf("disabled cache: %v", err)
	}
	if _, err := c.Derived(ctx, "../x", src, produce); err == nil {
		t.Fatal("kind with a path accepted")
	}
}
