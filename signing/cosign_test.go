package signing_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/sigstoretest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// chartInRegistry pushes a small Helm chart manifest to repo of a real
// registry (the CNCF distribution registry in-process) and returns its
// descriptor.
func chartInRegistry(t *testing.T, reg *registrytest.Registry, repo, tag string) ocispec.Descriptor {
	t.Helper()
	cfg := reg.PushBlob(t, repo, []byte(`{"name":"app","version":"`+tag+`"}`))
	layer := reg.PushBlob(t, repo, []byte("not really a chart archive "+tag))
	cfg.MediaType, layer.MediaType = "application/vnd.cncf.helm.config.v1+json", "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	m, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	return reg.PushManifest(t, repo, tag, ocispec.MediaTypeImageManifest, m)
}

func cosignKey(t *testing.T) (*ecdsa.PrivateKey, signing.ArtifactTrust) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := signing.ParseCosignPublicKey(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	return k, signing.ArtifactTrust{Key: v, KeyName: "cosign.pub"}
}

// Cosign signatures of a chart in a registry, in both of cosign's storage
// schemes, key-based and keyless: each verifies only with its own trust.
func TestVerifyArtifactCosign(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.Start(t)
	key, keyTrust := cosignKey(t)
	_, otherKey := cosignKey(t)
	c := newKeylessCase(t)
	keylessTrust := signing.ArtifactTrust{Keyless: keyless(t, c.root, ciPolicy, false)}
	wrongIdentity := signing.ArtifactTrust{Keyless: keyless(t, c.root, signing.Identity{Subject: "someone@example.com", Issuer: ciIssuer}, false)}

	tagKey := chartInRegistry(t, reg, "charts/tag-key", "1.0.0")
	repo := reg.Repository(t, "charts/tag-key")
	payload := sigstoretest.CosignPayload(reg.Host+"/charts/tag-key", tagKey.Digest)
	ann, err := sigstoretest.CosignKeyAnnotations(key, payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigstoretest.PushCosignTagSignature(ctx, repo, tagKey.Digest, payload, ann); err != nil {
		t.Fatal(err)
	}

	tagKeyless := chartInRegistry(t, reg, "charts/tag-keyless", "1.0.0")
	repoKeyless := reg.Repository(t, "charts/tag-keyless")
	payload = sigstoretest.CosignPayload(reg.Host+"/charts/tag-keyless", tagKeyless.Digest)
	ann, err = c.authority.CosignKeylessAnnotations(ciIdentity, ciIssuer, payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigstoretest.PushCosignTagSignature(ctx, repoKeyless, tagKeyless.Digest, payload, ann); err != nil {
		t.Fatal(err)
	}

	refKey := chartInRegistry(t, reg, "charts/referrer-key", "1.0.0")
	repoRef := reg.Repository(t, "charts/referrer-key")
	b, err := sigstoretest.CosignKeyBundle(key, refKey.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigstoretest.PushCosignReferrer(ctx, repoRef, refKey, b); err != nil {
		t.Fatal(err)
	}

	unsigned := chartInRegistry(t, reg, "charts/unsigned", "1.0.0")
	// A signature of another digest under this digest's tag.
	stolen := chartInRegistry(t, reg, "charts/stolen", "1.0.0")
	repoStolen := reg.Repository(t, "charts/stolen")
	other := chartInRegistry(t, reg, "charts/stolen", "2.0.0")
	payload = sigstoretest.CosignPayload(reg.Host+"/charts/stolen", other.Digest)
	ann, err = sigstoretest.CosignKeyAnnotations(key, payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigstoretest.PushCosignTagSignature(ctx, repoStolen, stolen.Digest, payload, ann); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		repo    string
		subject ocispec.Descriptor
		trust   []signing.ArtifactTrust
		want    string // signer, or the refusal
		ok      bool
	}{
		{"tag scheme, key", "charts/tag-key", tagKey, []signing.ArtifactTrust{keyTrust}, "key cosign.pub", true},
		{"tag scheme, key among others", "charts/tag-key", tagKey, []signing.ArtifactTrust{otherKey, keylessTrust, keyTrust}, "key cosign.pub", true},
		{"tag scheme, wrong key", "charts/tag-key", tagKey, []signing.ArtifactTrust{otherKey}, "no cosign signature of " + tagKey.Digest.String() + " verifies", false},
		{"tag scheme, keyless", "charts/tag-keyless", tagKeyless, []signing.ArtifactTrust{keylessTrust}, ciIdentity + " (OIDC issuer " + ciIssuer + "), logged", true},
		{"tag scheme, keyless wrong identity", "charts/tag-keyless", tagKeyless, []signing.ArtifactTrust{wrongIdentity}, `the policy requires identity "someone@example.com"`, false},
		{"tag scheme, keyless for a key", "charts/tag-keyless", tagKeyless, []signing.ArtifactTrust{keyTrust}, "key cosign.pub", false},
		{"referrer, key", "charts/referrer-key", refKey, []signing.ArtifactTrust{keyTrust}, "key cosign.pub", true},
		{"referrer, wrong key", "charts/referrer-key", refKey, []signing.ArtifactTrust{otherKey}, "verifies", false},
		{"referrer, keyless for a key", "charts/referrer-key", refKey, []signing.ArtifactTrust{keylessTrust}, "signed with a key where keyless is configured", false},
		{"unsigned", "charts/unsigned", unsigned, []signing.ArtifactTrust{keyTrust}, "has no cosign signature", false},
		{"signature of another digest", "charts/stolen", stolen, []signing.ArtifactTrust{keyTrust}, "payload signs \"" + other.Digest.String() + "\", not " + stolen.Digest.String(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			signer, err := signing.VerifyArtifact(ctx, reg.Repository(t, tc.repo), tc.subject, tc.trust)
			if tc.ok {
				if err != nil || !strings.Contains(signer, tc.want) {
					t.Fatalf("signer %q, err %v: want %q", signer, err, tc.want)
				}
				return
			}
			if err == nil || !errors.Is(err, errdef.ErrSignature) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v: want one line of ErrSignature saying %q", err, tc.want)
			}
		})
	}
}
