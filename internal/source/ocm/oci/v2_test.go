package oci_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// v2Addr is where the OCM CLI v0.13.0 fixture registry must listen.
const v2Addr = "127.0.0.1:5093"

// TestFixtureRegistryV2 reads what the OCM CLI v0.13.0 transferred into a
// real registry: a chart kept as a manifest in the version's index
// (fx-localblob, also the chart pushed with helm push and uploaded as a local
// blob), and an ociArtifact/v1 copy by tag with http:// (fx-oci), both with
// genericBlobDigest/v1 = the manifest digest; with and without the cache.
func TestFixtureRegistryV2(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "storage")
	if err := registrytest.CopyDir(fixtures.V2Path(t, "registry-storage"), dir); err != nil {
		t.Fatal(err)
	}
	_, err := registrytest.StartErr(t, registrytest.WithStorageDir(dir), registrytest.WithAddr(v2Addr))
	if errors.Is(err, registrytest.ErrAddrInUse) {
		t.Skipf("SKIPPED: the OCM CLI v0.13.0 fixture registry must listen on %s (its descriptors name that address) and the port is busy: %v", v2Addr, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, cacheDir := range []string{"", t.TempDir()} {
		for _, c := range []struct{ prefix, comp string }{
			{"fx-localblob", "helm-dir"},
			{"fx-localblob", "helm-oci-ref"},
			{"fx-oci", "helm-oci-ref"},
		} {
			r, err := oci.New("http://"+v2Addr+"/"+c.prefix, baseOpts(cacheDir)...)
			if err != nil {
				t.Fatal(err)
			}
			cv, err := r.LookupComponentVersion(ctx, "ocm.example/fixtures/"+c.comp, "1.0.0")
			if err != nil {
				t.Fatalf("%s %s: %v", c.prefix, c.comp, err)
			}
			res, err := cv.Descriptor().Resource(ocm.Identity{"name": "chart"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Access.Kind() == ocm.AccessLocalBlob {
				b, err := cv.OpenLocalBlob(ctx, res.Access)
				if got := blob.Digest(readBlob(t, b, err)); got != "sha256:"+res.Digest.Value {
					t.Errorf("%s %s: blob %s, descriptor %s", c.prefix, c.comp, got, res.Digest.Value)
				}
			}
			rd := &access.Resolver{Artifacts: sourceOf(r)}
			content, err := rd.Read(ctx, cv, res)
			if err != nil {
				t.Fatalf("%s %s: %v", c.prefix, c.comp, err)
			}
			if content.ManifestDigest != "sha256:"+res.Digest.Value || content.MediaType != oci.MediaTypeHelmChart || content.Data[0] != 0x1f {
				t.Errorf("%s %s: %s manifest %s", c.prefix, c.comp, content.MediaType, content.ManifestDigest)
			}
			// Every local resource (the image as a local artifact in
			// fx-localblob, the config file) hashes to its digest too.
			for _, other := range cv.Descriptor().Resources {
				if other.Access.Kind() != ocm.AccessLocalBlob || other.Digest == nil {
					continue
				}
				b, err := cv.OpenLocalBlob(ctx, other.Access)
				if got := blob.Digest(readBlob(t, b, err)); got != "sha256:"+other.Digest.Value {
					t.Errorf("%s %s %s: blob %s, descriptor %s", c.prefix, c.comp, other.Name, got, other.Digest.Value)
				}
			}
		}
	}
}

// repoSource reads remote accesses through the repository, as the pipeline does.
type repoSource struct{ r *oci.Repository }

func sourceOf(r *oci.Repository) access.ArtifactSource { return repoSource{r} }

func (s repoSource) OpenArtifact(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (ocm.Blob, string, error) {
	return s.r.OpenAccess(ctx, cv, acc)
}

func (s repoSource) Artifact(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (*access.Content, error) {
	b, md, err := s.OpenArtifact(ctx, cv, acc)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	data, err := access.ReadBlob(b, access.DefaultMaxBlobSize)
	if err != nil {
		return nil, err
	}
	return &access.Content{Data: data, MediaType: b.MediaType(), Digest: b.Digest(), ManifestDigest: md}, nil
}
