package artifactset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
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
	if s.Main, err = mainManifest(idx); err != nil {
		return nil, err
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

// mainManifest is the main manifest of an artifact set with index.json
// idx, where OCM finds it (RetrieveMainArtifactFromIndex, GetMain and
// GetArtifact of its artifactset package): the manifest idx lists whose
// digest, or one of whose tags (software.ocm/tags), the software.ocm/main
// annotation names; without the annotation the only manifest listed. A
// main manifest idx does not list is not found, even when the set holds
// its blob. Read and Open both take it from here.
func mainManifest(idx ocispec.Index) (ocispec.Descriptor, error) {
	main := idx.Annotations[AnnotationMain]
	if main == "" {
		switch len(idx.Manifests) {
		case 0:
			return ocispec.Descriptor{}, fmt.Errorf("%w: artifact set index.json lists no manifests", errdef.ErrInvalidDescriptor)
		case 1:
			return idx.Manifests[0], nil
		}
		return ocispec.Descriptor{}, fmt.Errorf("%w: artifact set index.json lists %d manifests and names none of them main (annotation %s)",
			errdef.ErrInvalidDescriptor, len(idx.Manifests), AnnotationMain)
	}
	byDigest := digest.Digest(main).Validate() == nil
	for _, m := range idx.Manifests {
		if byDigest && m.Digest.String() == main || !byDigest && slices.Contains(strings.Split(m.Annotations[AnnotationTags], ","), main) {
			return m, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%w: artifact set main manifest %s is not listed in index.json", errdef.ErrInvalidDescriptor, errdef.Quote(main))
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
