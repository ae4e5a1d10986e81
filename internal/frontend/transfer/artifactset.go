package transfer

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

// fixedTime is the modification time of every entry of the tars a transfer
// writes, as the OCM CLI writes it.
var fixedTime = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)

// Artifact sets: an OCI artifact (a Helm chart, an image) as one local
// blob: a tar (optionally gzipped) holding index.json (annotated
// software.ocm/main with the main manifest's digest), oci-layout and flat
// blobs/<alg>.<hex>, as the OCM CLI writes them.
const (
	mediaTypeArtifactSet      = "application/vnd.oci.image.manifest.v1+tar+gzip"
	mediaTypeIndexArtifactSet = "application/vnd.oci.image.index.v1+tar+gzip"
	annotationMain            = "software.ocm/main"
	annotationTags            = "software.ocm/tags"
	maxSetEntries             = 100_000
)

// isArtifactSet reports whether a local blob's media type is an OCI artifact
// the OCM CLI uploads as an artifact of its own: an OCI media type ending in
// +tar or +tar+gzip.
func isArtifactSet(mt string) bool {
	mt, _, _ = strings.Cut(mt, ";")
	if !strings.HasPrefix(mt, "application/vnd.oci.") {
		return false
	}
	return strings.HasSuffix(mt, "+tar") || strings.HasSuffix(mt, "+tar+gzip")
}

type fetchFunc func(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error)

// artifactSet is an artifact set unpacked (decompressed) into a temporary
// tar file that is read by offsets: nothing of it is held in memory.
type artifactSet struct {
	f       *os.File
	entries map[string][2]int64 // name → offset, size
	main    ocispec.Descriptor
	tag     string
}

// Bounds of an unpacked artifact set: past setRatioFloor bytes, a set may
// not expand more than setMaxRatio times its compressed size (a gzip bomb
// must not fill the disk).
const (
	setMaxRatio   = 100
	setRatioFloor = 256 << 20
)

// openArtifactSet reads an artifact set of compressed size bytes from r
// (verified by the caller) into a temporary file in dir.
func openArtifactSet(r io.Reader, size int64, dir string) (_ *artifactSet, err error) {
	f, err := os.CreateTemp(dir, "argocd-ocm-transfer-set-*.tar")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // unlinked: gone when closed, whatever happens
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if err := copySetTar(f, r, size); err != nil {
		return nil, err
	}
	s := &artifactSet{f: f, entries: map[string][2]int64{}}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if err := s.indexEntries(); err != nil {
		return nil, err
	}
	if err := s.findMain(); err != nil {
		return nil, err
	}
	return s, nil
}

// copySetTar copies the tar of an artifact set of compressed size bytes
// (gzipped or not) from r to f, bounded by setMaxRatio.
func copySetTar(f *os.File, r io.Reader, size int64) error {
	br := bufio.NewReader(r)
	var in io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%w: artifact set: gzip: %v", errdef.ErrInvalidInput, err)
		}
		in = zr
	}
	limit := max(setRatioFloor, setMaxRatio*size)
	n, err := io.Copy(f, io.LimitReader(in, limit+1))
	if err != nil {
		return fmt.Errorf("artifact set: %w", err)
	}
	if n > limit {
		return fmt.Errorf("%w: artifact set expands to more than %d bytes (%d compressed)", errdef.ErrLimitExceeded, limit, size)
	}
	return nil
}

// indexEntries records the offset and size of each regular file of the
// set's tar, at most maxSetEntries entries.
func (s *artifactSet) indexEntries() error {
	tr := tar.NewReader(s.f)
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: artifact set: tar: %v", errdef.ErrInvalidInput, err)
		}
		if n > maxSetEntries {
			return fmt.Errorf("%w: artifact set has more than %d entries", errdef.ErrLimitExceeded, maxSetEntries)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		off, err := s.f.Seek(0, io.SeekCurrent)
		if err != nil {
			return err
		}
		s.entries[path.Clean(strings.TrimPrefix(h.Name, "/"))] = [2]int64{off, h.Size}
	}
}

// findMain sets the set's main manifest and tag from its index.json.
func (s *artifactSet) findMain() error {
	raw, err := s.read("index.json", 4<<20)
	if err != nil {
		if raw, err = s.read("artifact-descriptor.json", 4<<20); err != nil {
			return fmt.Errorf("%w: artifact set has no index.json", errdef.ErrInvalidDescriptor)
		}
	}
	var idx ocispec.Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return fmt.Errorf("%w: artifact set index.json: %v", errdef.ErrInvalidDescriptor, err)
	}
	main := idx.Annotations[annotationMain]
	for _, m := range idx.Manifests {
		if main == "" || m.Digest.String() == main {
			s.main = m
			s.tag = m.Annotations[ocispec.AnnotationRefName]
			break
		}
	}
	if s.main.Digest == "" {
		if main == "" {
			return fmt.Errorf("%w: artifact set index.json names no manifest", errdef.ErrInvalidDescriptor)
		}
		// The main artifact need not be listed (older writers): find it by digest.
		s.main = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(main), Size: -1}
		if sz, ok := s.blobSize(main); ok {
			s.main.Size = sz
			if raw, err := s.read(s.blobName(main), 4<<20); err == nil {
				s.main.MediaType = probeMediaType(raw, s.main.MediaType)
			}
		}
	}
	return nil
}

