package transfer_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// A component names the repositories its charts are uploaded to
// (referenceName); with --copy-resources none of them may leave the
// target's prefix: the transfer refuses, naming component, version,
// resource and the value, before it writes or asks anything outside.
func TestReferenceNameStaysBelowTheTargetPrefix(t *testing.T) {
	cfg := []byte(`{"name":"podinfo-mini","version":"6.6.6"}`)
	layer := []byte("chart content")
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{MediaType: "application/vnd.cncf.helm.config.v1+json", Digest: digest.FromBytes(cfg), Size: int64(len(cfg))},
		Layers: []ocispec.Descriptor{{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Digest: digest.FromBytes(layer), Size: int64(len(layer))}}}
	m.SchemaVersion = 2
	mraw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	set := artifactSet(t, digest.FromBytes(mraw).String(), map[string][]byte{blobName(mraw): mraw, blobName(cfg): cfg, blobName(layer): layer})
	long := strings.Repeat("a/", 5000) + "podinfo-mini"
	for _, tc := range []struct {
		name, referenceName, quoted string
	}{
		{"parent segments", "../../victim/podinfo-mini:6.6.6", `"../../victim/podinfo-mini"`},
		{"parent segments inside", "charts/../../../victim/podinfo-mini:6.6.6", `"charts/../../../victim/podinfo-mini"`},
		{"absolute", "/victim/podinfo-mini:6.6.6", `"/victim/podinfo-mini"`},
		{"dot segment", "./podinfo-mini:6.6.6", `"./podinfo-mini"`},
		{"empty segment", "charts//podinfo-mini:6.6.6", `"charts//podinfo-mini"`},
		{"backslashes", `..\..\victim\podinfo-mini:6.6.6`, `"..\\..\\victim\\podinfo-mini"`},
		{"percent-encoded", "%2e%2e/%2e%2e/victim/podinfo-mini:6.6.6", `"%2e%2e/%2e%2e/victim/podinfo-mini"`},
		{"upper case", "Victim/PodInfo:6.6.6", `"Victim/PodInfo"`},
		{"tag", "podinfo-mini:..%2f..%2fvictim", `"podinfo-mini:..%2f..%2fvictim"`},
		{"overlong", long + ":6.6.6", `"` + long[:errdef.MaxQuoted] + `…" (10012 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ctf")
			res := ocmbuild.Resource{Name: "chart", Type: "helmChart", Data: set, MediaType: ocmbuild.MediaTypeArtifactSet,
				ReferenceName: tc.referenceName, NoDigest: true}
			if err := ocmbuild.WriteCTF(dir, &ocmbuild.Component{Name: "example.com/hostile/app", Version: "1.0.0", Resources: []ocmbuild.Resource{res}}); err != nil {
				t.Fatal(err)
			}
			reg := registrytest.Start(t)
			tr := &transfer.Transfer{From: dir, To: "http://" + reg.Host + "/tenant-a/ocm", Component: "example.com/hostile/app", Version: "1.0.0",
				CopyResources: true, RegistryOptions: clientOptions(), TempDir: t.TempDir()}
			_, err := tr.Run(context.Background())
			// Nothing was written, and nothing outside tenant-a was even asked for.
			for _, r := range reg.Requests() {
				if r.Method != http.MethodGet && r.Method != http.MethodHead {
					t.Errorf("the transfer wrote: %.200s", r)
				}
				if r.Path != "/v2/" && !strings.HasPrefix(r.Path, "/v2/tenant-a/ocm/") {
					t.Errorf("the transfer left the target's prefix: %.200s", r)
				}
			}
			if repos := readRegistry(t, reg).repositories(); len(repos) != 0 {
				t.Errorf("the target holds repositories %.200q, want none", repos)
			}
			if !errors.Is(err, errdef.ErrInvalidDescriptor) {
				t.Fatalf("err = %.300v, want %v", err, errdef.ErrInvalidDescriptor)
			}
			msg := err.Error()
			for _, want := range []string{"component example.com/hostile/app:1.0.0: resource chart: ", tc.quoted} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if len(msg) > 1024 {
				t.Errorf("error is %d bytes", len(msg))
			}
		})
	}
}
