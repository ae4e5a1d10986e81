package verify_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/verify"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

const (
	signedApp    = "example.com/fixtures/signed-app"
	signedBundle = "example.com/fixtures/signed-bundle"
	// The manifests resource of signed-app (genericBlobDigest/v1).
	manifestsBlob = "sha256.cfad8f0c7d2ab2aaad44a6e4d60bbee6bd2cb68392e3bcc7c15fece5a7262e05"
)

func fixtureKey(t *testing.T) crypto.PublicKey {
	t.Helper()
	b, err := os.ReadFile(fixtures.Path(t, "keys", "key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := signing.ParsePublicKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func run(t *testing.T, repoPath, component string, keys map[string]crypto.PublicKey) (*verify.Report, error) {
	t.Helper()
	repo, err := ctf.Open(repoPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	cv, err := repo.LookupComponentVersion(context.Background(), component, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	v := &verify.Verifier{Repository: repo}
	if keys != nil {
		v.Signatures = &signing.Verifier{Keys: keys}
	}
	return v.Run(context.Background(), cv)
}

func statusOf(rep *verify.Report, component, resource string) (verify.Resource, bool) {
	for _, r := range rep.Resources {
		if r.Component+":"+r.Version == component && r.Resource == resource {
			return r, true
		}
	}
	return verify.Resource{}, false
}

// copyDir copies a CTF directory (flat files and blobs/) into t.TempDir.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// The OCM CLI's signed bundle verifies: both signatures' digests, the
// reference, and every resource of the referenced app re-hashed.
func TestUntouchedFixtureVerifies(t *testing.T) {
	rep, err := run(t, fixtures.Path(t, "ctf-signed"), signedBundle, map[string]crypto.PublicKey{"mysig": fixtureKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Signatures) != 1 || len(rep.References) != 1 || rep.References[0].Digest == "" {
		t.Fatalf("signatures %+v references %+v", rep.Signatures, rep.References)
	}
	app := signedApp + ":1.0.0"
	for res, detail := range map[string]string{"chart": "artifact set main manifest re-hashed", "manifests": "blob SHA-256 re-hashed"} {
		r, ok := statusOf(rep, app, res)
		if !ok || r.Status != verify.Checked || r.Detail != detail {
			t.Errorf("%s: %+v", res, r)
		}
	}
	if len(rep.Resources) != 2 {
		t.Errorf("resources: %+v", rep.Resources)
	}
}

// One flipped byte in a local blob: the signature still verifies (it covers
// the descriptor), verify fails naming the resource, through the bundle too.
func TestFlippedBlobByteFails(t *testing.T) {
	dir := copyDir(t, fixtures.Path(t, "ctf-signed"))
	p := filepath.Join(dir, "blobs", manifestsBlob)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, component := range []string{signedApp, signedBundle} {
		rep, err := run(t, dir, component, map[string]crypto.PublicKey{"mysig": fixtureKey(t)})
		if !errors.Is(err, errdef.ErrDigestMismatch) || !strings.Contains(err.Error(), "resource manifests") {
			t.Fatalf("%s: want a digest mismatch naming manifests, got %v", component, err)
		}
		if len(rep.Signatures) != 1 {
			t.Errorf("%s: the signature should still verify: %+v", component, rep.Signatures)
		}
		if r, _ := statusOf(rep, signedApp+":1.0.0", "manifests"); r.Status != verify.Mismatch {
			t.Errorf("%s: manifests %+v", component, r)
		}
		if r, _ := statusOf(rep, signedApp+":1.0.0", "chart"); r.Status != verify.Checked {
			t.Errorf("%s: chart %+v", component, r)
		}
	}
}

// signedCTF writes c, signed with a fresh key, and returns its directory,
// the key and the signed descriptor. tamper edits the signed descriptor
// (only its access: not part of the signature) before it is written.
func signedCTF(t *testing.T, c *ocmbuild.Component, blobs []ocmbuild.Blob, tamper func([]byte) []byte) (string, crypto.PublicKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sign("release", key); err != nil {
		t.Fatal(err)
	}
	c.Blobs = blobs
	if tamper != nil {
		before := c.RawDescriptor
		c.RawDescriptor = tamper(c.RawDescriptor)
		if bytes.Equal(before, c.RawDescriptor) {
			t.Fatal("tamper changed nothing")
		}
	}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, c); err != nil {
		t.Fatal(err)
	}
	return dir, &key.PublicKey
}

// An image whose imageReference was redirected to another digest while its
// resource digest was kept: the signature verifies (access is not signed),
// verify fails naming the image.
func TestRedirectedImageReferenceFails(t *testing.T) {
	declared := strings.Repeat("a", 64)
	other := strings.Repeat("b", 64)
	manifests, err := ocmbuild.TarFiles(map[string][]byte{"cm.yaml": []byte("kind: ConfigMap\n")}, false)
	if err != nil {
		t.Fatal(err)
	}
	build := func() *ocmbuild.Component {
		return &ocmbuild.Component{Name: "example.com/acme/app", Version: "1.0.0", Resources: []ocmbuild.Resource{
			{Name: "manifests", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: manifests},
			{Name: "app", Type: "ociImage", Version: "5.4.2", Access: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/acme/app:5.4@sha256:" + declared},
				Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: declared}},
			{Name: "sidecar", Type: "ociImage", Version: "1.0.0", Access: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/acme/sidecar:1.0.0"},
				Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: other}},
		}}
	}
	blobs := []ocmbuild.Blob{{MediaType: ocmbuild.MediaTypeTar, Data: manifests}}

	dir, key := signedCTF(t, build(), blobs, nil)
	rep, err := run(t, dir, "example.com/acme/app", map[string]crypto.PublicKey{"release": key})
	if err != nil {
		t.Fatalf("untouched: %v", err)
	}
	if r, _ := statusOf(rep, "example.com/acme/app:1.0.0", "app"); r.Status != verify.Checked {
		t.Errorf("pinned image: %+v", r)
	}
	if r, _ := statusOf(rep, "example.com/acme/app:1.0.0", "sidecar"); r.Status != verify.NotCheckable || !strings.Contains(r.Detail, "pins no digest") {
		t.Errorf("tag-only image: %+v", r)
	}

	dir, key = signedCTF(t, build(), blobs, func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte("app:5.4@sha256:"+declared), []byte("app:5.4@sha256:"+other))
	})
	rep, err = run(t, dir, "example.com/acme/app", map[string]crypto.PublicKey{"release": key})
	if !errors.Is(err, errdef.ErrDigestMismatch) || !strings.Contains(err.Error(), "resource app:") || !strings.Contains(err.Error(), other) {
		t.Fatalf("redirected: want a mismatch naming app, got %v", err)
	}
	if len(rep.Signatures) != 1 {
		t.Errorf("the signature should verify, the access is not signed: %+v", rep.Signatures)
	}
}

