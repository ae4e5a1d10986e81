package ctf_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// What a Writer writes, in every form Pack makes and through Extract, the
// reader reads.
func TestWriterRoundTrip(t *testing.T) {
	const comp = "example.com/test/writer"
	c := &ocmbuild.Component{Name: comp, Version: "1.0.0+build.1", Resources: []ocmbuild.Resource{{Name: "data", Type: "blob", Data: []byte("hello"), MediaType: "text/plain"}}}
	a, err := c.Artifact()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "ctf")
	w, err := ctf.OpenWriter(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	for d, b := range a.Blobs {
		if err := w.PutBlob(d, int64(len(b)), bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		if ok, err := w.Has(d, int64(len(b))); !ok || err != nil {
			t.Fatalf("Has(%s) = %v, %v", d, ok, err)
		}
	}
	if err := w.Tag(ocm.DescriptorRepository(comp), ocm.VersionToTag(c.Version), a.ManifestDigest, ocispec.MediaTypeImageManifest); err != nil {
		t.Fatal(err)
	}
	read := func(p string) {
		t.Helper()
		r, err := ctf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.LookupComponentVersion(context.Background(), comp, c.Version); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	read(dir)
	for _, form := range []struct {
		name string
		gz   bool
	}{{"ctf.tar", false}, {"ctf.tgz", true}} {
		p := filepath.Join(tmp, form.name)
		if err := ctf.Pack(dir, p, form.gz); err != nil {
			t.Fatal(err)
		}
		read(p)
		out := filepath.Join(tmp, form.name+".x")
		if err := ctf.Extract(p, out); err != nil {
			t.Fatal(err)
		}
		read(out)
		if w, err := ctf.OpenWriter(out, "extracted"); err != nil || len(w.Artifacts()) != 1 {
			t.Fatalf("extracted index: %v, %v", w, err)
		}
	}
	// A blob file of another content is a conflict, never overwritten.
	d := a.ManifestDigest
	name, _ := ctf.BlobFileName(d)
	if err := os.WriteFile(filepath.Join(dir, name), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Has(d, -1); !errors.Is(err, errdef.ErrConflict) {
		t.Fatalf("Has on other content: %v", err)
	}
	if err := w.PutBlob(d, -1, strings.NewReader("not the manifest")); err == nil {
		t.Fatal("PutBlob took content of another digest")
	}
}

func TestEncodeIndexKeyOrder(t *testing.T) {
	ix := ctf.Index{SchemaVersion: 1, Artifacts: []ctf.IndexArtifact{{Repository: "b", Tag: "1", Digest: "sha256:x"}, {Repository: "a", Tag: "2", Digest: "sha256:y"}}}
	for order, want := range map[ctf.KeyOrder]string{
		ctf.OCMKeyOrder:    `{"schemaVersion":1,"artifacts":[{"repository":"a","tag":"2","digest":"sha256:y"},{"repository":"b","tag":"1","digest":"sha256:x"}]}`,
		ctf.SortedKeyOrder: `{"artifacts":[{"repository":"a","tag":"2","digest":"sha256:y"},{"repository":"b","tag":"1","digest":"sha256:x"}],"schemaVersion":1}`,
	} {
		b, err := ctf.EncodeIndex(ix, order)
		if err != nil || string(b) != want {
			t.Fatalf("order %d: %s, %v", order, b, err)
		}
	}
}

// Extract takes the index and digest-named blobs only: a link is refused.
func TestExtractRefusesLinks(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "blobs/sha256.x", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
	tw.Close()
	p := filepath.Join(t.TempDir(), "link.tar")
	os.WriteFile(p, buf.Bytes(), 0o644)
	if err := ctf.Extract(p, t.TempDir()); !errors.Is(err, errdef.ErrUnsafeArchive) {
		t.Fatalf("Extract of a link: %v", err)
	}
}
