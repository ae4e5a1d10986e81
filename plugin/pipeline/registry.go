package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm/oci"
)

// RegistrySource opens repositories of every kind (OCI registries, CTFs,
// component archives) through one registry client, and reads remote accesses
// (transferred charts, helm repositories) with it. Use one per generation: the
// client remembers tag→digest resolutions for its lifetime.
type RegistrySource struct {
	Client *oci.Client
	// MaxBlobSize bounds remote content read for rendering (default access.DefaultMaxBlobSize).
	MaxBlobSize int64
}

// NewRegistrySource makes a source with a new client.
func NewRegistrySource(opts ...oci.Option) (*RegistrySource, error) {
	c, err := oci.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &RegistrySource{Client: c}, nil
}

// Open opens a repository spec (see oci.ParseSpec).
func (s *RegistrySource) Open(_ context.Context, spec string) (ocm.Repository, error) {
	return oci.Open(spec, oci.WithClient(s.Client))
}

// Artifact implements access.ArtifactSource.
func (s *RegistrySource) Artifact(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (*access.Content, error) {
	var resolver oci.ArtifactResolver = s.Client
	if r, ok := cv.Repository().(oci.ArtifactResolver); ok {
		resolver = r // resolves relativeOciReference against its registry
	}
	b, manifestDigest, err := resolver.OpenAccess(ctx, cv, acc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	limit := s.MaxBlobSize
	if limit <= 0 {
		limit = access.DefaultMaxBlobSize
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(b, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%w: remote content is more than %d bytes", errdef.ErrLimitExceeded, limit)
	}
	return &access.Content{Data: buf.Bytes(), MediaType: b.MediaType(), Digest: b.Digest(), ManifestDigest: manifestDigest}, nil
}
