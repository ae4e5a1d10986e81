package oci

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Media types of Helm charts stored as OCI artifacts.
const (
	MediaTypeHelmChart       = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	MediaTypeHelmConfig      = "application/vnd.cncf.helm.config.v1+json"
	mediaTypeLegacyHelmChart = "application/tar+gzip"
)

// ArtifactResolver opens content that an access specification names outside
// the component version's own manifest. *Client resolves absolute references;
// *Repository also resolves references relative to its registry
// (relativeOciReference), so a pipeline holding a ComponentVersion can use
// cv.Repository().(oci.ArtifactResolver).
type ArtifactResolver interface {
	// OpenAccess opens the content of an access of cv that lives outside
	// its manifest: ociArtifact (the Helm chart of imageReference),
	// relativeOciReference (resolved against cv's registry), helm, ociBlob;
	// localBlob is read with cv.OpenLocalBlob (and its globalAccess when the
	// blob is not in the manifest). manifestDigest is the OCI manifest digest
	// for OCI artifacts (what ociArtifactDigest/v1 names), else "". The blob
	// verifies its digest as it is read: read it to EOF before use.
	OpenAccess(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (b ocm.Blob, manifestDigest string, err error)
	// OpenChart opens the Helm chart of the OCI artifact ref (ociArtifact's
	// imageReference: [http://|https://|oci://]host[:port]/repo[:tag][@digest]).
	// With a digest, the tag is not asked for; a digest already cached costs
	// no request. The chart content layer is returned, verified against its
	// digest; Chart.ManifestDigest is what an ociArtifactDigest/v1 resource
	// digest names.
	OpenChart(ctx context.Context, ref string) (*Chart, error)
	// OpenBlob opens one blob of the repository ref names (ociBlob access:
	// ref, digest, size (-1 or 0 if unknown), mediaType).
	OpenBlob(ctx context.Context, ref, digest string, size int64, mediaType string) (ocm.Blob, error)
	// OpenHelm opens a chart of a helm access: a classic chart repository
	// over HTTP(S) (index.yaml, optional caCert) or an oci:// repository.
	OpenHelm(ctx context.Context, h HelmAccess) (*Chart, error)
}

// Chart is a Helm chart archive (.tgz) being read. It is an ocm.Blob.
type Chart struct {
	io.ReadCloser
	reference      string
	manifestDigest string
	digest         string
	size           int64
	cancel         func()
}

var _ ocm.Blob = (*Chart)(nil)

// Reference is where the chart was read: registry/repository[:tag]@digest
// for OCI, the chart URL for a classic repository.
func (c *Chart) Reference() string { return c.reference }

// ManifestDigest is the OCI manifest digest ("" for a classic repository).
func (c *Chart) ManifestDigest() string { return c.manifestDigest }

// Digest of the chart archive ("" when a classic repository's index gives none).
func (c *Chart) Digest() string { return c.digest }

// Size in bytes, -1 if unknown.
func (c *Chart) Size() int64 { return c.size }

// MediaType is always the Helm chart content media type.
func (c *Chart) MediaType() string { return MediaTypeHelmChart }

// Close closes the content and ends the operation's deadline.
func (c *Chart) Close() error {
	err := c.ReadCloser.Close()
	if c.cancel != nil {
		c.cancel()
	}
	return err
}

// Artifact is a resolved OCI artifact.
type Artifact struct {
	// Reference is registry/repository[:tag]@digest.
	Reference imageref.Reference
	// Descriptor of the manifest (an index is resolved to its first
	// manifest, or the one annotated software.ocm.descriptor=true).
	Descriptor ocispec.Descriptor
	Manifest   *ocispec.Manifest
}

// FetchArtifact resolves an artifact reference to its manifest. With a
// digest (also next to a tag) the registry is asked by digest, and not at
// all when the manifest is cached; a tag is asked once per Client (and once
// per time to live with WithRecentTags).
func (c *Client) FetchArtifact(ctx context.Context, ref string) (*Artifact, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	art, _, err := c.fetchArtifact(ctx, ref)
	return art, err
}

func (c *Client) fetchArtifact(ctx context.Context, ref string) (*Artifact, *fetcher, error) {
	r, err := imageref.Parse(ref)
	if err != nil {
		return nil, nil, err
	}
	if r.Ref() == "" {
		return nil, nil, fmt.Errorf("%w: reference %s has neither tag nor digest", errdef.ErrInvalidInput, r)
	}
	repo, err := c.repo(r)
	if err != nil {
		return nil, nil, err
	}
	desc, err := c.manifestDesc(ctx, r, repo)
	if err != nil {
		return nil, nil, err
	}
	f := &fetcher{c: c, ref: r, repo: repo}
	m, used, err := ocimapping.ResolveManifest(ctx, f, desc)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", r, err)
	}
	out := r
	out.Scheme, out.Digest = "", used.Digest.String()
	return &Artifact{Reference: out, Descriptor: used, Manifest: m}, f, nil
}

