package oci_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// TestFixtureRegistry reads every component version that the OCM CLI
// transferred into a real registry (testdata/ocm-cli/registry).
func TestFixtureRegistry(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.ServeFixture(t)
	descDir := fixtures.Path(t, "registry", "descriptors")
	files, err := filepath.Glob(filepath.Join(descDir, "*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("fixture descriptors: %v %v", files, err)
	}
	repo, err := resolve.Open("http://"+registrytest.FixtureAddr+"/"+registrytest.FixtureBase, baseOpts(t.TempDir())...)
	if err != nil {
		t.Fatal(err)
	}
	r := repo.(*oci.Repository)
	charts := 0
	for _, f := range files {
		name, version, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		comp := "example.com/fixtures/" + name
		t.Run(name+":"+version, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ocm.DecodeDescriptor(raw)
			if err != nil {
				t.Fatal(err)
			}
			cv, err := r.LookupComponentVersion(ctx, comp, version)
			if err != nil {
				t.Fatal(err)
			}
			got := cv.Descriptor()
			if got.Name != want.Name || got.Version != want.Version || len(got.Resources) != len(want.Resources) ||
				len(got.References) != len(want.References) || len(got.Signatures) != len(want.Signatures) {
				t.Fatalf("descriptor %s:%s differs from the CLI's view", got.Name, got.Version)
			}
			for _, res := range got.Resources {
				acc := res.Access
				switch {
				case acc.Kind() == ocm.AccessLocalBlob:
					b, err := cv.OpenLocalBlob(ctx, acc)
					data := readBlob(t, b, err)
					if res.Digest != nil && res.Digest.NormalisationAlgorithm == "genericBlobDigest/v1" &&
						blob.Digest(data) != "sha256:"+res.Digest.Value {
						t.Errorf("resource %s: content %s, descriptor says %s", res.Name, blob.Digest(data), res.Digest.Value)
					}
				case acc.Kind() == ocm.AccessOCIArtifact && strings.Contains(acc.String("imageReference"), registrytest.FixtureAddr):
					b, md, err := r.OpenAccess(ctx, cv, acc)
					data := readBlob(t, b, err)
					if md != "sha256:"+res.Digest.Value {
						t.Errorf("resource %s: manifest %s, descriptor says %s", res.Name, md, res.Digest.Value)
					}
					if b.MediaType() != oci.MediaTypeHelmChart || len(data) < 100 || data[0] != 0x1f {
						t.Errorf("resource %s: not a chart archive (%s, %d bytes)", res.Name, b.MediaType(), len(data))
					}
					charts++
				}
			}
		})
	}
	if charts < 4 {
		t.Errorf("%d transferred charts read, want 4", charts)
	}
	vs, err := r.ListVersions(ctx, "example.com/fixtures/podinfo-app")
	if err != nil || strings.Join(vs, ",") != "1.0.0,1.1.0+build.7" {
		t.Fatalf("versions %v %v", vs, err)
	}
	v, err := resolve.ResolveVersion(ctx, r, "example.com/fixtures/podinfo-app", ">=1.0.0")
	if err != nil || v != "1.1.0+build.7" {
		t.Fatalf("resolve: %s %v", v, err)
	}
	for _, q := range reg.Requests() {
		if strings.Contains(q.Path, "podinfo:") || q.Status >= 400 {
			t.Errorf("unexpected request %s", q)
		}
	}
	t.Logf("%d requests for %d component versions and %d charts", reg.Count(nil), len(files), charts)
}

func TestOpenCTF(t *testing.T) {
	for _, spec := range []string{fixtures.Path(t, "ctf"), "ctf::" + fixtures.Path(t, "ctf.tgz"), `{"type":"CommonTransportFormat/v1","filePath":"` + fixtures.Path(t, "ctf") + `"}`} {
		r, err := resolve.Open(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if _, err := r.LookupComponentVersion(context.Background(), "example.com/fixtures/podinfo-app", "1.0.0"); err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		r.Close()
	}
}
