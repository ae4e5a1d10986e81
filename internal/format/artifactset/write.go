package artifactset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/counting"
)

// Written is an artifact set written to a temporary file (gone once it is
// closed): Desc describes it as a local blob (media type, digest, size).
type Written struct {
	File *os.File
	Desc ocispec.Descriptor
}

// FetchFunc reads a blob of the graph Write writes.
type FetchFunc func(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error)

// Write writes the graph under root (read through fetch, each
// node verified) as an artifact set tgz into a temporary file in dir, as
// the OCM CLI stores an image copied by value into a CTF.
func Write(ctx context.Context, fetch FetchFunc, root ocispec.Descriptor, tag, dir string, nodes []ocispec.Descriptor) (_ *Written, err error) {
	f, err := os.CreateTemp(dir, "argocd-ocm-transfer-set-*.tgz")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	h := sha256.New()
	cw := &counting.Writer{W: io.MultiWriter(f, h)}
	tw := archive.NewWriter(cw, archive.WithGzip())
	entry := tw.File
	ib := setIndex(root, tag)
	if err := entry("index.json", int64(len(ib)), strings.NewReader(string(ib))); err != nil {
		return nil, err
	}
	layout := `{"imageLayoutVersion": "1.0.0"}`
	if err := entry("oci-layout", int64(len(layout)), strings.NewReader(layout)); err != nil {
		return nil, err
	}
	if err := tw.Dir("blobs/"); err != nil {
		return nil, err
	}
	if err := writeSetBlobs(ctx, fetch, entry, nodes); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	mt := MediaType
	if root.MediaType == ocispec.MediaTypeImageIndex || root.MediaType == "application/vnd.docker.distribution.manifest.list.v2+json" {
		mt = MediaTypeIndex
	}
	return &Written{File: f, Desc: ocispec.Descriptor{MediaType: mt,
		Digest: digest.Digest("sha256:" + hex.EncodeToString(h.Sum(nil))), Size: cw.N}}, nil
}

// setIndex is the index.json of an artifact set whose main artifact is
// root, tagged tag.
func setIndex(root ocispec.Descriptor, tag string) []byte {
	rootDesc := root
	rootDesc.Annotations = map[string]string{}
	if tag != "" {
		rootDesc.Annotations[ocispec.AnnotationRefName] = tag
		rootDesc.Annotations[AnnotationTags] = tag
	}
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{rootDesc},
		Annotations: map[string]string{AnnotationMain: root.Digest.String()}}
	idx.SchemaVersion = 2
	ib, _ := json.Marshal(idx)
	return ib
}

// writeSetBlobs writes each distinct node, read through fetch and
// verified, as a blob entry of an artifact set.
func writeSetBlobs(ctx context.Context, fetch FetchFunc, entry func(name string, size int64, r io.Reader) error, nodes []ocispec.Descriptor) error {
	seen := map[digest.Digest]bool{}
	for _, n := range nodes {
		if seen[n.Digest] {
			continue
		}
		seen[n.Digest] = true
		rc, err := fetch(ctx, n)
		if err != nil {
			return err
		}
		v, err := blob.NewVerifier(rc, n.Digest.String(), n.Size)
		if err != nil {
			rc.Close()
			return err
		}
		alg, hx, _ := strings.Cut(n.Digest.String(), ":")
		err = entry("blobs/"+alg+"."+hx, n.Size, v)
		v.Close()
		if err != nil {
			return fmt.Errorf("blob %s: %w", n.Digest, err)
		}
	}
	return nil
}
