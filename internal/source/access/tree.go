package access

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/artifactset"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// streamBuffer is the read size between the blob and gzip/tar: large enough
// that reading a cached blob file costs few system calls.
const streamBuffer = 64 << 10

// bufferSize fits the read buffer to a small blob, so that small trees (the
// common case) do not pay for a buffer sized for large ones. 4 KiB is the
// least archive.ReadTree takes over without adding its own buffer.
func bufferSize(size int64) int {
	if size < 0 || size >= streamBuffer {
		return streamBuffer
	}
	return max(int(size), 4<<10)
}

// ReadTree reads a directory resource of cv (a tar or gzip-compressed tar)
// into an archive.Tree bounded by opts.
//
// The content is streamed from where it lives (the blob cache, a CTF blob
// file, a registry) through gzip and tar into the tree: no copy of the whole
// blob is held, so a large resource costs about its unpacked size once. As
// nothing can be verified before the last byte, the bytes are hashed on the
// way and the stream is read to its end whatever the unpacking found; the
// tree is returned only when the blob's own digest and the descriptor's
// resource digest both match. A mismatch discards the tree and wins over any
// unpacking error (bytes that do not verify explain whatever else went
// wrong). Errors name the resource (errdef.Error.Resource).
func (r *Resolver) ReadTree(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource, opts ...archive.Option) (*archive.Tree, error) {
	t, err := r.readTree(ctx, cv, res, opts)
	if err != nil {
		return nil, errdef.Wrap(err, errdef.Error{Resource: res.Identity().String()})
	}
	return t, nil
}

func (r *Resolver) readTree(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource, opts []archive.Option) (*archive.Tree, error) {
	limit := r.limit()
	acc := res.Access
	m, _ := accessmethod.Lookup(acc.Type)
	switch m.Where {
	case accessmethod.Local:
		if lo, ok := localArtifact(cv, acc); ok {
			b, md, err := lo.OpenLocalArtifact(ctx, acc)
			if err != nil {
				return nil, err
			}
			defer b.Close()
			return streamTree(b, "local blob "+acc.String("localReference"), res, b.MediaType(), md, limit, opts)
		}
		if res.Type == ResourceTypeOCIArtifact {
			// Not an OCI manifest: an artifact set, or bytes of unknown shape.
			return nil, artifactTreeError(res, "is a local blob of media type "+quoteMediaType(acc.String("mediaType")))
		}
		b, err := cv.OpenLocalBlob(ctx, acc)
		if errors.Is(err, errdef.ErrNotFound) {
			if g, ok := acc.GlobalAccess(); ok && r.Artifacts != nil {
				return r.remoteTree(ctx, cv, res, *g, limit, opts)
			}
		}
		if err != nil {
			return nil, err
		}
		defer b.Close()
		mt := acc.String("mediaType")
		if mt == "" {
			mt = b.MediaType()
		}
		return streamTree(b, localBlob(acc), res, mt, "", limit, opts)
	case accessmethod.Remote:
		if err := r.remote(acc); err != nil {
			return nil, err
		}
		return r.remoteTree(ctx, cv, res, acc, limit, opts)
	default:
		return nil, unreadable(acc)
	}
}

