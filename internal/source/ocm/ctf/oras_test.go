package ctf_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	orasdef "oras.land/oras-go/v2/errdef"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
)

// The storage adapters are oras Targets.
var (
	_ oras.Target         = (*ctf.Storage)(nil)
	_ content.TagResolver = (*ctf.Storage)(nil)
)

func desc(mt string, b []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
}

// artifact is a small image: config, one layer, and its manifest.
func artifact(t *testing.T) (cfg, layer, manifest []byte, md ocispec.Descriptor) {
	t.Helper()
	cfg, layer = []byte(`{"name":"x"}`), []byte("layer content")
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config: desc("application/vnd.example.config+json", cfg), Layers: []ocispec.Descriptor{desc("application/vnd.example.layer", layer)}}
	m.SchemaVersion = 2
	manifest, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, layer, manifest, desc(ocispec.MediaTypeImageManifest, manifest)
}

func TestStoragePushFetchExistsResolveTag(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := ctf.OpenWriter(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	s := w.Storage("component-descriptors/example.com/app")
	cfg, layer, manifest, md := artifact(t)
	for _, b := range []struct {
		mt  string
		raw []byte
	}{{"application/vnd.example.config+json", cfg}, {"application/vnd.example.layer", layer}, {ocispec.MediaTypeImageManifest, manifest}} {
		d := desc(b.mt, b.raw)
		if ok, err := s.Exists(ctx, d); err != nil || ok {
			t.Fatalf("exists before push: %v %v", ok, err)
		}
		if err := s.Push(ctx, d, bytes.NewReader(b.raw)); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Exists(ctx, d); err != nil || !ok {
			t.Fatalf("exists after push: %v %v", ok, err)
		}
		got, err := content.FetchAll(ctx, s, d)
		if err != nil || !bytes.Equal(got, b.raw) {
			t.Fatalf("fetch: %q %v", got, err)
		}
	}
	if _, err := s.Resolve(ctx, "1.0.0"); !errors.Is(err, errdef.ErrNotFound) || !errors.Is(err, orasdef.ErrNotFound) {
		t.Fatalf("resolve before tag: %v", err)
	}
	if err := s.Tag(ctx, md, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Resolve(ctx, "1.0.0")
	if err != nil || !content.Equal(got, md) {
		t.Fatalf("resolve: %+v %v, want %+v", got, err, md)
	}
	if d, err := s.Resolve(ctx, md.Digest.String()); err != nil || d.Digest != md.Digest || d.Size != md.Size {
		t.Fatalf("resolve by digest: %+v %v", d, err)
	}
	// The tag is the repository's: another repository of the CTF lacks it,
	// but shares the blobs (a CTF is one blob store).
	other := w.Storage("other")
	if _, err := other.Resolve(ctx, "1.0.0"); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("other repository resolves the tag: %v", err)
	}
	if ok, _ := other.Exists(ctx, md); !ok {
		t.Fatal("the blob store is not shared")
	}
	// What the writer wrote, a reader of the CTF reads.
	repo := openCTF(t, dir)
	r := repo.Storage("component-descriptors/example.com/app")
	if got, err := r.Resolve(ctx, "1.0.0"); err != nil || !content.Equal(got, md) {
		t.Fatalf("reader resolve: %+v %v", got, err)
	}
	if ok, err := r.Exists(ctx, md); err != nil || !ok {
		t.Fatalf("reader exists: %v %v", ok, err)
	}
	if b, err := content.FetchAll(ctx, r, md); err != nil || !bytes.Equal(b, manifest) {
		t.Fatalf("reader fetch: %v", err)
	}
	if tags := r.Tags(); len(tags) != 1 || tags[0] != "1.0.0" {
		t.Fatalf("tags %v", tags)
	}
}

func openCTF(t *testing.T, p string) *ctf.Repository {
	t.Helper()
	repo, err := ctf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	r, ok := repo.(*ctf.Repository)
	if !ok {
		t.Fatalf("%T", repo)
	}
	return r
}

// Content that does not match its descriptor is refused and leaves no
// blob file; so is a push whose size is unknown, a fetch whose descriptor
// says another size, and a tag of a blob the CTF lacks.
func TestStorageRefusesMismatches(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := ctf.OpenWriter(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	s := w.Storage("repo")
	good := []byte("the content")
	d := desc("application/octet-stream", good)
	for name, tc := range map[string]struct {
		d    ocispec.Descriptor
		body []byte
		want error
	}{
		"other content":    {d, []byte("THE CONTENT"), errdef.ErrDigestMismatch},
		"shorter":          {d, good[:4], errdef.ErrDigestMismatch},
		"longer":           {d, append(append([]byte{}, good...), "!"...), errdef.ErrDigestMismatch},
		"size unknown":     {ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: -1}, good, errdef.ErrInvalidInput},
		"size understated": {ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: 3}, good, errdef.ErrDigestMismatch},
	} {
		if err := s.Push(ctx, tc.d, bytes.NewReader(tc.body)); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
		if ok, err := s.Exists(ctx, d); ok || err != nil {
			t.Errorf("%s: a blob file was kept (%v)", name, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, ctf.BlobsDir))
	if len(entries) != 0 {
		t.Errorf("blobs/ holds %d files after refused pushes", len(entries))
	}
	if err := s.Tag(ctx, d, "v1"); !errors.Is(err, errdef.ErrNotFound) {
		t.Errorf("tag of a missing blob: %v", err)
	}
	if err := s.Push(ctx, d, bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	wrong := d
	wrong.Size++
	if _, err := s.Fetch(ctx, wrong); !errors.Is(err, errdef.ErrDigestMismatch) {
		t.Errorf("fetch with another size: %v", err)
	}
	// A blob file whose content is not its digest's is a conflict, and
	// stays as it is.
	p := filepath.Join(dir, ctf.BlobsDir, strings.Replace(d.Digest.String(), ":", ".", 1))
	if err := os.WriteFile(p, []byte("THE CONTENT"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exists(ctx, d); !errors.Is(err, errdef.ErrConflict) {
		t.Errorf("exists of a corrupt blob file: %v", err)
	}
	// A digest that is not one never names a file.
	if _, err := s.Fetch(ctx, ocispec.Descriptor{Digest: "sha256:../../etc/passwd", Size: 1}); err == nil {
		t.Error("fetch of a non-digest succeeded")
	}
}

// A CTF opened for reading (any form) is read only.
func TestStorageReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := ctf.OpenWriter(dir, "test"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ctf.IndexFileName), []byte(`{"schemaVersion":1,"artifacts":[]}`), 0o644)
	s := openCTF(t, dir).Storage("repo")
	b := []byte("x")
	if err := s.Push(ctx, desc("application/octet-stream", b), bytes.NewReader(b)); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("push: %v", err)
	}
	if err := s.Tag(ctx, desc("application/octet-stream", b), "v1"); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("tag: %v", err)
	}
}