// OpenChart implements ArtifactResolver.
func (c *Client) OpenChart(ctx context.Context, ref string) (*Chart, error) {
	opCtx, cancel := c.op(ctx)
	art, f, err := c.fetchArtifact(opCtx, ref)
	if err != nil {
		cancel()
		return nil, err
	}
	var layer *ocispec.Descriptor
	for i, l := range art.Manifest.Layers {
		if l.MediaType == MediaTypeHelmChart || l.MediaType == mediaTypeLegacyHelmChart {
			layer = &art.Manifest.Layers[i]
			break
		}
	}
	if layer == nil {
		cancel()
		var mts []string
		for _, l := range art.Manifest.Layers {
			mts = append(mts, l.MediaType)
		}
		return nil, fmt.Errorf("%w: %s is not a Helm chart (config %s, layers %s)", errdef.ErrUnsupportedMediaType,
			art.Reference, errdef.Quote(art.Manifest.Config.MediaType), errdef.Quote(strings.Join(mts, ", ")))
	}
	if layer.Size > c.o.maxBlob {
		cancel()
		return nil, fmt.Errorf("%w: chart %s is %d bytes, more than the limit of %d", errdef.ErrLimitExceeded, art.Reference, layer.Size, c.o.maxBlob)
	}
	if c.o.chartCheck != nil {
		if err := c.o.chartCheck(opCtx, f.repo, art.Descriptor, art.Reference.String()); err != nil {
			cancel()
			return nil, err
		}
	}
	rc, err := f.Fetch(opCtx, *layer)
	if err != nil {
		cancel()
		return nil, err
	}
	return &Chart{ReadCloser: rc, reference: art.Reference.String(), manifestDigest: art.Descriptor.Digest.String(),
		digest: layer.Digest.String(), size: layer.Size, cancel: cancel}, nil
}

// OpenBlob implements ArtifactResolver.
func (c *Client) OpenBlob(ctx context.Context, ref, dgst string, size int64, mediaType string) (ocm.Blob, error) {
	r, err := imageref.Parse(ref)
	if err != nil {
		return nil, err
	}
	d, err := blob.Normalize(dgst)
	if err != nil {
		return nil, err
	}
	if size > c.o.maxBlob {
		return nil, fmt.Errorf("%w: blob %s is %d bytes, more than the limit of %d", errdef.ErrLimitExceeded, d, size, c.o.maxBlob)
	}
	if size < 0 {
		size = 0
	}
	opCtx, cancel := c.op(ctx)
	repo, err := c.repo(r)
	if err != nil {
		cancel()
		return nil, err
	}
	// Under a policy the shared cache answers only with a vouch of this
	// credential and repository (see Client.vouch).
	f := &fetcher{c: c, ref: r, repo: repo}
	// Route to the blob endpoint whatever the declared media type.
	rc, err := f.Fetch(opCtx, ocispec.Descriptor{MediaType: "application/octet-stream", Digest: digest.Digest(d), Size: size})
	if err != nil {
		cancel()
		return nil, err
	}
	bsize := size
	if bsize == 0 {
		bsize = -1
	}
	return &Blob{ReadCloser: rc, size: bsize, mediaType: mediaType, digest: d, cancel: cancel}, nil
}

// OpenAccess implements ArtifactResolver, through the opener of the
// access type (openers.go).
func (c *Client) OpenAccess(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (ocm.Blob, string, error) {
	o, ok := openerOf(acc.Type)
	if !ok {
		return nil, "", accessmethod.Unsupported(acc.Type, opens)
	}
	return o.open(c, ctx, cv, acc)
}
