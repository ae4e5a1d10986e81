package ocmbuild

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// CTF returns the files of a CTF (artifact-index.json and blobs/sha256.<hex>)
// holding the given component versions, laid out by package ctf. The index
// keeps the key order the committed fixtures (testdata/) were written with.
func CTF(comps ...*Component) (map[string][]byte, error) {
	blobs := map[string][]byte{}
	ix := ctf.Index{SchemaVersion: 1}
	for _, c := range comps {
		a, err := c.Artifact()
		if err != nil {
			return nil, fmt.Errorf("component %s:%s: %w", c.Name, c.Version, err)
		}
		maps.Copy(blobs, a.Blobs)
		ix.Artifacts = append(ix.Artifacts, ctf.IndexArtifact{Repository: ocm.DescriptorRepository(c.Name),
			Tag: ocm.VersionToTag(c.Version), Digest: a.ManifestDigest, MediaType: ocispec.MediaTypeImageManifest})
	}
	return ctf.Files(ix, blobs, ctf.SortedKeyOrder)
}

// WriteCTF writes a CTF in directory form. The files are written as they
// are rather than through ctf.Writer: a fixture replaces any index already
// in dir (a Writer adds to it), and its files stay 0644 and byte-stable.
func WriteCTF(dir string, comps ...*Component) error {
	files, err := CTF(comps...)
	if err != nil {
		return err
	}
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteCTFArchive writes a CTF as a tar file, or a tgz when gz is set.
func WriteCTFArchive(path string, gz bool, comps ...*Component) error {
	files, err := CTF(comps...)
	if err != nil {
		return err
	}
	b, err := TarFiles(files, gz)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// StoredCTFTgz is the CTF of comps as a tgz gzipped without compression:
// the archives of components whose data differ only in their bytes have
// one size (tests of what tells two archives apart).
func StoredCTFTgz(comps ...*Component) ([]byte, error) {
	files, err := CTF(comps...)
	if err != nil {
		return nil, err
	}
	b, err := TarFiles(files, false)
	if err != nil {
		return nil, err
	}
	return gzipBytesLevel(b, gzip.NoCompression)
}

func gzipBytes(b []byte) ([]byte, error) { return gzipBytesLevel(b, gzip.BestCompression) }

func gzipBytesLevel(b []byte, level int) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, level)
	zw.ModTime = fixedTime
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
