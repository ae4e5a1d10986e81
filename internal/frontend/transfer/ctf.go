package transfer

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
)

// ctfDir is a CTF target in directory form, written through ctf.Writer
// (blobs verified and renamed into place, the index rewritten atomically
// after every tag): an interrupted transfer leaves a CTF that holds what
// was finished. Its repositories are ctf.Storage, oras.Targets.
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

func (c *ctfDir) Repository(repo string) (oras.Target, error) { return c.w.Storage(repo), nil }
func (c *ctfDir) Commit(bool) error                           { return nil }
func (c *ctfDir) Close() error                                { return nil }
func (c *ctfDir) Registry() *location                         { return nil }
func (c *ctfDir) String() string                              { return c.name }

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
	mu       sync.Mutex // oras.CopyGraph pushes concurrently
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

func (a *ctfArchive) reader(repo string) oras.Target {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.staging != nil:
		return a.staging.w.Storage(repo)
	case a.existing != nil:
		return a.existing.r.Storage(repo)
	}
	return emptyTarget{name: a.path, repo: repo}
}

// Repository reads the archive (or the staging directory) and writes the
// staging directory, created at the first write.
func (a *ctfArchive) Repository(repo string) (oras.Target, error) {
	return archiveRepo{a: a, repo: repo}, nil
}

type archiveRepo struct {
	a    *ctfArchive
	repo string
}

func (r archiveRepo) Resolve(ctx context.Context, ref string) (ocispec.Descriptor, error) {
	return r.a.reader(r.repo).Resolve(ctx, ref)
}

func (r archiveRepo) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	return r.a.reader(r.repo).Fetch(ctx, d)
}

func (r archiveRepo) Exists(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	return r.a.reader(r.repo).Exists(ctx, d)
}

func (r archiveRepo) Push(ctx context.Context, d ocispec.Descriptor, rd io.Reader) error {
	s, err := r.a.write()
	if err != nil {
		return err
	}
	return s.w.Storage(r.repo).Push(ctx, d, rd)
}

func (r archiveRepo) Tag(ctx context.Context, d ocispec.Descriptor, tag string) error {
	s, err := r.a.write()
	if err != nil {
		return err
	}
	return s.w.Storage(r.repo).Tag(ctx, d, tag)
}

// write is the staging directory, extracted from the archive at the first
// write.
func (a *ctfArchive) write() (*ctfDir, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
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

// Commit packs the staging directory into the archive when this run or an
// interrupted one wrote anything.
func (a *ctfArchive) Commit(bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
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

func (c *ctfReader) Repository(repo string) (oras.Target, error) { return c.r.Storage(repo), nil }

// Tags lists the tags of repo.
func (c *ctfReader) Tags(_ context.Context, repo string) ([]string, error) {
	return c.r.Storage(repo).Tags(), nil
}

func (c *ctfReader) Commit(bool) error   { return nil }
func (c *ctfReader) Close() error        { return c.r.Close() }
func (c *ctfReader) Registry() *location { return nil }
func (c *ctfReader) String() string      { return c.name }

// emptyStore is a target that does not exist yet (a dry run's).
type emptyStore struct{ name string }

func (e emptyStore) Repository(repo string) (oras.Target, error) {
	return emptyTarget{name: e.name, repo: repo}, nil
}
func (e emptyStore) Commit(bool) error   { return nil }
func (e emptyStore) Close() error        { return nil }
func (e emptyStore) Registry() *location { return nil }
func (e emptyStore) String() string      { return e.name }

// emptyTarget is a repository of an empty store: it holds nothing and
// keeps nothing.
type emptyTarget struct{ name, repo string }

func (e emptyTarget) Resolve(_ context.Context, ref string) (ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, fmt.Errorf("%s:%s %w in %s", e.repo, ref, errdef.ErrNotFound, e.name)
}
func (e emptyTarget) Fetch(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	return nil, fmt.Errorf("blob %s %w in %s", d.Digest, errdef.ErrNotFound, e.name)
}
func (e emptyTarget) Exists(context.Context, ocispec.Descriptor) (bool, error)  { return false, nil }
func (e emptyTarget) Push(context.Context, ocispec.Descriptor, io.Reader) error { return nil }
func (e emptyTarget) Tag(context.Context, ocispec.Descriptor, string) error     { return nil }
