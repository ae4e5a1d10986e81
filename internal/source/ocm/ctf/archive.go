package ctf

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// ComponentArchive is the legacy single-component form:
// component-descriptor.yaml plus blobs/<file>.
type ComponentArchive struct {
	path string
	s    store
	desc *ocm.Descriptor
}

var _ ocm.Repository = (*ComponentArchive)(nil)

func openComponentArchive(p string, s store) (*ComponentArchive, error) {
	rc, size, err := s.open(DescriptorFileName)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if size > ocm.MaxDescriptorSize {
		return nil, fmt.Errorf("%w: %s is %d bytes: %w", errdef.ErrInvalidDescriptor, DescriptorFileName, size, errdef.ErrLimitExceeded)
	}
	raw, err := io.ReadAll(io.LimitReader(rc, ocm.MaxDescriptorSize+1))
	if err != nil {
		return nil, err
	}
	d, err := ocm.DecodeDescriptor(raw)
	if err != nil {
		return nil, err
	}
	return &ComponentArchive{path: p, s: s, desc: d}, nil
}

// ListVersions implements ocm.Repository.
func (a *ComponentArchive) ListVersions(_ context.Context, component string) ([]string, error) {
	if component != a.desc.Name {
		return nil, fmt.Errorf("component %s %w in component archive %s (it holds %s)", component, errdef.ErrNotFound, a.path, a.desc.Name)
	}
	return []string{a.desc.Version}, nil
}

// LookupComponentVersion implements ocm.Repository.
func (a *ComponentArchive) LookupComponentVersion(ctx context.Context, component, version string) (ocm.ComponentVersion, error) {
	if _, err := a.ListVersions(ctx, component); err != nil {
		return nil, err
	}
	version, pin, err := ocm.SplitPinnedVersion(component, version)
	if err != nil {
		return nil, err
	}
	if version != a.desc.Version {
		return nil, fmt.Errorf("version %s of component %s %w in component archive %s (available: %s)",
			version, component, errdef.ErrNotFound, a.path, a.desc.Version)
	}
	if pin != "" {
		// A component archive names its descriptor by no digest: a pin
		// cannot hold, and is never silently ignored.
		return nil, ocm.PinMismatch(component, version, pin, a.DescriptorDigest())
	}
	return a, nil
}

// Close implements ocm.Repository.
func (a *ComponentArchive) Close() error { return a.s.close() }

// The archive is its own single component version.

func (a *ComponentArchive) Descriptor() *ocm.Descriptor { return a.desc }
func (a *ComponentArchive) DescriptorDigest() string    { return "" }
func (a *ComponentArchive) Repository() ocm.Repository  { return a }

// OpenLocalBlob reads blobs/<file>. A file named like a digest (sha256.<hex>)
// is verified against that digest.
func (a *ComponentArchive) OpenLocalBlob(_ context.Context, acc ocm.Access) (ocm.Blob, error) {
	// The table names the field of each local kind (localReference,
	// fileName).
	m, _ := accessmethod.Lookup(acc.Type)
	if m.Where != accessmethod.Local {
		return nil, fmt.Errorf("%w: %s is not a local blob of a component archive", errdef.ErrUnsupportedAccess, acc.Type)
	}
	file := acc.String(m.LocalRef)
	if strings.Contains(file, ",") {
		return nil, fmt.Errorf("%w: chunked local blobs are not supported in component archives", errdef.ErrUnsupportedAccess)
	}
	// A local reference may be the file name or a digest.
	dg, derr := blob.Normalize(file)
	if derr == nil {
		name, _ := BlobFileName(dg)
		file = path.Base(name)
	}
	if file == "" || strings.ContainsAny(file, `/\`) || file == "." || file == ".." {
		return nil, fmt.Errorf("%w: blob file name %s", errdef.ErrUnsafeArchive, errdef.Quote(file))
	}
	rc, size, err := a.s.open(BlobsDir + "/" + file)
	if err != nil {
		return nil, err
	}
	b := &Blob{ReadCloser: rc, size: size, mediaType: acc.String("mediaType")}
	if derr == nil {
		v, err := blob.NewVerifier(rc, dg, size)
		if err != nil {
			rc.Close()
			return nil, err
		}
		b.ReadCloser, b.digest = v, dg
	}
	return b, nil
}