// A local blob consistent with the name it is stored under but not with
// the signed resource digest (the access was pointed at another blob): only
// re-hashing by the resource digest finds it. Same for an artifact set.
func TestBlobSwappedUnderSignedDigestFails(t *testing.T) {
	good, err := ocmbuild.TarFiles(map[string][]byte{"cm.yaml": []byte("kind: ConfigMap\n")}, false)
	if err != nil {
		t.Fatal(err)
	}
	evil, err := ocmbuild.TarFiles(map[string][]byte{"cm.yaml": []byte("kind: Secret\n")}, false)
	if err != nil {
		t.Fatal(err)
	}
	chart, err := ocmbuild.PackageChart(map[string][]byte{"Chart.yaml": []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")})
	if err != nil {
		t.Fatal(err)
	}
	set, err := ocmbuild.ChartArtifactSet(chart, "1.0.0", false)
	if err != nil {
		t.Fatal(err)
	}
	chart2, err := ocmbuild.PackageChart(map[string][]byte{"Chart.yaml": []byte("apiVersion: v2\nname: c\nversion: 2.0.0\n")})
	if err != nil {
		t.Fatal(err)
	}
	set2, err := ocmbuild.ChartArtifactSet(chart2, "2.0.0", false)
	if err != nil {
		t.Fatal(err)
	}
	c := &ocmbuild.Component{Name: "example.com/acme/app", Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "config", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: good},
		{Name: "chart", Type: "helmChart", MediaType: ocmbuild.MediaTypeArtifactSet, Data: set},
	}}
	blobs := []ocmbuild.Blob{{MediaType: ocmbuild.MediaTypeTar, Data: good}, {MediaType: ocmbuild.MediaTypeTar, Data: evil},
		{MediaType: ocmbuild.MediaTypeArtifactSet, Data: set}, {MediaType: ocmbuild.MediaTypeArtifactSet, Data: set2}}
	dir, key := signedCTF(t, c, blobs, func(b []byte) []byte {
		b = bytes.ReplaceAll(b, []byte(blob.Digest(good)), []byte(blob.Digest(evil)))
		return bytes.ReplaceAll(b, []byte(blob.Digest(set)), []byte(blob.Digest(set2)))
	})
	rep, err := run(t, dir, "example.com/acme/app", map[string]crypto.PublicKey{"release": key})
	if !errors.Is(err, errdef.ErrDigestMismatch) || !strings.Contains(err.Error(), "resource config:") || !strings.Contains(err.Error(), "also mismatched: example.com/acme/app:1.0.0 chart") {
		t.Fatalf("want mismatches of config and chart, got %v", err)
	}
	for _, res := range []string{"config", "chart"} {
		if r, _ := statusOf(rep, "example.com/acme/app:1.0.0", res); r.Status != verify.Mismatch || !strings.Contains(r.Detail, "the component declares") {
			t.Errorf("%s: %+v", res, r)
		}
	}
}