func (s *artifactSet) blobName(d string) string {
	alg, h, _ := strings.Cut(d, ":")
	if _, ok := s.entries["blobs/"+alg+"."+h]; ok {
		return "blobs/" + alg + "." + h
	}
	return "blobs/" + alg + "/" + h
}

func (s *artifactSet) blobSize(d string) (int64, bool) {
	e, ok := s.entries[s.blobName(d)]
	return e[1], ok
}

func (s *artifactSet) read(name string, limit int64) ([]byte, error) {
	e, ok := s.entries[name]
	if !ok {
		return nil, fmt.Errorf("%s %w in the artifact set", name, errdef.ErrNotFound)
	}
	if e[1] > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes", errdef.ErrLimitExceeded, name, e[1])
	}
	return io.ReadAll(io.NewSectionReader(s.f, e[0], e[1]))
}

// Exists and Fetch make the set's blobs an oras content.ReadOnlyStorage
// (unverified: see source).
func (s *artifactSet) Exists(_ context.Context, d ocispec.Descriptor) (bool, error) {
	_, ok := s.entries[s.blobName(d.Digest.String())]
	return ok, nil
}

func (s *artifactSet) Fetch(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	if _, _, err := blob.ParseDigest(d.Digest.String()); err != nil {
		return nil, err
	}
	e, ok := s.entries[s.blobName(d.Digest.String())]
	if !ok {
		return nil, fmt.Errorf("%w: blob %s is not in the artifact set", errdef.ErrInvalidDescriptor, d.Digest)
	}
	return io.NopCloser(io.NewSectionReader(s.f, e[0], e[1])), nil
}

func (s *artifactSet) Close() error { return s.f.Close() }

func probeMediaType(raw []byte, def string) string {
	var p struct {
		MediaType string `json:"mediaType"`
	}
	if json.Unmarshal(raw, &p) == nil && p.MediaType != "" {
		return p.MediaType
	}
	return def
}

// writtenSet is an artifact set written to a temporary file.
type writtenSet struct {
	f         *os.File
	desc      ocispec.Descriptor // as a local blob layer
	mediaType string
}

// writeArtifactSet writes the graph under root (read through fetch, each
// node verified) as an artifact set tgz into a temporary file in dir, as
// the OCM CLI stores an image copied by value into a CTF.
func writeArtifactSet(ctx context.Context, fetch fetchFunc, root ocispec.Descriptor, tag, dir string, nodes []ocispec.Descriptor) (_ *writtenSet, err error) {
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
	cw := &countWriter{w: io.MultiWriter(f, h)}
	zw := gzip.NewWriter(cw)
	zw.ModTime = fixedTime
	tw := tar.NewWriter(zw)
	entry := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: fixedTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	ib := setIndex(root, tag)
	if err := entry("index.json", int64(len(ib)), strings.NewReader(string(ib))); err != nil {
		return nil, err
	}
	layout := `{"imageLayoutVersion": "1.0.0"}`
	if err := entry("oci-layout", int64(len(layout)), strings.NewReader(layout)); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/", Mode: 0o755, ModTime: fixedTime, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if err := writeSetBlobs(ctx, fetch, entry, nodes); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	mt := mediaTypeArtifactSet
	if root.MediaType == ocispec.MediaTypeImageIndex || root.MediaType == "application/vnd.docker.distribution.manifest.list.v2+json" {
		mt = mediaTypeIndexArtifactSet
	}
	return &writtenSet{f: f, mediaType: mt, desc: ocispec.Descriptor{MediaType: mt,
		Digest: digest.Digest("sha256:" + hex.EncodeToString(h.Sum(nil))), Size: cw.n}}, nil
}

// setIndex is the index.json of an artifact set whose main artifact is
// root, tagged tag.
func setIndex(root ocispec.Descriptor, tag string) []byte {
	rootDesc := root
	rootDesc.Annotations = map[string]string{}
	if tag != "" {
		rootDesc.Annotations[ocispec.AnnotationRefName] = tag
		rootDesc.Annotations[annotationTags] = tag
	}
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{rootDesc},
		Annotations: map[string]string{annotationMain: root.Digest.String()}}
	idx.SchemaVersion = 2
	ib, _ := json.Marshal(idx)
	return ib
}

// writeSetBlobs writes each distinct node, read through fetch and
// verified, as a blob entry of an artifact set.
func writeSetBlobs(ctx context.Context, fetch fetchFunc, entry func(name string, size int64, r io.Reader) error, nodes []ocispec.Descriptor) error {
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

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
