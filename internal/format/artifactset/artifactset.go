package artifactset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

// Media types of artifact sets, as the OCM CLI writes them: a manifest's
// or an index's, gzipped or not.
const (
	MediaType         = "application/vnd.oci.image.manifest.v1+tar+gzip"
	MediaTypeTar      = "application/vnd.oci.image.manifest.v1+tar"
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+tar+gzip"
	MediaTypeIndexTar = "application/vnd.oci.image.index.v1+tar"

	// AnnotationMain of index.json names the main artifact's digest,
	// AnnotationTags its tags.
	AnnotationMain = "software.ocm/main"
	AnnotationTags = "software.ocm/tags"
)

// IsArtifactSet reports whether a local blob's media type names an
// artifact set, as OCM decides it: an OCI media type ending in +tar or
// +tar+gzip (parameters apart). The one predicate of reading, verifying
// and transferring them.
func IsArtifactSet(mediaType string) bool {
	mt, _, _ := strings.Cut(mediaType, ";")
	mt = strings.TrimSpace(mt)
	if !strings.HasPrefix(mt, "application/vnd.oci.") {
		return false
	}
	return strings.HasSuffix(mt, "+tar") || strings.HasSuffix(mt, "+tar+gzip")
}

// Set is a read artifact set.
type Set struct {
	tree     *archive.Tree
	Main     ocispec.Descriptor // the main manifest's descriptor
	Manifest ocispec.Manifest
}

// Read parses an artifact set blob and its main manifest.
func Read(data []byte, opts ...archive.Option) (*Set, error) {
	tree, err := archive.ReadTree(bytes.NewReader(data), opts...)
	if err != nil {
		return nil, fmt.Errorf("artifact set: %w", err)
	}
	s := &Set{tree: tree}
	idxRaw, err := tree.ReadFile("index.json")
	if err != nil {
		idxRaw, err = tree.ReadFile("artifact-descriptor.json")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: artifact set has no index.json", errdef.ErrInvalidDescriptor)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(idxRaw, &idx); err != nil {
		return nil, fmt.Errorf("%w: artifact set index.json: %v", errdef.ErrInvalidDescriptor, err)
	}
	main := idx.Annotations[AnnotationMain]
	switch {
	case main != "":
		found := false
		for _, m := range idx.Manifests {
			if m.Digest.String() == main {
				s.Main, found = m, true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: artifact set main manifest %s is not in index.json", errdef.ErrInvalidDescriptor, main)
		}
	case len(idx.Manifests) > 0:
		s.Main = idx.Manifests[0]
	default:
		return nil, fmt.Errorf("%w: artifact set index.json lists no manifests", errdef.ErrInvalidDescriptor)
	}
	raw, err := s.Blob(s.Main.Digest.String())
	if err != nil {
		return nil, fmt.Errorf("artifact set main manifest: %w", err)
	}
	if err := json.Unmarshal(raw, &s.Manifest); err != nil {
		return nil, fmt.Errorf("%w: artifact set main manifest: %v", errdef.ErrInvalidDescriptor, err)
	}
	return s, nil
}

// Blob returns the verified content of the blob with the given digest.
func (s *Set) Blob(digest string) ([]byte, error) {
	alg, h, err := blob.ParseDigest(digest)
	if err != nil {
		return nil, err
	}
	var data []byte
	for _, name := range []string{"blobs/" + alg + "." + h, "blobs/" + alg + "/" + h} {
		if data, err = s.tree.ReadFile(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("blob %s %w in artifact set", digest, errdef.ErrNotFound)
	}
	if got := blob.Digest(data); alg == "sha256" && got != alg+":"+h {
		return nil, fmt.Errorf("%w: artifact set blob %s hashes to %s", errdef.ErrDigestMismatch, digest, got)
	}
	return data, nil
}

// Layer returns the content of the main manifest's single layer of one of the
// given media types.
func (s *Set) Layer(mediaTypes ...string) ([]byte, ocispec.Descriptor, error) {
	for _, l := range s.Manifest.Layers {
		for _, mt := range mediaTypes {
			if l.MediaType == mt {
				b, err := s.Blob(l.Digest.String())
				if err == nil && l.Size > 0 && int64(len(b)) != l.Size {
					err = fmt.Errorf("%w: layer %s is %d bytes, manifest says %d", errdef.ErrDigestMismatch, l.Digest, len(b), l.Size)
				}
				return b, l, err
			}
		}
	}
	var have []string
	for _, l := range s.Manifest.Layers {
		have = append(have, l.MediaType)
	}
	return nil, ocispec.Descriptor{}, fmt.Errorf("%w: artifact set has no layer of type %s (has: %s)",
		errdef.ErrUnsupportedMediaType, strings.Join(mediaTypes, " or "), errdef.Quote(strings.Join(have, ", ")))
}
