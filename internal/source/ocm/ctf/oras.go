package ctf

import (
	"context"
	"fmt"
	"io"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasdef "oras.land/oras-go/v2/errdef"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

// Storage is one repository of a CTF as oras-go sees a registry
// repository: content.Storage (Fetch, Exists, Push) and content.TagResolver
// (Resolve, Tag), i.e. an oras.Target, so that oras.Copy and oras.CopyGraph
// copy into and out of a CTF as they do between registries (as OCM's Go
// bindings do, bindings/go/oci/ctf). A CTF is one flat blob store for all
// its repositories: the repository scopes tags only.
//
// Fetch returns the stored bytes unverified (as Repository.Fetch; oras and
// the callers verify what they read), but refuses a blob whose size is not
// the descriptor's. Push verifies digest and size before the blob takes its
// place (Writer.PutBlob); Exists verifies the file it finds (Writer.Has: a
// file with other content is errdef.ErrConflict). A Storage of a Repository
// (a CTF opened for reading, any form) is read only: Push and Tag fail.
type Storage struct {
	repo string
	r    *Repository
	w    *Writer
	name string
}

// Storage is repository repo of the CTF, read only.
func (r *Repository) Storage(repo string) *Storage {
	return &Storage{repo: repo, r: r, name: r.path}
}

// Storage is repository repo of the CTF being written.
func (w *Writer) Storage(repo string) *Storage {
	return &Storage{repo: repo, w: w, name: w.name}
}

// open opens the blob file of d and returns its size.
func (s *Storage) open(d digest.Digest) (io.ReadCloser, int64, error) {
	if s.w != nil {
		rc, err := s.w.Open(d.String())
		if err != nil {
			return nil, 0, err
		}
		fi, err := s.w.Stat(d.String())
		if err != nil {
			rc.Close()
			return nil, 0, fmt.Errorf("CTF %s: blob %s %w", s.name, d, errdef.ErrNotFound)
		}
		return rc, fi.Size(), nil
	}
	name, err := BlobFileName(d.String())
	if err != nil {
		return nil, 0, err
	}
	rc, size, err := s.r.s.open(name)
	if err != nil {
		return nil, 0, fmt.Errorf("blob %s: %w", d, err)
	}
	return rc, size, nil
}

// Fetch opens the blob or manifest of target (unverified); a stored size
// other than target's (when it says one) is refused.
func (s *Storage) Fetch(_ context.Context, target ocispec.Descriptor) (io.ReadCloser, error) {
	rc, size, err := s.open(target.Digest)
	if err != nil {
		return nil, err
	}
	if target.Size >= 0 && size != target.Size {
		rc.Close()
		return nil, fmt.Errorf("%w: CTF %s: blob %s is %d bytes, the descriptor says %d", errdef.ErrDigestMismatch, s.name, target.Digest, size, target.Size)
	}
	return rc, nil
}

// Exists reports whether the CTF holds target: for a CTF being written, a
// blob file of its size whose content has its digest (Writer.Has).
func (s *Storage) Exists(_ context.Context, target ocispec.Descriptor) (bool, error) {
	if s.w != nil {
		return s.w.Has(target.Digest.String(), target.Size)
	}
	name, err := BlobFileName(target.Digest.String())
	if err != nil {
		return false, err
	}
	if !s.r.s.exists(name) {
		return false, nil
	}
	rc, size, err := s.r.s.open(name)
	if err != nil {
		return false, nil
	}
	rc.Close()
	return target.Size < 0 || size == target.Size, nil
}

// Push stores content as the blob expected describes (its size must be
// known), verified against digest and size before it takes its place.
func (s *Storage) Push(_ context.Context, expected ocispec.Descriptor, content io.Reader) error {
	if s.w == nil {
		return fmt.Errorf("%w: CTF %s is read only here", errdef.ErrInvalidInput, s.name)
	}
	if expected.Size < 0 {
		return fmt.Errorf("%w: CTF %s: blob %s: size unknown", errdef.ErrInvalidInput, s.name, expected.Digest)
	}
	return s.w.PutBlob(expected.Digest.String(), expected.Size, content)
}

// Resolve returns the descriptor a tag of the repository names (its media
// type as the index records it, its size as stored), or for a digest the
// blob's. Not found wraps both this project's and oras-go's ErrNotFound.
func (s *Storage) Resolve(_ context.Context, reference string) (ocispec.Descriptor, error) {
	if d, err := digest.Parse(reference); err == nil {
		_, size, err := s.size(d)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		return ocispec.Descriptor{MediaType: "application/octet-stream", Digest: d, Size: size}, nil
	}
	arts := s.artifacts()
	for _, a := range arts {
		if a.Repository != s.repo || a.Tag != reference {
			continue
		}
		n, err := blob.Normalize(a.Digest)
		if err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("%w: CTF %s: %s:%s has digest %s", errdef.ErrInvalidDescriptor, s.name, s.repo, reference, errdef.Quote(a.Digest))
		}
		mt := a.MediaType
		if mt == "" {
			mt = ocispec.MediaTypeImageManifest
		}
		d := ocispec.Descriptor{MediaType: mt, Digest: digest.Digest(n), Size: -1}
		if ok, size, _ := s.size(d.Digest); ok {
			d.Size = size
		}
		return d, nil
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s:%s %w in CTF %s", s.repo, reference, notFound, s.name)
}

// notFound is errdef.ErrNotFound for this project and for oras-go.
var notFound error = notFoundError{}

type notFoundError struct{}

func (notFoundError) Error() string { return errdef.ErrNotFound.Error() }
func (notFoundError) Is(target error) bool {
	return target == errdef.ErrNotFound || target == orasdef.ErrNotFound
}

func (s *Storage) size(d digest.Digest) (bool, int64, error) {
	rc, size, err := s.open(d)
	if err != nil {
		return false, -1, fmt.Errorf("blob %s %w in CTF %s", d, notFound, s.name)
	}
	rc.Close()
	return true, size, nil
}

func (s *Storage) artifacts() []IndexArtifact {
	if s.w != nil {
		return s.w.Artifacts()
	}
	return s.r.Artifacts()
}

// Tags lists the tags of the repository.
func (s *Storage) Tags() []string {
	var out []string
	for _, a := range s.artifacts() {
		if a.Repository == s.repo && a.Tag != "" {
			out = append(out, a.Tag)
		}
	}
	return out
}

// Tag makes reference, a tag of the repository, name desc, which the CTF
// must hold, and writes the index (Writer.Tag).
func (s *Storage) Tag(_ context.Context, desc ocispec.Descriptor, reference string) error {
	if s.w == nil {
		return fmt.Errorf("%w: CTF %s is read only here", errdef.ErrInvalidInput, s.name)
	}
	if reference == "" {
		return fmt.Errorf("%w: CTF %s: empty tag", errdef.ErrInvalidInput, s.name)
	}
	fi, err := s.w.Stat(desc.Digest.String())
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("tag %s:%s: blob %s %w in CTF %s", s.repo, reference, desc.Digest, notFound, s.name)
	}
	return s.w.Tag(s.repo, reference, desc.Digest.String(), desc.MediaType)
}
