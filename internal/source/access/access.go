package access

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/artifactset"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// DefaultMaxBlobSize bounds what one resource may weigh when it is read for
// rendering (charts and manifest trees are small; images are never read).
const DefaultMaxBlobSize int64 = 512 << 20

// Media types of Helm chart content.
const (
	MediaTypeHelmChart  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	MediaTypeHelmConfig = "application/vnd.cncf.helm.config.v1+json"
)

// ArtifactSource reads artifacts that live outside the component version's own
// store. The OCI registry package implements it; offline renders pass nil.
type ArtifactSource interface {
	// Artifact fetches the resource content named by a remote access
	// (ociArtifact, relativeOciReference, helm, localBlob globalAccess) of cv.
	Artifact(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (*Content, error)
}

// Content is verified resource content.
type Content struct {
	Data      []byte
	MediaType string
	// Digest names Data ("sha256:…"); for an OCI artifact it is the manifest
	// digest and Data is the selected layer (see ManifestDigest).
	Digest string
	// ManifestDigest is the OCI manifest digest when Data came from an OCI
	// artifact (ociArtifactDigest/v1 is computed from it).
	ManifestDigest string

	// set is Data as an artifact set, read once (see ArtifactSets). A
	// Content is used by one generation at a time.
	set *contentSet
}

// ArtifactOpener is an ArtifactSource that can also stream what it reads.
// ReadTree prefers it, so that a large directory resource is unpacked as it
// arrives instead of being held whole first; a source without it still works,
// through Artifact.
type ArtifactOpener interface {
	// OpenArtifact opens the content Artifact would read. manifestDigest is
	// as in Content.ManifestDigest. The blob verifies its digest as it is
	// read: nothing read from it may be trusted before it reached EOF.
	OpenArtifact(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (b ocm.Blob, manifestDigest string, err error)
}

// Resolver reads resource content.
type Resolver struct {
	// Artifacts reads remote accesses; nil refuses them with a clear error.
	Artifacts ArtifactSource
	// Sets, when set, keeps what generations take out of artifact sets
	// (a long-lived process's); nil unpacks them every time.
	Sets *ArtifactSets
	// MaxBlobSize bounds the content of one resource (default DefaultMaxBlobSize).
	MaxBlobSize int64
}

func (r *Resolver) limit() int64 {
	if r.MaxBlobSize <= 0 {
		return DefaultMaxBlobSize
	}
	return r.MaxBlobSize
}

// remote checks that acc, an access to content outside the component
// version's store, can be read.
func (r *Resolver) remote(acc ocm.Access) error {
	if r.Artifacts == nil {
		return fmt.Errorf("%w: access %s (%s) needs registry access, which this render does not have (offline repository)",
			errdef.ErrUnsupportedAccess, acc.Type, describe(acc))
	}
	return nil
}

// unreadable is the error for an access kind the resolver does not read:
// the table's NoContent kind (none) says so, others list what is read.
func unreadable(acc ocm.Access) error {
	if m, _ := accessmethod.Lookup(acc.Type); m.Where == accessmethod.NoContent {
		return fmt.Errorf("%w: access type %s has no content", errdef.ErrUnsupportedAccess, m.Name)
	}
	return accessmethod.Unsupported(acc.Type, accessmethod.Readable)
}

// Read returns the verified content of a resource of cv.
func (r *Resolver) Read(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (*Content, error) {
	limit := r.limit()
	acc := res.Access
	var c *Content
	var err error
	m, _ := accessmethod.Lookup(acc.Type)
	switch m.Where {
	case accessmethod.Local:
		if lo, ok := localArtifact(cv, acc); ok {
			c, err = r.readLocalArtifact(ctx, lo, acc, limit)
		} else {
			c, err = r.readLocal(ctx, cv, acc, limit)
		}
		if errors.Is(err, errdef.ErrNotFound) {
			if g, ok := acc.GlobalAccess(); ok && r.Artifacts != nil {
				c, err = r.readRemote(ctx, cv, *g, limit)
			}
		}
	case accessmethod.Remote:
		if err := r.remote(acc); err != nil {
			return nil, err
		}
		c, err = r.readRemote(ctx, cv, acc, limit)
	default:
		return nil, unreadable(acc)
	}
	if err != nil {
		return nil, err
	}
	if c.set != nil {
		c.set.sets = r.Sets
	}
	if err := CheckResourceDigest(res, c); err != nil {
		return nil, err
	}
	return c, nil
}

// localBlobSizer is a component version that knows a local blob's size
// before it is read (the layer sizes of its manifest).
type localBlobSizer interface {
	LocalBlobSize(acc ocm.Access) (int64, bool)
}

func (r *Resolver) readLocal(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access, limit int64) (*Content, error) {
	// A blob over this read's limit is refused before it is fetched: a
	// read with a small limit (a document, or looking for an RGD among a
	// component's blobs) must not download a large blob it cannot use.
	if s, ok := cv.(localBlobSizer); ok && limit > 0 {
		if size, ok := s.LocalBlobSize(acc); ok && size > limit {
			return nil, fmt.Errorf("%s: %w: %d bytes, more than the limit of %d", localBlob(acc), errdef.ErrLimitExceeded, size, limit)
		}
	}
	b, err := cv.OpenLocalBlob(ctx, acc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	// The blob reader verifies its digest at EOF; read it all before use.
	data, err := ReadBlob(b, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", localBlob(acc), err)
	}
	mt := acc.String("mediaType")
	if mt == "" {
		mt = b.MediaType()
	}
	d := blob.Digest(data)
	// The digest is of the bytes at hand: what an ArtifactSets may key them by.
	return &Content{Data: data, MediaType: mt, Digest: d, set: &contentSet{digest: d}}, nil
}

// localArtifact returns cv's LocalArtifactOpener when acc names a local blob
// that is an OCI manifest (OCM CLI v0.13+ Helm charts) and cv can open one.
func localArtifact(cv ocm.ComponentVersion, acc ocm.Access) (ocm.LocalArtifactOpener, bool) {
	if acc.Kind() != ocm.AccessLocalBlob || !ocimapping.IsManifestMediaType(acc.String("mediaType")) {
		return nil, false
	}
	lo, ok := cv.(ocm.LocalArtifactOpener)
	return lo, ok
}

// readLocalArtifact reads the content layer of an artifact local blob; the
// content carries the manifest digest, which the resource digest names.
func (r *Resolver) readLocalArtifact(ctx context.Context, lo ocm.LocalArtifactOpener, acc ocm.Access, limit int64) (*Content, error) {
	b, md, err := lo.OpenLocalArtifact(ctx, acc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	data, err := ReadBlob(b, limit)
	if err != nil {
		return nil, fmt.Errorf("local blob %s: %w", acc.String("localReference"), err)
	}
	return &Content{Data: data, MediaType: b.MediaType(), Digest: b.Digest(), ManifestDigest: md}, nil
}

// readRemote reads content through the ArtifactSource, streamed when it can
// so that limit applies while reading, not after.
func (r *Resolver) readRemote(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access, limit int64) (*Content, error) {
	o, ok := r.Artifacts.(ArtifactOpener)
	if !ok {
		return r.Artifacts.Artifact(ctx, cv, acc)
	}
	b, manifestDigest, err := o.OpenArtifact(ctx, cv, acc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	data, err := ReadBlob(b, limit)
	if err != nil {
		return nil, err
	}
	return &Content{Data: data, MediaType: b.MediaType(), Digest: b.Digest(), ManifestDigest: manifestDigest}, nil
}

// ReadBlob reads b to EOF (where it verifies its digest), at most limit
// bytes. When b declares its size the bytes go into one slice of that size:
// a growing buffer would double past it and hold up to twice the blob.
func ReadBlob(b ocm.Blob, limit int64) ([]byte, error) {
	size := b.Size()
	if size > limit {
		return nil, fmt.Errorf("%w: blob is %d bytes, more than the limit of %d", errdef.ErrLimitExceeded, size, limit)
	}
	var buf *bytes.Buffer
	if size > 0 {
		// Room for the blob and for reading EOF without growing.
		buf = bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	} else {
		buf = new(bytes.Buffer)
	}
	n, err := io.Copy(buf, io.LimitReader(b, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%w: blob is more than %d bytes", errdef.ErrLimitExceeded, limit)
	}
	return buf.Bytes(), nil
}

// CheckResourceDigest compares content with the resource digest of the
// descriptor, when the descriptor has one that can be checked here:
// genericBlobDigest/v1 against the bytes, ociArtifactDigest/v1 against the OCI
// manifest digest (of an artifact set's main manifest, or of a remote artifact).
// Content read through an OCI manifest (ManifestDigest set) is an OCI
// artifact whose blob, as OCM defines it, is the manifest: its
// genericBlobDigest/v1 (what the OCM CLI v0.13+ writes) is the manifest digest.
func CheckResourceDigest(res *ocm.Resource, c *Content) error {
	d := res.Digest
	if d == nil || d.Value == "" {
		return nil
	}
	switch d.NormalisationAlgorithm {
	case "genericBlobDigest/v1":
		if !isSHA256(d.HashAlgorithm) {
			return nil
		}
		if c.ManifestDigest != "" {
			return checkArtifactBlobDigest(c.ManifestDigest, d.Value)
		}
		return checkBlobDigest(strings.TrimPrefix(blob.Digest(c.Data), "sha256:"), d.Value)
	case "ociArtifactDigest/v1":
		md := c.ManifestDigest
		if md == "" && artifactset.IsArtifactSet(c.MediaType) {
			var err error
			if md, err = c.artifactSetMain(); err != nil {
				return err
			}
		}
		return checkManifestDigest(md, d.Value)
	}
	return nil
}

// checkBlobDigest compares the sha256 (hex) of content with the one of a
// genericBlobDigest/v1 resource digest.
func checkBlobDigest(got, want string) error {
	if got != want {
		return fmt.Errorf("%w: content hashes to sha256:%s, the component descriptor says sha256:%s", errdef.ErrDigestMismatch, got, want)
	}
	return nil
}

// checkArtifactBlobDigest compares the manifest digest of an OCI artifact
// with a genericBlobDigest/v1 (SHA-256) resource digest: the SHA-256 of the
// manifest bytes. A manifest named by another algorithm cannot be
// compared, and is refused rather than let through unchecked.
func checkArtifactBlobDigest(md, want string) error {
	alg, h, err := blob.ParseDigest(md)
	if err != nil {
		return err
	}
	if alg != "sha256" {
		return fmt.Errorf("%w: artifact manifest %s is not named by SHA-256, the component descriptor's genericBlobDigest/v1 is", errdef.ErrDigestMismatch, md)
	}
	if h != want {
		return fmt.Errorf("%w: artifact manifest is %s, the component descriptor says sha256:%s (genericBlobDigest/v1)", errdef.ErrDigestMismatch, md, want)
	}
	return nil
}

// checkManifestDigest compares an OCI manifest digest ("" when there is
// none to compare) with the value of an ociArtifactDigest/v1 resource digest.
func checkManifestDigest(md, want string) error {
	if md == "" {
		return nil
	}
	_, h, err := blob.ParseDigest(md)
	if err != nil {
		return err
	}
	if h != want {
		return fmt.Errorf("%w: artifact manifest is %s, the component descriptor says %s", errdef.ErrDigestMismatch, md, want)
	}
	return nil
}

func isSHA256(alg string) bool {
	return strings.EqualFold(alg, "SHA-256") || strings.EqualFold(alg, "sha256")
}

// localBlob names a local blob in messages: its localReference (or
// fileName), as errdef.Field shows a descriptor's text.
func localBlob(acc ocm.Access) string {
	return "local blob " + errdef.Field(acc.String("localReference")+acc.String("fileName"))
}

func describe(acc ocm.Access) string {
	for _, k := range []string{"imageReference", "reference", "helmRepository", "ref"} {
		if v := acc.String(k); v != "" {
			return v
		}
	}
	return "no reference"
}

// ChartArchive returns the Helm chart archive (tgz) held by content: the chart
// layer of an artifact set, or the content itself when it is a chart archive.
func ChartArchive(c *Content) ([]byte, error) {
	switch {
	case artifactset.IsArtifactSet(c.MediaType):
		return c.artifactSetChart()
	case c.MediaType == MediaTypeHelmChart, isGzipMediaType(c.MediaType), c.MediaType == "" && archive.IsGzip(c.Data):
		return c.Data, nil
	default:
		return nil, fmt.Errorf("%w: %s is not a Helm chart (want an OCI artifact set or %s)", errdef.ErrUnsupportedMediaType, errdef.Quote(c.MediaType), MediaTypeHelmChart)
	}
}

// IsTarMediaType reports whether a media type is a (possibly compressed) tar,
// as directoryTree resources use.
func IsTarMediaType(mt string) bool {
	return mt == "application/x-tar" || mt == "application/tar" || isGzipMediaType(mt)
}

func isGzipMediaType(mt string) bool {
	switch mt {
	case "application/x-tgz", "application/x-tar+gzip", "application/gzip", "application/x-gzip", "application/x-gtar", "application/tar+gzip":
		return true
	}
	return false
}
