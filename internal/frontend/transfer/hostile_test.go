package transfer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// artifactSet builds an artifact set tgz from files, with index.json naming main.
func artifactSet(t *testing.T, main string, files map[string][]byte) []byte {
	t.Helper()
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex,
		Manifests:   []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(main), Size: int64(len(files["blobs/"+strings.Replace(main, ":", ".", 1)]))}},
		Annotations: map[string]string{"software.ocm/main": main}}
	idx.SchemaVersion = 2
	if files["index.json"] == nil {
		files["index.json"], _ = json.Marshal(idx)
	}
	b, err := ocmbuild.TarFiles(files, true)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func blobName(b []byte) string {
	return "blobs/" + strings.Replace(digest.FromBytes(b).String(), ":", ".", 1)
}

// Hostile artifact sets (charts stored in a component) that --copy-resources
// unpacks to upload: each fails with one error naming the component, version
// and resource, and nothing is tagged in the target.
func TestHostileArtifactSets(t *testing.T) {
	cfg := []byte(`{"name":"x","version":"1.0.0"}`)
	layer := []byte("chart content")
	manifest := func(layerDigest digest.Digest) []byte {
		m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
			Config: ocispec.Descriptor{MediaType: "application/vnd.cncf.helm.config.v1+json", Digest: digest.FromBytes(cfg), Size: int64(len(cfg))},
			Layers: []ocispec.Descriptor{{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Digest: layerDigest, Size: int64(len(layer))}}}
		m.SchemaVersion = 2
		b, _ := json.Marshal(m)
		return b
	}
	good := manifest(digest.FromBytes(layer))
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	io.CopyN(zw, zeroReader{}, 300<<20)
	zw.Close()
	for _, tc := range []struct {
		name   string
		set    []byte
		digest string // the resource's ociArtifactDigest/v1 ("" none)
		want   error
		says   string
	}{
		{"not an archive", []byte("just text, no tar"), "", errdef.ErrInvalidInput, "artifact set"},
		{"no index.json", func() []byte {
			b, _ := ocmbuild.TarFiles(map[string][]byte{"oci-layout": []byte("{}")}, true)
			return b
		}(), "", errdef.ErrInvalidDescriptor, "no index.json"},
		{"main manifest missing", artifactSet(t, digest.FromBytes(good).String(), map[string][]byte{blobName(cfg): cfg}), "", errdef.ErrInvalidDescriptor, "not in the artifact set"},
		{"layer does not match its digest", artifactSet(t, digest.FromBytes(good).String(), map[string][]byte{blobName(good): good, blobName(cfg): cfg,
			blobName(layer): []byte("chart CONTENT")}), "", errdef.ErrDigestMismatch, "content hashes to"},
		{"manifest does not match the resource digest", artifactSet(t, digest.FromBytes(good).String(), map[string][]byte{blobName(good): good, blobName(cfg): cfg, blobName(layer): layer}),
			digest.FromString("other").Encoded(), errdef.ErrDigestMismatch, "the resource's digest says"},
		{"traversal names are never read", artifactSet(t, digest.FromBytes(good).String(), map[string][]byte{blobName(good): good, blobName(cfg): cfg,
			"../../" + blobName(layer): layer}), "", errdef.ErrInvalidDescriptor, "not in the artifact set"},
		{"gzip bomb", bomb.Bytes(), "", errdef.ErrLimitExceeded, "expands to more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := ocmbuild.Resource{Name: "chart", Type: "helmChart", Data: tc.set, MediaType: ocmbuild.MediaTypeArtifactSet,
				ReferenceName: "example.com/hostile/app/x:1.0.0", NoDigest: tc.digest == ""}
			if tc.digest != "" {
				res.Digest = &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: tc.digest}
			}
			dir := filepath.Join(t.TempDir(), "ctf")
			if err := ocmbuild.WriteCTF(dir, &ocmbuild.Component{Name: "example.com/hostile/app", Version: "1.0.0", Resources: []ocmbuild.Resource{res}}); err != nil {
				t.Fatal(err)
			}
			reg := registrytest.Start(t)
			tr := &transfer.Transfer{From: dir, To: "http://" + reg.Host + "/ocm", Component: "example.com/hostile/app", Version: "1.0.0",
				CopyResources: true, RegistryOptions: clientOptions(), TempDir: t.TempDir()}
			_, err := tr.Run(context.Background())
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "component example.com/hostile/app:1.0.0: resource chart: ") || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want %v (%q)", err, tc.want, tc.says)
			}
			if len(readRegistry(t, reg).tags) != 0 {
				t.Error("something was tagged in the target")
			}
		})
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
