package access_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// tarOf is a tar of files in the given order, gzipped when gz.
func tarOf(tb testing.TB, gz bool, files ...[2]string) []byte {
	tb.Helper()
	var b bytes.Buffer
	var w io.Writer = &b
	var zw *gzip.Writer
	if gz {
		zw, _ = gzip.NewWriterLevel(&b, gzip.BestSpeed)
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(f[1]))}); err != nil {
			tb.Fatal(err)
		}
		if _, err := io.WriteString(tw, f[1]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	return b.Bytes()
}

// fakeBlob is a blob that, unlike the stores' blobs, does not verify itself:
// it shows what ReadTree checks on its own.
type fakeBlob struct {
	r         io.Reader
	size      int64
	mediaType string
	digest    string
	closed    bool
}

func (b *fakeBlob) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *fakeBlob) Close() error               { b.closed = true; return nil }
func (b *fakeBlob) Size() int64                { return b.size }
func (b *fakeBlob) MediaType() string          { return b.mediaType }
func (b *fakeBlob) Digest() string             { return b.digest }

func newBlob(data []byte) *fakeBlob {
	return &fakeBlob{r: bytes.NewReader(data), size: int64(len(data)), digest: blob.Digest(data)}
}

// fakeCV serves one local blob.
type fakeCV struct {
	blob *fakeBlob
	err  error
}

func (f *fakeCV) Descriptor() *ocm.Descriptor { return &ocm.Descriptor{} }
func (f *fakeCV) DescriptorDigest() string    { return "" }
func (f *fakeCV) Repository() ocm.Repository  { return nil }
func (f *fakeCV) OpenLocalBlob(context.Context, ocm.Access) (ocm.Blob, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.blob, nil
}

func localResource(data []byte, mediaType string) *ocm.Resource {
	return &ocm.Resource{
		ElementMeta: ocm.ElementMeta{Name: "tree"},
		Type:        "directoryTree",
		Access:      ocm.Access{Type: "localBlob", Fields: map[string]any{"type": "localBlob", "localReference": blob.Digest(data), "mediaType": mediaType}},
		Digest:      &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "genericBlobDigest/v1", Value: strings.TrimPrefix(blob.Digest(data), "sha256:")},
	}
}

// failAfter delivers r, then fails once with err (and then reports EOF, as
// readers need not repeat an error).
type failAfter struct {
	r      io.Reader
	err    error
	failed bool
}

func (f *failAfter) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF && !f.failed {
		f.failed = true
		return n, f.err
	}
	return n, err
}