// oras.Copy copies an artifact into a CTF (tagged) and out of it again,
// in directory and tgz form, as between registries.
func TestStorageWithOrasCopy(t *testing.T) {
	ctx := context.Background()
	cfg, layer, manifest, md := artifact(t)
	src := memory.New()
	for _, b := range []struct {
		d   ocispec.Descriptor
		raw []byte
	}{{desc("application/vnd.example.config+json", cfg), cfg}, {desc("application/vnd.example.layer", layer), layer}, {md, manifest}} {
		if err := src.Push(ctx, b.d, bytes.NewReader(b.raw)); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Tag(ctx, md, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ctf")
	w, err := ctf.OpenWriter(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	var copied atomic.Int32 // oras copies concurrently
	opts := oras.CopyOptions{CopyGraphOptions: oras.CopyGraphOptions{PostCopy: func(context.Context, ocispec.Descriptor) error { copied.Add(1); return nil }}}
	if _, err := oras.Copy(ctx, src, "1.0.0", w.Storage("app"), "1.0.0", opts); err != nil {
		t.Fatal(err)
	}
	if n := copied.Load(); n != 3 {
		t.Errorf("copied %d nodes, want 3", n)
	}
	// Again: everything is there, nothing is copied (a resumed transfer).
	copied.Store(0)
	if _, err := oras.Copy(ctx, src, "1.0.0", w.Storage("app"), "1.0.0", opts); err != nil || copied.Load() != 0 {
		t.Errorf("second copy: %d nodes, %v", copied.Load(), err)
	}
	tgz := filepath.Join(t.TempDir(), "ctf.tgz")
	if err := ctf.Pack(dir, tgz, true); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, tgz} {
		dst := memory.New()
		got, err := oras.Copy(ctx, openCTF(t, p).Storage("app"), "1.0.0", dst, "", oras.DefaultCopyOptions)
		if err != nil || !content.Equal(got, md) {
			t.Fatalf("%s: copy out: %+v %v", p, got, err)
		}
		if b, err := content.FetchAll(ctx, dst, desc("application/vnd.example.layer", layer)); err != nil || !bytes.Equal(b, layer) {
			t.Errorf("%s: layer: %v", p, err)
		}
	}
}
