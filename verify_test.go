package argocdocm_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

const signedApp = "example.com/fixtures/signed-app"

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

func fixtureBlob(t *testing.T, digest string) []byte {
	t.Helper()
	b, err := os.ReadFile(fixtures.Path(t, "ctf-signed", "blobs", strings.Replace(digest, ":", ".", 1)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tamperedSignedApp rebuilds signed-app (signatures kept) with edit applied to
// its descriptor, storing blobs as layers.
func tamperedSignedApp(t *testing.T, edit func(doc map[string]any), blobs ...ocmbuild.Blob) string {
	t.Helper()
	raw, err := os.ReadFile(fixtures.Path(t, "descriptors", "ctf-signed__example.com_fixtures_signed-app_1.0.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	out, _ := yaml.Marshal(doc)
	blobs = append(blobs,
		ocmbuild.Blob{MediaType: "application/vnd.oci.image.manifest.v1+tar+gzip", Data: fixtureBlob(t, "sha256:4e44272a9227f95b21baff6ccbf125a2f1ed7fb1763df0334f736438a4a9b527")},
		ocmbuild.Blob{MediaType: "application/x-tgz", Data: fixtureBlob(t, "sha256:cfad8f0c7d2ab2aaad44a6e4d60bbee6bd2cb68392e3bcc7c15fece5a7262e05")})
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, &ocmbuild.Component{Name: signedApp, Version: "1.0.0", RawDescriptor: out, Blobs: blobs}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func labelsOf(doc map[string]any) []any {
	return doc["component"].(map[string]any)["labels"].([]any)
}

func resourceOf(doc map[string]any, name string) map[string]any {
	for _, r := range doc["component"].(map[string]any)["resources"].([]any) {
		if m := r.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

func TestSignatureVerification(t *testing.T) {
	key := fixtureKey(t)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	tamperedTgz := append([]byte(nil), fixtureBlob(t, "sha256:cfad8f0c7d2ab2aaad44a6e4d60bbee6bd2cb68392e3bcc7c15fece5a7262e05")...)
	tamperedTgz[len(tamperedTgz)/2] ^= 1
	tamperedDigest := ocmDigest(tamperedTgz)

	for _, tc := range []struct {
		name     string
		repo     string
		resource string
		key      crypto.PublicKey
		want     error
	}{
		{"valid", fixtures.Path(t, "ctf-signed.tgz"), "chart", key, nil},
		{"valid kustomization", fixtures.Path(t, "ctf-signed"), "manifests", key, nil},
		{"wrong key", fixtures.Path(t, "ctf-signed"), "chart", &other.PublicKey, errdef.ErrSignature},
		{"edited signing label", tamperedSignedApp(t, func(d map[string]any) {
			labelsOf(d)[1].(map[string]any)["value"] = "canary"
		}), "chart", key, errdef.ErrSignature},
		{"edited non-signing label is accepted", tamperedSignedApp(t, func(d map[string]any) {
			labelsOf(d)[0].(map[string]any)["value"] = "edited"
		}), "chart", key, nil},
		{"blob swapped behind the signature", tamperedSignedApp(t, func(d map[string]any) {
			// access is not signed, the resource digest is: point it at other bytes.
			resourceOf(d, "manifests")["access"].(map[string]any)["localReference"] = tamperedDigest
		}, ocmbuild.Blob{MediaType: "application/x-tgz", Data: tamperedTgz}), "manifests", key, errdef.ErrDigestMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &argocdocm.Renderer{}
			r.SetSignatures(&signing.Verifier{Keys: map[string]crypto.PublicKey{"mysig": tc.key}})
			res, err := r.Render(context.Background(), argocdocm.Request{Repository: tc.repo, Component: signedApp, Version: "1.0.0", Resources: []string{tc.resource}, Provenance: true})
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), signedApp+":1.0.0") {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Signatures) != 1 || res.Signatures[0] != "mysig" {
				t.Fatalf("signatures %v", res.Signatures)
			}
			ann := res.Objects[0]["metadata"].(map[string]any)["annotations"].(map[string]any)
			if ann[argocdocm.AnnotationComponent] != signedApp+":1.0.0" || ann[argocdocm.AnnotationSignature] != "mysig" ||
				ann[argocdocm.AnnotationResource] != tc.resource || !strings.HasPrefix(ann[argocdocm.AnnotationDescriptorDigest].(string), "sha256:") {
				t.Fatalf("provenance annotations %v", ann)
			}
		})
	}
}

func ocmDigest(b []byte) string {
	h := crypto.SHA256.New()
	h.Write(b)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// A component signed here: an image resource whose reference pins a digest that
// differs from the signed resource digest is refused, and so is a resource
// without a digest when signatures are required.
func TestImageDigestAndUndigestedResources(t *testing.T) {
	priv, _ := rsa.GenerateKey(rand.Reader, 2048)
	chart := fixtureBlob(t, "sha256:4e44272a9227f95b21baff6ccbf125a2f1ed7fb1763df0334f736438a4a9b527")
	imageDigest := strings.Repeat("a", 64)
	build := func(imageRef string, chartDigest bool) string {
		c := &ocmbuild.Component{Name: "example.com/signed/here", Version: "1.0.0", Resources: []ocmbuild.Resource{
			{Name: "chart", Type: "helmChart", MediaType: ocmbuild.MediaTypeArtifactSet, Data: chart, NoDigest: !chartDigest},
			{Name: "image", Type: "ociImage", Access: map[string]any{"type": "ociArtifact", "imageReference": imageRef},
				Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: imageDigest}},
		}}
		if err := c.Sign("release", priv); err != nil {
			t.Fatal(err)
		}
		c.Blobs = []ocmbuild.Blob{{MediaType: ocmbuild.MediaTypeArtifactSet, Data: chart}}
		dir := filepath.Join(t.TempDir(), "ctf")
		if err := ocmbuild.WriteCTF(dir, c); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	r := &argocdocm.Renderer{}
	r.SetSignatures(&signing.Verifier{Keys: map[string]crypto.PublicKey{"release": &priv.PublicKey}})
	render := func(repo string) error {
		_, err := r.Render(context.Background(), argocdocm.Request{Repository: repo, Component: "example.com/signed/here", Version: "1.0.0"})
		return err
	}
	if err := render(build("ghcr.io/x/app:1@sha256:"+imageDigest, true)); err != nil {
		t.Fatalf("consistent component refused: %v", err)
	}
	err := render(build("ghcr.io/x/app:1@sha256:"+strings.Repeat("b", 64), true))
	if !errors.Is(err, errdef.ErrDigestMismatch) || !strings.Contains(err.Error(), "resource image") {
		t.Fatalf("redirected image: %v", err)
	}
	err = render(build("ghcr.io/x/app:1", false))
	if !errors.Is(err, errdef.ErrSignature) || !strings.Contains(err.Error(), "no digest") {
		t.Fatalf("undigested chart: %v", err)
	}
}