func TestReadTree(t *testing.T) {
	files := [][2]string{{"kustomization.yaml", "resources: [a.yaml]\n"}, {"a.yaml", "kind: ConfigMap\n"}}
	tgz := tarOf(t, true, files...)
	plain := tarOf(t, false, files...)
	errBroken := errors.New("connection reset")

	tests := []struct {
		name    string
		data    []byte
		setup   func(res *ocm.Resource, b *fakeBlob, r *access.Resolver)
		opts    []archive.Option
		wantErr error
		mention []string
	}{
		{name: "tgz", data: tgz},
		{name: "tar", data: plain},
		// Padding or junk after the end marker is never unpacked, but it
		// is part of the blob, and the digests cover it.
		{name: "bytes after the tar end marker", data: append(bytes.Clone(plain), make([]byte, 1<<20)...)},
		{name: "undeclared size", data: tgz, setup: func(_ *ocm.Resource, b *fakeBlob, _ *access.Resolver) { b.size = -1 }},
		{name: "no resource digest", data: tgz, setup: func(res *ocm.Resource, _ *fakeBlob, _ *access.Resolver) { res.Digest = nil }},
		{name: "gzip whatever its label", data: tgz, setup: func(res *ocm.Resource, _ *fakeBlob, _ *access.Resolver) {
			res.Access.Fields["mediaType"] = "application/octet-stream"
		}},
		{
			name: "content does not match the blob digest", data: tgz,
			setup: func(res *ocm.Resource, b *fakeBlob, _ *access.Resolver) {
				b.digest = blob.Digest([]byte("other")) // what the store named it
				res.Digest = nil
			},
			wantErr: errdef.ErrDigestMismatch, mention: []string{"resource tree:", "content hashes to"},
		},
		{
			name: "content does not match the resource digest", data: tgz,
			setup: func(res *ocm.Resource, _ *fakeBlob, _ *access.Resolver) {
				res.Digest.Value = strings.TrimPrefix(blob.Digest([]byte("other")), "sha256:")
			},
			wantErr: errdef.ErrDigestMismatch, mention: []string{"resource tree:", "the component descriptor says"},
		},
		{
			// Bytes after the tar end marker are never unpacked, but they
			// are part of the blob: the check must still cover them (past
			// any read-ahead buffer).
			name: "tampered after the tar end marker", data: append(bytes.Clone(plain), bytes.Repeat([]byte("tampered"), 64<<10)...),
			setup: func(res *ocm.Resource, b *fakeBlob, _ *access.Resolver) {
				b.digest = blob.Digest(plain)
				res.Digest.Value = strings.TrimPrefix(blob.Digest(plain), "sha256:")
			},
			wantErr: errdef.ErrDigestMismatch, mention: []string{"resource tree:"},
		},
		{
			// Corrupt and mismatching: the mismatch explains the corruption.
			name: "corrupt and mismatching", data: tgz[:len(tgz)-8],
			setup: func(res *ocm.Resource, b *fakeBlob, _ *access.Resolver) {
				b.digest = blob.Digest(tgz)
				res.Digest = nil
			},
			wantErr: errdef.ErrDigestMismatch, mention: []string{"resource tree:"},
		},
		{
			name: "corrupt but as published", data: tgz[:len(tgz)-8],
			wantErr: io.ErrUnexpectedEOF, mention: []string{"resource tree:", "gzip"},
		},
		{
			name: "read error the unpacking saw first", data: tgz,
			setup: func(_ *ocm.Resource, b *fakeBlob, _ *access.Resolver) {
				b.r = &failAfter{r: bytes.NewReader(tgz[:100]), err: errBroken}
			},
			wantErr: errBroken, mention: []string{"resource tree:", "local blob sha256:"},
		},
		{
			name: "declared size over the limit", data: tgz,
			setup:   func(_ *ocm.Resource, _ *fakeBlob, r *access.Resolver) { r.MaxBlobSize = int64(len(tgz)) - 1 },
			wantErr: errdef.ErrLimitExceeded, mention: []string{"resource tree:", "more than the limit"},
		},
		{
			name: "undeclared size over the limit", data: tgz,
			setup: func(_ *ocm.Resource, b *fakeBlob, r *access.Resolver) {
				b.size = -1
				r.MaxBlobSize = int64(len(tgz)) - 1
			},
			wantErr: errdef.ErrLimitExceeded, mention: []string{"resource tree:", "more than"},
		},
		{
			name: "archive limits apply", data: tgz, opts: []archive.Option{archive.WithMaxSize(4)},
			wantErr: errdef.ErrLimitExceeded, mention: []string{"resource tree:", `archive entry "kustomization.yaml"`},
		},
		{
			name: "not a tar by its media type", data: []byte(`{"a": 1}`),
			setup: func(res *ocm.Resource, _ *fakeBlob, _ *access.Resolver) {
				res.Access.Fields["mediaType"] = "application/json"
			},
			wantErr: errdef.ErrUnsupportedMediaType, mention: []string{"resource tree:", `"application/json"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBlob(tt.data)
			res := localResource(tt.data, "application/x-tar")
			r := &access.Resolver{}
			if tt.setup != nil {
				tt.setup(res, b, r)
			}
			tree, err := r.ReadTree(context.Background(), &fakeCV{blob: b}, res, tt.opts...)
			if !b.closed {
				t.Error("blob not closed")
			}
			if br, ok := b.r.(*bytes.Reader); ok && br.Len() != 0 && tt.wantErr == nil {
				t.Errorf("blob not read to its end: %d bytes left", br.Len())
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(tree.Files(), ","); got != "a.yaml,kustomization.yaml" {
					t.Fatalf("files = %s", got)
				}
				return
			}
			if tree != nil {
				t.Fatal("a tree came with the error")
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("err %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestReadTreeAccessErrors(t *testing.T) {
	notFound := fmt.Errorf("blob: %w", errdef.ErrNotFound)
	res := localResource(nil, "")
	if _, err := (&access.Resolver{}).ReadTree(context.Background(), &fakeCV{err: notFound}, res); !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("missing local blob: %v", err)
	}
	res.Access = ocm.Access{Type: "ociArtifact", Fields: map[string]any{"imageReference": "example.com/tree:1"}}
	if _, err := (&access.Resolver{}).ReadTree(context.Background(), &fakeCV{}, res); !errors.Is(err, errdef.ErrUnsupportedAccess) ||
		!strings.Contains(err.Error(), "offline") {
		t.Fatalf("remote access offline: %v", err)
	}
	res.Access = ocm.Access{Type: "none"}
	if _, err := (&access.Resolver{}).ReadTree(context.Background(), &fakeCV{}, res); !errors.Is(err, errdef.ErrUnsupportedAccess) {
		t.Fatalf("access none: %v", err)
	}
}

// sourceOnly is an ArtifactSource that cannot stream.
type sourceOnly struct{ data []byte }

func (s sourceOnly) Artifact(context.Context, ocm.ComponentVersion, ocm.Access) (*access.Content, error) {
	return &access.Content{Data: s.data, MediaType: "application/x-tar", Digest: blob.Digest(s.data)}, nil
}

// opener streams as well.
type opener struct {
	sourceOnly
	opened *fakeBlob
}

func (o *opener) OpenArtifact(context.Context, ocm.ComponentVersion, ocm.Access) (ocm.Blob, string, error) {
	o.opened = newBlob(o.data)
	o.opened.mediaType = "application/x-tar"
	return o.opened, "", nil
}

func TestReadTreeRemote(t *testing.T) {
	data := tarOf(t, false, [2]string{"a.yaml", "kind: ConfigMap\n"})
	remote := func() *ocm.Resource {
		res := localResource(data, "")
		res.Access = ocm.Access{Type: "ociBlob", Fields: map[string]any{"ref": "example.com/tree", "digest": blob.Digest(data)}}
		return res
	}
	o := &opener{sourceOnly: sourceOnly{data: data}}
	for name, src := range map[string]access.ArtifactSource{"streamed": o, "read whole": sourceOnly{data: data}} {
		t.Run(name, func(t *testing.T) {
			tree, err := (&access.Resolver{Artifacts: src}).ReadTree(context.Background(), &fakeCV{}, remote())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(tree.Files(), ","); got != "a.yaml" {
				t.Fatalf("files = %s", got)
			}
			res := remote()
			res.Digest.Value = strings.TrimPrefix(blob.Digest(nil), "sha256:")
			if _, err := (&access.Resolver{Artifacts: src}).ReadTree(context.Background(), &fakeCV{}, res); !errors.Is(err, errdef.ErrDigestMismatch) {
				t.Fatalf("mismatching remote tree: %v", err)
			}
		})
	}
	if o.opened == nil || !o.opened.closed {
		t.Fatal("the streaming source was not used, or its blob not closed")
	}

	// A local blob that is not in the store is read through its global access.
	res := localResource(data, "")
	res.Access.Fields["globalAccess"] = map[string]any{"type": "ociBlob", "ref": "example.com/tree", "digest": blob.Digest(data)}
	o.opened = nil
	if _, err := (&access.Resolver{Artifacts: o}).ReadTree(context.Background(), &fakeCV{err: errdef.ErrNotFound}, res); err != nil || o.opened == nil {
		t.Fatalf("global access: %v (streamed: %v)", err, o.opened != nil)
	}
}

// TestReadTreeHoldsTheBlobOnce unpacks a tree with one incompressible file
// from a stream: the file is the only large allocation. Reading the blob
// whole first, as before, allocated the blob as well (twice with a growing
// buffer).
func TestReadTreeHoldsTheBlobOnce(t *testing.T) {
	const size = 8 << 20
	payload := make([]byte, size)
	rand.NewChaCha8([32]byte{1}).Read(payload)
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			data := tarOf(t, gz, [2]string{"kustomization.yaml", "resources: []\n"}, [2]string{"data/payload.bin", string(payload)})
			b := newBlob(data)
			res := localResource(data, "")

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			tree, err := (&access.Resolver{}).ReadTree(context.Background(), &fakeCV{blob: b}, res)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if tree.Size() < size {
				t.Fatalf("tree holds %d bytes", tree.Size())
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size+size/4 {
				t.Fatalf("unpacking a %d MiB tree allocated %.1f MiB, want about the tree once", size>>20, float64(alloc)/(1<<20))
			}
		})
	}
}

// TestReadBlobPresized: a blob of declared size is read into one slice of
// that size, not a buffer grown by doubling.
func TestReadBlobPresized(t *testing.T) {
	const size = 8<<20 + 12345
	data := make([]byte, size)
	b := newBlob(data)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := access.ReadBlob(b, size)
	runtime.ReadMemStats(&after)
	if err != nil || len(got) != size {
		t.Fatalf("ReadBlob: %d bytes, %v", len(got), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size+64<<10 {
		t.Fatalf("reading %d bytes allocated %d", size, alloc)
	}
	if _, err := access.ReadBlob(newBlob(data), size-1); !errors.Is(err, errdef.ErrLimitExceeded) {
		t.Fatalf("over the limit: %v", err)
	}
	undeclared := newBlob(data)
	undeclared.size = -1
	if _, err := access.ReadBlob(undeclared, size-1); !errors.Is(err, errdef.ErrLimitExceeded) {
		t.Fatalf("over the limit, undeclared size: %v", err)
	}
}

// TestReadTreeFromCTF streams a tree from a CTF blob file, and refuses it
// once the file changed on disk.
func TestReadTreeFromCTF(t *testing.T) {
	data := tarOf(t, true, [2]string{"kustomization.yaml", "resources: []\n"})
	dir := t.TempDir()
	comp := &ocmbuild.Component{Name: "example.com/tree", Version: "1.0.0", Provider: "example.com",
		Resources: []ocmbuild.Resource{{Name: "manifests", Type: "directoryTree", Data: data, MediaType: "application/x-tgz"}}}
	if err := ocmbuild.WriteCTF(dir, comp); err != nil {
		t.Fatal(err)
	}
	read := func() (*archive.Tree, error) {
		repo, err := ctf.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer repo.Close()
		cv, err := repo.LookupComponentVersion(context.Background(), comp.Name, comp.Version)
		if err != nil {
			t.Fatal(err)
		}
		return (&access.Resolver{}).ReadTree(context.Background(), cv, &cv.Descriptor().Resources[0])
	}
	tree, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tree.Files(), ","); got != "kustomization.yaml" {
		t.Fatalf("files = %s", got)
	}

	// Same size, one byte changed: still a valid tgz up to its trailer.
	p := filepath.Join(dir, "blobs", strings.Replace(blob.Digest(data), ":", ".", 1))
	tampered := bytes.Clone(data)
	tampered[len(tampered)-1] ^= 0xff // last byte of the gzip size field
	if err := os.WriteFile(p, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	tree, err = read()
	if tree != nil || !errors.Is(err, errdef.ErrDigestMismatch) || !strings.Contains(err.Error(), "resource manifests:") {
		t.Fatalf("tampered blob: tree %v, err %v; want a digest mismatch naming the resource", tree != nil, err)
	}
}

// TestReadTreeArtifactSet: a tree shipped as an OCI artifact set, with an
// ociArtifactDigest/v1 resource digest, is read whole, since only the whole
// set shows the main manifest that digest names.
func TestReadTreeArtifactSet(t *testing.T) {
	chart, err := ocmbuild.PackageChart(map[string][]byte{"Chart.yaml": []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")})
	if err != nil {
		t.Fatal(err)
	}
	set, err := ocmbuild.ChartArtifactSet(chart, "1.0.0", false)
	if err != nil {
		t.Fatal(err)
	}
	main, err := ocmbuild.ArtifactSetMainDigest(set)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, value string
		wantErr     error
	}{
		{"matching", strings.TrimPrefix(main, "sha256:"), nil},
		{"mismatching", strings.TrimPrefix(blob.Digest(nil), "sha256:"), errdef.ErrDigestMismatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := localResource(set, ocmbuild.MediaTypeArtifactSet)
			res.Digest = &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: tt.value}
			tree, err := (&access.Resolver{}).ReadTree(context.Background(), &fakeCV{blob: newBlob(set)}, res)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tree != nil) {
				t.Fatalf("tree %v, err %v; want %v", tree != nil, err, tt.wantErr)
			}
		})
	}
}
