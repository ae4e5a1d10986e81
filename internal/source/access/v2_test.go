package access_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// The OCM CLI v0.13.0 stores a Helm chart as a manifest in the version's
// index: Read yields the chart layer, named by the manifest digest, and the
// resource digest (genericBlobDigest/v1 over the manifest bytes) is checked
// against that manifest digest.
func TestReadV2IndexChart(t *testing.T) {
	ctx := context.Background()
	r, err := ctf.Open(fixtures.V2Path(t, "ctf"))
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
	c, err := (&access.Resolver{}).Read(ctx, cv, res)
	if err != nil {
		t.Fatal(err)
	}
	if c.ManifestDigest != "sha256:"+res.Digest.Value || c.MediaType != access.MediaTypeHelmChart ||
		blob.Digest(c.Data) != "sha256:53b3cbd202fd3a33d085d7f9249b5d00767b12bd1e14ba21bd09583ae5f48eb7" {
		t.Fatalf("content %s %s manifest %s", c.MediaType, blob.Digest(c.Data), c.ManifestDigest)
	}
	if tgz, err := access.ChartArchive(c); err != nil || len(tgz) != len(c.Data) {
		t.Fatalf("chart archive: %v", err)
	}

	// A descriptor stating another digest is refused, whichever name it uses.
	for _, alg := range []string{"genericBlobDigest/v1", "ociArtifactDigest/v1"} {
		bad := *res
		bad.Digest = &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: alg, Value: strings.Repeat("0", 64)}
		if _, err := (&access.Resolver{}).Read(ctx, cv, &bad); !errors.Is(err, errdef.ErrDigestMismatch) {
			t.Errorf("%s: %v, want a digest mismatch", alg, err)
		}
	}
}

// Dir/v1 trees (application/x-tar+gzip and application/x-tar) stream and
// verify like v0.48's.
func TestReadTreeV2(t *testing.T) {
	ctx := context.Background()
	r, err := ctf.Open(fixtures.V2Path(t, "ctf"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct{ comp, res, file string }{
		{"kustomize", "tree", "podinfo-kustomize/kustomization.yaml"},
		{"manifests", "manifests", "00-namespace.yaml"},
	} {
		cv, err := r.LookupComponentVersion(ctx, "ocm.example/fixtures/"+c.comp, "1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		res, err := cv.Descriptor().Resource(ocm.Identity{"name": c.res})
		if err != nil {
			t.Fatal(err)
		}
		tree, err := (&access.Resolver{}).ReadTree(ctx, cv, res)
		if err != nil {
			t.Fatalf("%s: %v", c.comp, err)
		}
		if _, err := tree.ReadFile(c.file); err != nil {
			t.Errorf("%s: %v", c.comp, err)
		}
	}
}
