package access

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm/artifactset"
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
}

// Resolver reads resource content.
type Resolver struct {
	// Artifacts reads remote accesses; nil refuses them with a clear error.
	Artifacts ArtifactSource
	// MaxBlobSize bounds the content of one resource (default DefaultMaxBlobSize).
	MaxBlobSize int64
}

// Read returns the verified content of a resource of cv.
func (r *Resolver) Read(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (*Content, error) {
	limit := r.MaxBlobSize
	if limit <= 0 {
		limit = DefaultMaxBlobSize
	}
	acc := res.Access
	var c *Content
	var err error
	switch acc.Kind() {
	case ocm.AccessLocalBlob, ocm.AccessLocalFilesystemBlob:
		c, err = r.readLocal(ctx, cv, acc, limit)
		if errors.Is(err, errdef.ErrNotFound) {
			if g, ok := acc.GlobalAccess(); ok && r.Artifacts != nil {
				c, err = r.Artifacts.Artifact(ctx, cv, *g)
			}
		}
	case ocm.AccessOCIArtifact, ocm.AccessRelativeOCIReference, ocm.AccessHelm, ocm.AccessOCIBlob:
		if r.Artifacts == nil {
			return nil, fmt.Errorf("%w: access %s (%s) needs registry access, which this render does not have (offline repository)",
				errdef.ErrUnsupportedAccess, acc.Type, describe(acc))
		}
		c, err = r.Artifacts.Artifact(ctx, cv, acc)
	case ocm.AccessNone:
		return nil, fmt.Errorf("%w: access type none has no content", errdef.ErrUnsupportedAccess)
	default:
		return nil, fmt.Errorf("%w %q: the plugin reads localBlob, localFilesystemBlob, ociArtifact, relativeOciReference and helm", errdef.ErrUnsupportedAccess, acc.Type)
	}
	if err != nil {
		return nil, err
	}
	if err := CheckResourceDigest(res, c); err != nil {
		return nil, err
	}
	return c, nil
}

func (r *Resolver) readLocal(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access, limit int64) (*Content, error) {
	b, err := cv.OpenLocalBlob(ctx, acc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if b.Size() > limit {
		return nil, fmt.Errorf("%w: local blob is %d bytes, more than the limit of %d", errdef.ErrLimitExceeded, b.Size(), limit)
	}
	// The blob reader verifies its digest at EOF; read it all before use.
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(b, limit+1))
	if err != nil {
		return nil, fmt.Errorf("local blob %s: %w", acc.String("localReference")+acc.String("fileName"), err)
	}
	if n > limit {
		return nil, fmt.Errorf("%w: local blob is more than %d bytes", errdef.ErrLimitExceeded, limit)
	}
	mt := acc.String("mediaType")
	if mt == "" {
		mt = b.MediaType()
	}
	return &Content{Data: buf.Bytes(), MediaType: mt, Digest: blob.Digest(buf.Bytes())}, nil
}

// CheckResourceDigest compares content with the resource digest of the
// descriptor, when the descriptor has one that can be checked here:
// genericBlobDigest/v1 against the bytes, ociArtifactDigest/v1 against the OCI
// manifest digest (of an artifact set's main manifest, or of a remote artifact).
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
		if got := strings.TrimPrefix(blob.Digest(c.Data), "sha256:"); got != d.Value {
			return fmt.Errorf("%w: content hashes to sha256:%s, the component descriptor says sha256:%s", errdef.ErrDigestMismatch, got, d.Value)
		}
	case "ociArtifactDigest/v1":
		md := c.ManifestDigest
		if md == "" && artifactset.IsArtifactSet(c.MediaType) {
			set, err := artifactset.Read(c.Data)
			if err != nil {
				return err
			}
			md = set.Main.Digest.String()
		}
		if md == "" {
			return nil
		}
		_, h, err := blob.ParseDigest(md)
		if err != nil {
			return err
		}
		if h != d.Value {
			return fmt.Errorf("%w: artifact manifest is %s, the component descriptor says %s", errdef.ErrDigestMismatch, md, d.Value)
		}
	}
	return nil
}

func isSHA256(alg string) bool {
	return strings.EqualFold(alg, "SHA-256") || strings.EqualFold(alg, "sha256")
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
		set, err := artifactset.Read(c.Data)
		if err != nil {
			return nil, err
		}
		data, _, err := set.Layer(MediaTypeHelmChart, "application/tar+gzip")
		return data, err
	case c.MediaType == MediaTypeHelmChart, isGzipMediaType(c.MediaType), c.MediaType == "" && len(c.Data) > 2 && c.Data[0] == 0x1f && c.Data[1] == 0x8b:
		return c.Data, nil
	default:
		return nil, fmt.Errorf("%w: %q is not a Helm chart (want an OCI artifact set or %s)", errdef.ErrUnsupportedMediaType, c.MediaType, MediaTypeHelmChart)
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