// Resources without anything to compare offline are reported, not failed.
func TestNotCheckableReasons(t *testing.T) {
	c := &ocmbuild.Component{Name: "example.com/acme/app", Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "nodigest", Type: "ociImage", Access: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/acme/a:1"}, NoDigest: true},
		{Name: "excluded", Type: "ociImage", Access: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/acme/b@sha256:" + strings.Repeat("c", 64)},
			Digest: &ocm.Digest{HashAlgorithm: signing.NoDigest, NormalisationAlgorithm: signing.ExcludeFromSignature, Value: signing.NoDigest}},
		{Name: "helm", Type: "helmChart", Access: map[string]any{"type": "helm", "helmRepository": "https://charts.example.com", "helmChart": "c:1.0.0"},
			Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "genericBlobDigest/v1", Value: strings.Repeat("d", 64)}},
	}}
	dir, key := signedCTF(t, c, nil, nil)
	rep, err := run(t, dir, "example.com/acme/app", map[string]crypto.PublicKey{"release": key})
	if err != nil {
		t.Fatal(err)
	}
	for res, want := range map[string]string{"nodigest": "no digest declared", "excluded": "excluded from signing", "helm": "pins no digest"} {
		if r, _ := statusOf(rep, "example.com/acme/app:1.0.0", res); r.Status != verify.NotCheckable || !strings.Contains(r.Detail, want) {
			t.Errorf("%s: %+v, want %q", res, r, want)
		}
	}
}

// Editing a label with signing: true breaks the signature; editing one
// without it does not (it is not part of the normalised descriptor).
func TestLabelEdits(t *testing.T) {
	manifests, err := ocmbuild.TarFiles(map[string][]byte{"cm.yaml": []byte("kind: ConfigMap\n")}, false)
	if err != nil {
		t.Fatal(err)
	}
	build := func() *ocmbuild.Component {
		return &ocmbuild.Component{Name: "example.com/acme/app", Version: "1.0.0",
			Labels:    []ocmbuild.Label{{Name: "channel", Value: "stable", Signing: true}, {Name: "note", Value: "unsigned-note"}},
			Resources: []ocmbuild.Resource{{Name: "manifests", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: manifests}}}
	}
	blobs := []ocmbuild.Blob{{MediaType: ocmbuild.MediaTypeTar, Data: manifests}}
	dir, key := signedCTF(t, build(), blobs, func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("unsigned-note"), []byte("edited-note")) })
	if _, err := run(t, dir, "example.com/acme/app", map[string]crypto.PublicKey{"release": key}); err != nil {
		t.Fatalf("a non-signing label edit must still verify: %v", err)
	}
	dir, key = signedCTF(t, build(), blobs, func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("stable"), []byte("edge")) })
	if _, err := run(t, dir, "example.com/acme/app", map[string]crypto.PublicKey{"release": key}); !errors.Is(err, errdef.ErrSignature) {
		t.Fatalf("a signing label edit must fail the signature, got %v", err)
	}
}