// remoteTree reads a tree from the ArtifactSource: streamed when it can, else
// from the content it has read.
func (r *Resolver) remoteTree(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource, acc ocm.Access, limit int64, opts []archive.Option) (*archive.Tree, error) {
	o, ok := r.Artifacts.(ArtifactOpener)
	if !ok {
		c, err := r.Artifacts.Artifact(ctx, cv, acc)
		if err != nil {
			return nil, err
		}
		if err := CheckResourceDigest(res, c); err != nil {
			return nil, err
		}
		if err := checkArtifactTree(res, c.MediaType, c.ManifestDigest); err != nil {
			return nil, err
		}
		return contentTree(c, opts)
	}
	b, manifestDigest, err := o.OpenArtifact(ctx, cv, acc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return streamTree(b, "remote content", res, b.MediaType(), manifestDigest, limit, opts)
}

// contentTree unpacks content that is already verified and in memory.
func contentTree(c *Content, opts []archive.Option) (*archive.Tree, error) {
	if err := checkTreeMediaType(c.MediaType, c.Data); err != nil {
		return nil, err
	}
	return archive.ReadTree(bytes.NewReader(c.Data), opts...)
}

// checkTreeMediaType refuses content that is declared as something other
// than a tar; undeclared content is left to the tar reader, and gzip
// content (by its magic bytes) is accepted whatever its label, as OCM
// tools label tgz trees in several ways.
func checkTreeMediaType(mt string, head []byte) error {
	if mt != "" && !IsTarMediaType(mt) && !archive.IsGzip(head) {
		return fmt.Errorf("%w: directory resource has media type %s, want a tar or tgz", errdef.ErrUnsupportedMediaType, errdef.Quote(mt))
	}
	return nil
}

// streamTree unpacks b while hashing it, then verifies it at EOF. what names
// b in read errors.
func streamTree(b ocm.Blob, what string, res *ocm.Resource, mt, manifestDigest string, limit int64, opts []archive.Option) (*archive.Tree, error) {
	if err := checkArtifactTree(res, mt, manifestDigest); err != nil {
		return nil, err
	}
	if size := b.Size(); size > limit {
		return nil, fmt.Errorf("%w: blob is %d bytes, more than the limit of %d", errdef.ErrLimitExceeded, size, limit)
	}
	if d := res.Digest; d != nil && d.Value != "" && d.NormalisationAlgorithm == "ociArtifactDigest/v1" &&
		manifestDigest == "" && artifactset.IsArtifactSet(mt) {
		// The digest names the set's main manifest, which only the whole
		// set shows: the rare tree shipped as an artifact set is read whole.
		data, err := ReadBlob(b, limit)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		c := &Content{Data: data, MediaType: mt, Digest: blob.Digest(data)}
		if err := checkNamingDigest(strings.TrimPrefix(c.Digest, "sha256:"), b.Digest()); err != nil {
			return nil, err
		}
		if err := CheckResourceDigest(res, c); err != nil {
			return nil, err
		}
		return contentTree(c, opts)
	}

	h := &hashingReader{r: io.LimitReader(b, limit+1), h: sha256.New()}
	br := bufio.NewReaderSize(h, bufferSize(b.Size()))
	head, _ := br.Peek(2) // a short or failed peek is the tar reader's to report
	if err := checkTreeMediaType(mt, head); err != nil {
		return nil, err
	}
	tree, treeErr := archive.ReadTree(br, opts...)
	// Read to EOF, whatever the unpacking found: the blob verifies itself
	// there, and the digests below cover every byte. ReadTree stops at the
	// tar end marker, and on an error anywhere. The rest is only hashed.
	if _, err := io.Copy(io.Discard, br); err != nil && h.err == nil {
		h.err = err
	}
	if h.err != nil {
		// The first read error, even when the unpacking saw it first (a
		// reader need not repeat it).
		return nil, fmt.Errorf("%s: %w", what, h.err)
	}
	if h.n > limit {
		return nil, fmt.Errorf("%w: blob is more than %d bytes", errdef.ErrLimitExceeded, limit)
	}
	sum := hex.EncodeToString(h.h.Sum(nil))
	if err := checkStreamDigests(sum, b.Digest(), res, manifestDigest); err != nil {
		return nil, err
	}
	if treeErr != nil {
		return nil, treeErr
	}
	return tree, nil
}

// checkStreamDigests compares what a stream hashed to (sha256, hex) with the
// digest that names the blob (when it is a sha256 one; stores verify others
// themselves) and with the resource digest of the descriptor.
func checkStreamDigests(sum, blobDigest string, res *ocm.Resource, manifestDigest string) error {
	if err := checkNamingDigest(sum, blobDigest); err != nil {
		return err
	}
	d := res.Digest
	if d == nil || d.Value == "" {
		return nil
	}
	switch d.NormalisationAlgorithm {
	case "genericBlobDigest/v1":
		if isSHA256(d.HashAlgorithm) {
			if manifestDigest != "" {
				// An OCI artifact: its blob is the manifest (see CheckResourceDigest).
				return checkArtifactBlobDigest(manifestDigest, d.Value)
			}
			return checkBlobDigest(sum, d.Value)
		}
	case "ociArtifactDigest/v1":
		return checkManifestDigest(manifestDigest, d.Value)
	}
	return nil
}

// checkNamingDigest compares the sha256 (hex) of content with the digest that
// names the blob, when that is a sha256 digest.
func checkNamingDigest(sum, blobDigest string) error {
	if alg, want, err := blob.ParseDigest(blobDigest); err == nil && alg == "sha256" && want != sum {
		return fmt.Errorf("%w: content hashes to sha256:%s, want %s", errdef.ErrDigestMismatch, sum, blobDigest)
	}
	return nil
}

// hashingReader hashes and counts what is read through it, and keeps the
// first error other than EOF.
type hashingReader struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	err error
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	if err != nil && err != io.EOF && h.err == nil {
		h.err = err
	}
	return n, err
}

// ResourceTypeOCIArtifact is the resource type of an OCI artifact. Read as a
// directory tree (plan.TypeOCIArtifact), its manifest must have exactly one
// layer, of a tree media type (IsTreeLayerMediaType): a Flux OCIRepository
// artifact, or a tar pushed as an OCI artifact.
const ResourceTypeOCIArtifact = "ociArtifact"

// MediaTypeFluxContent is the layer of a Flux OCIRepository artifact
// (flux push artifact, oras push …:application/vnd.cncf.flux.content.v1.tar+gzip).
const MediaTypeFluxContent = "application/vnd.cncf.flux.content.v1.tar+gzip"

// IsTreeLayerMediaType reports whether an OCI layer media type is a
// directory tree: Flux content or a (gzip-compressed) tar. OCI image layers
// are not: an image is no tree to render.
func IsTreeLayerMediaType(mt string) bool {
	return mt == MediaTypeFluxContent || IsTarMediaType(mt)
}

// checkArtifactTree refuses an ociArtifact resource whose content is not
// one tree layer of an OCI manifest. The artifact's reader picks the Helm
// chart layer, else the only layer, and refuses several layers without a
// chart: a layer of a tree media type is therefore the manifest's only one.
func checkArtifactTree(res *ocm.Resource, mt, manifestDigest string) error {
	if res.Type != ResourceTypeOCIArtifact {
		return nil
	}
	if manifestDigest == "" {
		return artifactTreeError(res, "was not read through an OCI manifest (media type "+quoteMediaType(mt)+")")
	}
	if !IsTreeLayerMediaType(mt) {
		return artifactTreeError(res, "has a content layer of media type "+quoteMediaType(mt))
	}
	return nil
}

func artifactTreeError(res *ocm.Resource, what string) error {
	return fmt.Errorf("%w: ociArtifact resource %s %s; the plugin renders an ociArtifact as a directory tree when its OCI manifest has exactly one layer of media type %s or a tar (application/tar, application/tar+gzip, …)",
		errdef.ErrUnsupportedMediaType, res.Identity(), what, MediaTypeFluxContent)
}

func quoteMediaType(mt string) string {
	if mt == "" {
		return "(none)"
	}
	return errdef.Quote(mt)
}
