package resolve

import (
	"context"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Source opens repositories of every kind (OCI registries, CTFs, component
// archives) through one registry client, and reads remote accesses
// (transferred charts, helm repositories) with it. One per generation, built
// by argocdocm.Engine.Renderer (see Engine for what outlives a generation).
type Source struct {
	Client *oci.Client
	// MaxBlobSize bounds remote content read for rendering (default access.DefaultMaxBlobSize).
	MaxBlobSize int64
}

// NewSource makes a source with a new client.
func NewSource(opts ...oci.Option) (*Source, error) {
	c, err := oci.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &Source{Client: c}, nil
}

// Open opens a repository spec (see oci.ParseSpec, and Open). Registries are put to
// the client's gate (the sidecar policy) before the first request.
// The sidecar policy's localArchives is the caller's (argocdocm.Renderer.Open).
func (s *Source) Open(_ context.Context, spec string) (ocm.Repository, error) {
	return Open(spec, oci.WithClient(s.Client))
}

// Artifact implements access.ArtifactSource.
func (s *Source) Artifact(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (*access.Content, error) {
	b, manifestDigest, err := s.OpenArtifact(ctx, cv, acc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	data, err := access.ReadBlob(b, s.limit())
	if err != nil {
		return nil, err
	}
	return &access.Content{Data: data, MediaType: b.MediaType(), Digest: b.Digest(), ManifestDigest: manifestDigest}, nil
}

// OpenArtifact implements access.ArtifactOpener, so that a large remote
// directory resource is unpacked as it arrives rather than read whole first.
// The blob is bounded by MaxBlobSize as Artifact's content is.
func (s *Source) OpenArtifact(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (ocm.Blob, string, error) {
	var resolver oci.ArtifactResolver = s.Client
	if r, ok := cv.Repository().(oci.ArtifactResolver); ok {
		resolver = r // resolves relativeOciReference against its registry
	}
	b, manifestDigest, err := resolver.OpenAccess(ctx, cv, acc)
	if err != nil {
		return nil, "", err
	}
	limit := s.limit()
	if b.Size() > limit {
		b.Close()
		return nil, "", fmt.Errorf("%w: remote content is %d bytes, more than the limit of %d", errdef.ErrLimitExceeded, b.Size(), limit)
	}
	return &limitedBlob{Blob: b, limit: limit, left: limit}, manifestDigest, nil
}

func (s *Source) limit() int64 {
	if s.MaxBlobSize <= 0 {
		return access.DefaultMaxBlobSize
	}
	return s.MaxBlobSize
}

// limitedBlob fails a read that goes past limit bytes, for content whose
// size was not declared (or was declared wrongly).
type limitedBlob struct {
	ocm.Blob
	limit, left int64
}

func (b *limitedBlob) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more than allowed tells "more" from "exactly"
	}
	n, err := b.Blob.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("%w: remote content is more than %d bytes", errdef.ErrLimitExceeded, b.limit)
	}
	return n, err
}
