package cosign_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/cosign"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

func pushRandom(t *testing.T, reg *registrytest.Registry, tag string) name.Digest {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(reg.Host + "/argocd-ocm-plugin/sidecar:" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return ref.Context().Digest(d.String())
}

func keys(t *testing.T) (priv, pub []byte) {
	t.Helper()
	priv, pub, err := cosign.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// TestSignVerify signs with a throwaway key against the in-process registry
// and checks the stored format (cosign's tag, media type, annotation,
// payload bytes) and every way verification must fail.
func TestSignVerify(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.Start(t)
	signed := pushRandom(t, reg, "v1")
	other := pushRandom(t, reg, "v2")

	privPEM, pubPEM := keys(t)
	priv, err := cosign.ParsePrivateKey(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cosign.ParsePublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := cosign.Sign(ctx, signed, priv)
	if err != nil {
		t.Fatal(err)
	}
	wantTag := reg.Host + "/argocd-ocm-plugin/sidecar:sha256-" + strings.TrimPrefix(signed.DigestStr(), "sha256:") + ".sig"
	if tag.String() != wantTag {
		t.Fatalf("signature tag %s, want %s", tag, wantTag)
	}

	// The stored format.
	sigImg, err := remote.Image(tag)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := sigImg.Manifest()
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 {
		t.Fatalf("signature manifest %+v", m)
	}
	l := m.Layers[0]
	if l.MediaType != "application/vnd.dev.cosign.simplesigning.v1+json" {
		t.Errorf("layer media type %s", l.MediaType)
	}
	sig, err := base64.StdEncoding.DecodeString(l.Annotations["dev.cosignproject.cosign/signature"])
	if err != nil || len(sig) < 64 {
		t.Errorf("signature annotation %q: %v", l.Annotations["dev.cosignproject.cosign/signature"], err)
	}
	layer, _ := sigImg.LayerByDigest(l.Digest)
	rc, _ := layer.Compressed()
	payload, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"critical":{"identity":{"docker-reference":"` + reg.Host + `/argocd-ocm-plugin/sidecar"},"image":{"docker-manifest-digest":"` + signed.DigestStr() + `"},"type":"cosign container image signature"},"optional":null}`
	if string(payload) != want {
		t.Errorf("payload\n%s\nwant\n%s", payload, want)
	}

	vs, err := cosign.Verify(ctx, signed, pub)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Payload.Critical.Image.DockerManifestDigest != signed.DigestStr() {
		t.Fatalf("verified %+v", vs)
	}

	// A second signature (key rotation) is added, not replacing the first.
	priv2PEM, pub2PEM := keys(t)
	priv2, _ := cosign.ParsePrivateKey(priv2PEM)
	pub2, _ := cosign.ParsePublicKey(pub2PEM)
	if _, err := cosign.Sign(ctx, signed, priv2); err != nil {
		t.Fatal(err)
	}
	if vs, err := cosign.Verify(ctx, signed, pub); err != nil || len(vs) != 1 {
		t.Errorf("first key after a second signature: %v %v", vs, err)
	}
	if vs, err := cosign.Verify(ctx, signed, pub2); err != nil || len(vs) != 1 {
		t.Errorf("second key: %v %v", vs, err)
	}

	t.Run("tampered digest", func(t *testing.T) {
		// The other image has no signatures.
		_, err := cosign.Verify(ctx, other, pub)
		expectFail(t, err, "no signature manifest")
	})
	t.Run("signature moved to another digest", func(t *testing.T) {
		// Copy the signed image's signature manifest to the other image's
		// signature tag: the payload names the signed digest.
		otherTag, _ := cosign.SignatureTag(other)
		if err := remote.Write(otherTag, sigImg); err != nil {
			t.Fatal(err)
		}
		_, err := cosign.Verify(ctx, other, pub)
		expectFail(t, err, "signed digest "+signed.DigestStr())
	})
	t.Run("wrong key", func(t *testing.T) {
		_, pub3PEM := keys(t)
		pub3, _ := cosign.ParsePublicKey(pub3PEM)
		_, err := cosign.Verify(ctx, signed, pub3)
		expectFail(t, err, "does not verify with the key")
	})
	t.Run("tampered signature", func(t *testing.T) {
		target := pushRandom(t, reg, "v3")
		if _, err := cosign.Sign(ctx, target, priv); err != nil {
			t.Fatal(err)
		}
		tt, _ := cosign.SignatureTag(target)
		img, _ := remote.Image(tt)
		mf, _ := img.Manifest()
		sig, _ := base64.StdEncoding.DecodeString(mf.Layers[0].Annotations["dev.cosignproject.cosign/signature"])
		sig[len(sig)-1] ^= 1
		pl, _ := img.LayerByDigest(mf.Layers[0].Digest)
		forged, err := mutate.Append(emptySig(t), mutate.Addendum{Layer: pl,
			Annotations: map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(tt, forged); err != nil {
			t.Fatal(err)
		}
		_, err = cosign.Verify(ctx, target, pub)
		expectFail(t, err, "does not verify")
	})
}

func emptySig(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
}

func expectFail(t *testing.T, err error, why string) {
	t.Helper()
	if !errors.Is(err, cosign.ErrNoSignature) {
		t.Fatalf("verified, or failed otherwise: %v", err)
	}
	if !strings.Contains(err.Error(), why) {
		t.Errorf("error %q does not say %q", err, why)
	}
}

func TestParseKeys(t *testing.T) {
	priv, pub := keys(t)
	if _, err := cosign.ParsePrivateKey(pub); err == nil {
		t.Error("public key accepted as private")
	}
	if _, err := cosign.ParsePublicKey(priv); err == nil {
		t.Error("private key accepted as public")
	}
	if _, err := cosign.ParsePrivateKey([]byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n")); err == nil || !strings.Contains(err.Error(), "cosign sign --key") {
		t.Errorf("cosign's encrypted key: %v", err)
	}
	var p cosign.Payload
	d, err := name.NewDigest("example.com/a/b@sha256:" + strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := cosign.NewPayload(d)
	if err := json.Unmarshal(b, &p); err != nil || p.Critical.Identity.DockerReference != "example.com/a/b" {
		t.Errorf("payload %s: %v", b, err)
	}
}
