package ctf_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

const chartDigest = "sha256:4e44272a9227f95b21baff6ccbf125a2f1ed7fb1763df0334f736438a4a9b527"

func TestOpenForms(t *testing.T) {
	ctx := context.Background()
	for _, form := range []string{"ctf", "ctf.tgz", "ctf-signed", "ctf-signed.tgz"} {
		t.Run(form, func(t *testing.T) {
			r, err := ctf.Open(fixtures.Path(t, form))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			comp, ver := "example.com/fixtures/podinfo-app", "1.0.0"
			if strings.HasPrefix(form, "ctf-signed") {
				comp = "example.com/fixtures/signed-app"
			}
			cv, err := r.LookupComponentVersion(ctx, comp, ver)
			if err != nil {
				t.Fatal(err)
			}
			d := cv.Descriptor()
			if d.Name != comp || d.Version != ver {
				t.Fatalf("got %s:%s", d.Name, d.Version)
			}
			if !strings.HasPrefix(cv.DescriptorDigest(), "sha256:") {
				t.Fatalf("descriptor digest %q", cv.DescriptorDigest())
			}
			res, err := d.Resource(ocm.Identity{"name": "chart"})
			if err != nil {
				t.Fatal(err)
			}
			b, err := cv.OpenLocalBlob(ctx, res.Access)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(b)
			b.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got := blob.Digest(data); got != chartDigest {
				t.Fatalf("chart blob digest %s, want %s", got, chartDigest)
			}
			if b.MediaType() != "application/vnd.oci.image.manifest.v1+tar+gzip" {
				t.Fatalf("media type %q", b.MediaType())
			}
		})
	}
}

func TestDescriptorsOfEveryVersion(t *testing.T) {
	ctx := context.Background()
	r, err := ctf.Open(fixtures.Path(t, "ctf"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cases := []struct{ comp, ver, schema string }{
		{"example.com/fixtures/podinfo-app", "1.0.0", ocm.SchemaV2},
		{"example.com/fixtures/podinfo-app", "1.1.0+build.7", ocm.SchemaV2},
		{"example.com/fixtures/podinfo-app-v3", "1.0.0", ocm.SchemaV3Alpha1},
		{"example.com/fixtures/podinfo-app-plainchart", "1.0.0", ocm.SchemaV2},
		{"example.com/fixtures/kustomize-app", "1.0.0", ocm.SchemaV2},
		{"example.com/fixtures/platform-bundle", "1.0.0", ocm.SchemaV2},
	}
	for _, c := range cases {
		cv, err := r.LookupComponentVersion(ctx, c.comp, c.ver)
		if err != nil {
			t.Fatalf("%s:%s: %v", c.comp, c.ver, err)
		}
		if got := cv.Descriptor().SchemaVersion; got != c.schema {
			t.Errorf("%s:%s schema %s, want %s", c.comp, c.ver, got, c.schema)
		}
	}
	vs, err := r.ListVersions(ctx, "example.com/fixtures/podinfo-app")
	if err != nil || strings.Join(vs, ",") != "1.0.0,1.1.0+build.7" {
		t.Fatalf("versions %v, %v", vs, err)
	}
	cv, _ := r.LookupComponentVersion(ctx, "example.com/fixtures/platform-bundle", "1.0.0")
	if refs := cv.Descriptor().References; len(refs) != 2 || refs[0].ComponentName == "" {
		t.Fatalf("references %+v", refs)
	}
	cv, _ = r.LookupComponentVersion(ctx, "example.com/fixtures/podinfo-app", "1.0.0")
	if p := cv.Descriptor().Provider; p.Name != "example.com" || len(p.Labels) != 1 {
		t.Fatalf("provider %+v", p)
	}
}

func TestComponentArchive(t *testing.T) {
	ctx := context.Background()
	r, err := ctf.Open(fixtures.Path(t, "component-archive"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cv, err := r.LookupComponentVersion(ctx, "example.com/fixtures/legacy-ca", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cv.Descriptor().Resource(ocm.Identity{"name": "chart"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cv.OpenLocalBlob(ctx, res.Access)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(b)
	if err != nil || blob.Digest(data) != chartDigest {
		t.Fatalf("blob: %v %s", err, blob.Digest(data))
	}
}

func TestLookupErrors(t *testing.T) {
	ctx := context.Background()
	r, err := ctf.Open(fixtures.Path(t, "ctf.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.LookupComponentVersion(ctx, "example.com/fixtures/nope", "1.0.0")
	if !errors.Is(err, errdef.ErrNotFound) || !strings.Contains(err.Error(), "example.com/fixtures/nope") {
		t.Fatalf("unknown component: %v", err)
	}
	_, err = r.LookupComponentVersion(ctx, "example.com/fixtures/podinfo-app", "9.9.9")
	if !errors.Is(err, errdef.ErrNotFound) || !strings.Contains(err.Error(), "9.9.9") || !strings.Contains(err.Error(), "1.1.0+build.7") {
		t.Fatalf("unknown version: %v", err)
	}
	_, err = ctf.Open(t.TempDir())
	if !errors.Is(err, errdef.ErrInvalidInput) {
		t.Fatalf("empty dir: %v", err)
	}
}

// A CTF directory is read beneath itself: a blobs directory linked out of it
// is not followed (the blob reads fail), and a FIFO is refused before it is
// opened (an open for reading would block).
func TestDirectoryIsReadBeneathItself(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	dir := filepath.Join(base, "ctf")
	copyDir(t, fixtures.Path(t, "ctf"), dir)
	if err := os.Rename(filepath.Join(dir, ctf.BlobsDir), filepath.Join(base, "outside-blobs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside-blobs", filepath.Join(dir, ctf.BlobsDir)); err != nil {
		t.Fatal(err)
	}
	r, err := ctf.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.LookupComponentVersion(ctx, "example.com/fixtures/podinfo-app", "1.0.0"); !errors.Is(err, errdef.ErrUnsafeArchive) {
		t.Fatalf("blobs linked outside: %v, want %v", err, errdef.ErrUnsafeArchive)
	}

	fifo := filepath.Join(base, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ctf.Open(fifo); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "not a file or directory") {
			t.Fatalf("FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("FIFO: blocked")
	}
	if _, err := ctf.Open(filepath.Join(base, "nope")); !errors.Is(err, errdef.ErrNotFound) || !strings.Contains(err.Error(), "no such file or directory") {
		t.Fatalf("missing: %v", err)
	}
}

// OpenFile and OpenDir read what a caller opened, under the name it gives.
func TestOpenHandles(t *testing.T) {
	ctx := context.Background()
	f, err := os.Open(fixtures.Path(t, "ctf.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ctf.OpenFile(f, `"bundle.tgz"`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.LookupComponentVersion(ctx, "example.com/fixtures/podinfo-app", "9.9.9")
	r.Close()
	if err == nil || !strings.Contains(err.Error(), `in "bundle.tgz"`) {
		t.Fatalf("name in messages: %v", err)
	}
	d, err := os.OpenRoot(fixtures.Path(t, "component-archive"))
	if err != nil {
		t.Fatal(err)
	}
	r, err = ctf.OpenDir(d, "ca")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.LookupComponentVersion(ctx, "example.com/fixtures/legacy-ca", "1.0.0"); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}
