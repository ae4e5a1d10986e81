package artifactset

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

// maxFileEntries bounds the entries of an artifact set Open unpacks.
const maxFileEntries = 100_000

// File is an artifact set unpacked (decompressed) into a temporary tar
// file that is read by offsets: nothing of it is held in memory. Its blobs
// are an oras content.ReadOnlyStorage (Exists, Fetch: unverified, the
// caller verifies what it copies).
type File struct {
	f       *os.File
	entries map[string][2]int64 // name → offset, size
	// Main is the main artifact's descriptor, Tag its tag ("" when the
	// set names none).
	Main ocispec.Descriptor
	Tag  string
}

// Bounds of an unpacked artifact set: past setRatioFloor bytes, a set may
// not expand more than setMaxRatio times its compressed size (a gzip bomb
// must not fill the disk).
const (
	setMaxRatio   = 100
	setRatioFloor = 256 << 20
)

// Open reads an artifact set of compressed size bytes from r (verified
// by the caller) into a temporary file in dir, which is gone once the File
// is closed.
func Open(r io.Reader, size int64, dir string) (_ *File, err error) {
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
	s := &File{f: f, entries: map[string][2]int64{}}
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
	if magic, _ := br.Peek(2); archive.IsGzip(magic) {
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
// set's tar, at most maxFileEntries entries.
func (s *File) indexEntries() error {
	tr := tar.NewReader(s.f)
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: artifact set: tar: %v", errdef.ErrInvalidInput, err)
		}
		if n > maxFileEntries {
			return fmt.Errorf("%w: artifact set has more than %d entries", errdef.ErrLimitExceeded, maxFileEntries)
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
func (s *File) findMain() error {
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
	if s.Main, err = mainManifest(idx); err != nil {
		return err
	}
	s.Tag = s.Main.Annotations[ocispec.AnnotationRefName]
	return nil
}

func (s *File) blobName(d string) string {
	alg, h, _ := strings.Cut(d, ":")
	if _, ok := s.entries["blobs/"+alg+"."+h]; ok {
		return "blobs/" + alg + "." + h
	}
	return "blobs/" + alg + "/" + h
}

func (s *File) read(name string, limit int64) ([]byte, error) {
	e, ok := s.entries[name]
	if !ok {
		return nil, fmt.Errorf("%s %w in the artifact set", name, errdef.ErrNotFound)
	}
	if e[1] > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes", errdef.ErrLimitExceeded, name, e[1])
	}
	return io.ReadAll(io.NewSectionReader(s.f, e[0], e[1]))
}

// Exists reports whether the set holds the blob d.
func (s *File) Exists(_ context.Context, d ocispec.Descriptor) (bool, error) {
	_, ok := s.entries[s.blobName(d.Digest.String())]
	return ok, nil
}

// Fetch opens the blob d, unverified.
func (s *File) Fetch(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	if _, _, err := blob.ParseDigest(d.Digest.String()); err != nil {
		return nil, err
	}
	e, ok := s.entries[s.blobName(d.Digest.String())]
	if !ok {
		return nil, fmt.Errorf("%w: blob %s is not in the artifact set", errdef.ErrInvalidDescriptor, d.Digest)
	}
	return io.NopCloser(io.NewSectionReader(s.f, e[0], e[1])), nil
}

// Close closes and so removes the temporary file.
func (s *File) Close() error { return s.f.Close() }

// ManifestMediaType is the mediaType field of an OCI manifest or index
// document, "" when it has none.
func ManifestMediaType(raw []byte) string {
	var p struct {
		MediaType string `json:"mediaType"`
	}
	_ = json.Unmarshal(raw, &p)
	return p.MediaType
}
