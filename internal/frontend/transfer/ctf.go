package transfer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// ctfDir is a CTF target in directory form, written through ctf.Writer
// (blobs verified and renamed into place, the index rewritten atomically
// after every tagged manifest): an interrupted transfer leaves a CTF that
// holds what was finished.
type ctfDir struct {
	w    *ctf.Writer
	name string // how messages call it
}

func openCTFDir(dir, name string) (*ctfDir, error) {
	w, err := ctf.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return &ctfDir{w: w, name: name}, nil
}

func (c *ctfDir) Resolve(_ context.Context, repo, tag string) (ocispec.Descriptor, error) {
	desc, err := resolveIn(c.w.Artifacts(), c.name, repo, tag)
	if err == nil {
		if fi, err := c.w.Stat(desc.Digest.String()); err == nil {
			desc.Size = fi.Size()
		}
	}
	return desc, err
}

// resolveIn returns the descriptor (size unknown) of what repo:tag names in
// the index entries of the CTF name.
func resolveIn(arts []ctf.IndexArtifact, name, repo, tag string) (ocispec.Descriptor, error) {
	for _, a := range arts {
		if a.Repository == repo && a.Tag == tag {
			d, err := blob.Normalize(a.Digest)
			if err != nil {
				return ocispec.Descriptor{}, fmt.Errorf("%w: CTF %s: %s:%s has digest %q", errdef.ErrInvalidDescriptor, name, repo, tag, a.Digest)
			}
			mt := a.MediaType
			if mt == "" {
				mt = ocispec.MediaTypeImageManifest
			}
			return ocispec.Descriptor{MediaType: mt, Digest: digest.Digest(d), Size: -1}, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s:%s %w in CTF %s", repo, tag, errdef.ErrNotFound, name)
}

func (c *ctfDir) Fetch(_ context.Context, _ string, d ocispec.Descriptor) (io.ReadCloser, error) {
	return c.w.Open(d.Digest.String())
}

// Exists: see ctf.Writer.Has (a blob file with other content is a conflict).
func (c *ctfDir) Exists(_ context.Context, _ string, d ocispec.Descriptor) (bool, error) {
	return c.w.Has(d.Digest.String(), d.Size)
}

func (c *ctfDir) Push(_ context.Context, _ string, d ocispec.Descriptor, r io.Reader) error {
	return c.w.PutBlob(d.Digest.String(), d.Size, r)
}

func (c *ctfDir) PushManifest(ctx context.Context, repo string, d ocispec.Descriptor, b []byte, tag string) error {
	ok, err := c.Exists(ctx, repo, d)
	if err != nil {
		return err
	}
	if !ok {
		if err := c.Push(ctx, repo, d, bytes.NewReader(b)); err != nil {
			return err
		}
	}
	if tag == "" {
		return nil
	}
	return c.w.Tag(repo, tag, d.Digest.String(), d.MediaType)
}

func (c *ctfDir) Commit(bool) error   { return nil }
func (c *ctfDir) Close() error        { return nil }
func (c *ctfDir) Registry() *location { return nil }
func (c *ctfDir) String() string      { return c.name }

// ctfArchive is a CTF target in tar or tgz form. It reads the existing
// archive (if any) until the first write; then it works in a staging
// directory next to it (<file>.transfer), which an interrupted transfer
// leaves behind and the next run resumes from; Commit packs the staging
// directory into the archive (written beside it and renamed) and removes it.
// An archive that needs nothing new is not rewritten.
type ctfArchive struct {
	path     string
	gz       bool
	existing *ctfReader // the archive as it is, nil if none
	staging  *ctfDir    // nil until the first write
}

func stagingDir(p string) string { return p + ".transfer" }

func openCTFArchive(p string) (*ctfArchive, error) {
	a := &ctfArchive{path: p, gz: !strings.HasSuffix(strings.ToLower(p), ".tar")}
	if _, err := os.Stat(stagingDir(p)); err == nil {
		s, err := openCTFDir(stagingDir(p), p)
		if err != nil {
			return nil, err
		}
		a.staging = s // resume an interrupted transfer
		return a, nil
	}
	if _, err := os.Stat(p); err == nil {
		r, err := openCTFReader(p)
		if err != nil {
			return nil, err
		}
		a.existing = r
	}
	return a, nil
}

func (a *ctfArchive) reader() store {
	if a.staging != nil {
		return a.staging
	}
	if a.existing != nil {
		return a.existing
	}
	return emptyStore{name: a.path}
}

func (a *ctfArchive) Resolve(ctx context.Context, repo, tag string) (ocispec.Descriptor, error) {
	return a.reader().Resolve(ctx, repo, tag)
}

func (a *ctfArchive) Fetch(ctx context.Context, repo string, d ocispec.Descriptor) (io.ReadCloser, error) {
	return a.reader().Fetch(ctx, repo, d)
}

func (a *ctfArchive) Exists(ctx context.Context, repo string, d ocispec.Descriptor) (bool, error) {
	return a.reader().Exists(ctx, repo, d)
}

func (a *ctfArchive) write() (*ctfDir, error) {
	if a.staging != nil {
		return a.staging, nil
	}
	dir := stagingDir(a.path)
	if err := os.MkdirAll(filepath.Join(dir, ctf.BlobsDir), 0o755); err != nil {
		return nil, fmt.Errorf("CTF %s: staging directory: %w", a.path, err)
	}
	if a.existing != nil {
		if err := ctf.Extract(a.path, dir); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	s, err := openCTFDir(dir, a.path)
	if err != nil {
		return nil, err
	}
	a.staging = s
	return s, nil
}

func (a *ctfArchive) Push(ctx context.Context, repo string, d ocispec.Descriptor, r io.Reader) error {
	s, err := a.write()
	if err != nil {
		return err
	}
	return s.Push(ctx, repo, d, r)
}

func (a *ctfArchive) PushManifest(ctx context.Context, repo string, d ocispec.Descriptor, b []byte, tag string) error {
	s, err := a.write()
	if err != nil {
		return err
	}
	return s.PushManifest(ctx, repo, d, b, tag)
}

// Commit packs the staging directory into the archive when this run or an
// interrupted one wrote anything.
func (a *ctfArchive) Commit(bool) error {
	if a.staging == nil {
		return nil
	}
	if a.existing != nil {
		a.existing.Close()
		a.existing = nil
	}
	if err := ctf.Pack(a.staging.w.Dir(), a.path, a.gz); err != nil {
		return err
	}
	if err := os.RemoveAll(a.staging.w.Dir()); err != nil {
		return fmt.Errorf("CTF %s: remove staging directory: %w", a.path, err)
	}
	a.staging = nil
	return nil
}

func (a *ctfArchive) Close() error {
	if a.existing != nil {
		return a.existing.Close()
	}
	return nil
}

func (a *ctfArchive) Registry() *location { return nil }
func (a *ctfArchive) String() string      { return a.path }

// ctfReader reads a CTF in any form (directory, tar, tgz) through package
// ctf, which confines and bounds what it reads.
type ctfReader struct {
	r    *ctf.Repository
	name string
}

func openCTFReader(p string) (*ctfReader, error) {
	repo, err := ctf.Open(p)
	if err != nil {
		return nil, err
	}
	r, ok := repo.(*ctf.Repository)
	if !ok {
		repo.Close()
		return nil, fmt.Errorf("%w: %s is a component archive: transfer reads CTFs and OCI registries (convert it with `ocm transfer componentarchive`)", errdef.ErrInvalidInput, p)
	}
	return &ctfReader{r: r, name: p}, nil
}

func (c *ctfReader) Resolve(_ context.Context, repo, tag string) (ocispec.Descriptor, error) {
	return resolveIn(c.r.Artifacts(), c.name, repo, tag)
}

// Tags lists the tags of repo.
func (c *ctfReader) Tags(_ context.Context, repo string) ([]string, error) {
	var out []string
	for _, a := range c.r.Artifacts() {
		if a.Repository == repo && a.Tag != "" {
			out = append(out, a.Tag)
		}
	}
	return out, nil
}

func (c *ctfReader) Fetch(ctx context.Context, _ string, d ocispec.Descriptor) (io.ReadCloser, error) {
	return c.r.Fetch(ctx, d)
}

func (c *ctfReader) Exists(ctx context.Context, _ string, d ocispec.Descriptor) (bool, error) {
	rc, err := c.r.Fetch(ctx, d)
	if err != nil {
		return false, nil
	}
	rc.Close()
	return true, nil
}

func (c *ctfReader) Push(context.Context, string, ocispec.Descriptor, io.Reader) error {
	return fmt.Errorf("%w: CTF %s is read only here", errdef.ErrInvalidInput, c.name)
}

func (c *ctfReader) PushManifest(context.Context, string, ocispec.Descriptor, []byte, string) error {
	return fmt.Errorf("%w: CTF %s is read only here", errdef.ErrInvalidInput, c.name)
}

func (c *ctfReader) Commit(bool) error   { return nil }
func (c *ctfReader) Close() error        { return c.r.Close() }
func (c *ctfReader) Registry() *location { return nil }
func (c *ctfReader) String() string      { return c.name }

// emptyStore is a target that does not exist yet.
type emptyStore struct{ name string }

func (e emptyStore) Resolve(_ context.Context, repo, tag string) (ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, fmt.Errorf("%s:%s %w in %s", repo, tag, errdef.ErrNotFound, e.name)
}
func (e emptyStore) Fetch(_ context.Context, _ string, d ocispec.Descriptor) (io.ReadCloser, error) {
	return nil, fmt.Errorf("blob %s %w in %s", d.Digest, errdef.ErrNotFound, e.name)
}
func (e emptyStore) Exists(context.Context, string, ocispec.Descriptor) (bool, error) {
	return false, nil
}
func (e emptyStore) Push(context.Context, string, ocispec.Descriptor, io.Reader) error { return nil }
func (e emptyStore) PushManifest(context.Context, string, ocispec.Descriptor, []byte, string) error {
	return nil
}
func (e emptyStore) Commit(bool) error   { return nil }
func (e emptyStore) Close() error        { return nil }
func (e emptyStore) Registry() *location { return nil }
func (e emptyStore) String() string      { return e.name }
