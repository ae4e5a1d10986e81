package ctf_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// The podinfo chart archive the OCM CLI v0.13.0 packed from the chart
// directory (byte-identical to podinfo-6.14.1.tgz), the layer of the chart
// manifest in helm-dir:1.0.0's index, and that manifest.
const (
	v2ChartLayer    = "sha256:53b3cbd202fd3a33d085d7f9249b5d00767b12bd1e14ba21bd09583ae5f48eb7"
	v2ChartManifest = "sha256:a420182a2f8ec4dd0528cc012c3f66aa04130392d3379b118ee522f1ec4f53b8"
)

// tgzOf packs dir as a tgz CTF (contents at the archive root, as `tar czf`).
func tgzOf(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ctf.tgz")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestV2EveryVersion reads every tagged version the OCM CLI v0.13.0 wrote, in
// directory and tgz form: each local blob hashes to its genericBlobDigest/v1
// (for a chart stored as a manifest in the index: the manifest bytes, its
// layers verified after them), and the chart opens as its content layer.
func TestV2EveryVersion(t *testing.T) {
	ctx := context.Background()
	dir := fixtures.V2Path(t, "ctf")
	for _, form := range []string{dir, tgzOf(t, dir)} {
		r, err := ctf.Open(form)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		charts := 0
		for _, a := range r.(*ctf.Repository).Artifacts() {
			if a.Tag == "" {
				continue
			}
			comp := strings.TrimPrefix(a.Repository, "component-descriptors/")
			cv, err := r.LookupComponentVersion(ctx, comp, ocm.TagToVersion(a.Tag))
			if err != nil {
				t.Fatalf("%s:%s: %v", comp, a.Tag, err)
			}
			for _, res := range cv.Descriptor().Resources {
				if res.Access.Kind() != ocm.AccessLocalBlob {
					continue
				}
				b, err := cv.OpenLocalBlob(ctx, res.Access)
				if err != nil {
					t.Fatalf("%s %s: %v", comp, res.Name, err)
				}
				data, err := io.ReadAll(b)
				b.Close()
				if err != nil {
					t.Fatalf("%s %s: %v", comp, res.Name, err)
				}
				if res.Digest == nil || res.Digest.NormalisationAlgorithm != "genericBlobDigest/v1" || blob.Digest(data) != "sha256:"+res.Digest.Value {
					t.Errorf("%s %s: blob %s, descriptor says %+v", comp, res.Name, blob.Digest(data), res.Digest)
				}
				if res.Access.String("mediaType") != "application/vnd.oci.image.manifest.v1+json" {
					continue
				}
				lb, md, err := cv.(ocm.LocalArtifactOpener).OpenLocalArtifact(ctx, res.Access)
				if err != nil {
					t.Fatalf("%s %s: %v", comp, res.Name, err)
				}
				chart, err := io.ReadAll(lb)
				lb.Close()
				if err != nil || md != res.Access.String("localReference") || lb.MediaType() != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" ||
					lb.Digest() != blob.Digest(chart) || len(chart) < 2 || chart[0] != 0x1f {
					t.Fatalf("%s %s: chart %s (%s), manifest %s: %v", comp, res.Name, lb.Digest(), lb.MediaType(), md, err)
				}
				if comp == "ocm.example/fixtures/helm-dir" && (md != v2ChartManifest || lb.Digest() != v2ChartLayer) {
					t.Errorf("helm-dir chart: manifest %s layer %s", md, lb.Digest())
				}
				charts++
			}
		}
		if charts != 4 {
			t.Errorf("%s: %d charts in indexes, want 4 (helm-dir twice, helm-tgz, helm-tgz-repo)", form, charts)
		}
	}
}

// copyCTF copies the v2 CTF into a writable directory.
func copyCTF(t *testing.T) string {
	t.Helper()
	src := fixtures.V2Path(t, "ctf")
	dst := filepath.Join(t.TempDir(), "ctf")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// A byte flipped in the chart layer is a digest mismatch naming the layer,
// for the blob (manifest bytes, then layers) and for the chart alike.
func TestV2TamperedChartLayer(t *testing.T) {
	ctx := context.Background()
	dir := copyCTF(t)
	p := filepath.Join(dir, "blobs", "sha256."+strings.TrimPrefix(v2ChartLayer, "sha256:"))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ctf.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cv, err := r.LookupComponentVersion(ctx, "ocm.example/fixtures/helm-dir", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cv.Descriptor().Resource(ocm.Identity{"name": "chart"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, rc io.ReadCloser, err error) {
		t.Helper()
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		if !errors.Is(err, errdef.ErrDigestMismatch) || !strings.Contains(err.Error(), "layer "+v2ChartLayer) || strings.Contains(err.Error(), dir) {
			t.Fatalf("%s: %v, want a digest mismatch naming layer %s (and no path)", what, err, v2ChartLayer)
		}
	}
	bl, err := cv.OpenLocalBlob(ctx, res.Access)
	check("blob", bl, err)
	lb, _, err := cv.(ocm.LocalArtifactOpener).OpenLocalArtifact(ctx, res.Access)
	check("chart", lb, err)
}
