package signing

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	orasErrdef "oras.land/oras-go/v2/errdef"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Cosign's ways of storing the signature of an OCI artifact next to it.
const (
	// CosignSignPredicate is the in-toto predicate type of `cosign sign`
	// with the Sigstore bundle format (cosign v3): a DSSE statement whose
	// subject is the signed manifest digest, stored as an OCI 1.1 referrer
	// of artifact type MediaTypeSigstoreBundle.
	CosignSignPredicate = "https://sigstore.dev/cosign/sign/v1"
	// MediaTypeCosignSimpleSigning is a layer of the legacy tag scheme
	// (sha256-<hex>.sig): the payload whose signature is annotated.
	MediaTypeCosignSimpleSigning = "application/vnd.dev.cosign.simplesigning.v1+json"

	cosignAnnotationSignature   = "dev.cosignproject.cosign/signature"
	cosignAnnotationCertificate = "dev.sigstore.cosign/certificate"
	cosignAnnotationChain       = "dev.sigstore.cosign/chain"
	cosignAnnotationBundle      = "dev.sigstore.cosign/bundle"
	cosignAnnotationTimestamp   = "dev.sigstore.cosign/rfc3161timestamp"
)

// Bounds of what a signature check reads from a registry: signature
// manifests and payloads are a few KiB, and an artifact rarely has more than
// a handful.
const (
	maxCosignCandidates = 16
	maxCosignManifest   = 64 << 10
	maxCosignPayload    = 64 << 10
)

// ArtifactTrust is who may sign an OCI artifact a component references (a
// chart in a registry): a cosign public key, or keyless with a trusted root
// and identity. Exactly one is set.
type ArtifactTrust struct {
	// Key verifies key-based cosign signatures (`cosign sign --key`).
	Key signature.Verifier
	// KeyName says which key, for reports.
	KeyName string
	// Keyless verifies keyless ones.
	Keyless *Keyless
}

// ParseCosignPublicKey reads a cosign public key file (`cosign.pub`: PEM
// PUBLIC KEY, ECDSA, RSA or Ed25519).
func ParseCosignPublicKey(pemBytes []byte) (signature.Verifier, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: cosign public key: %s", errdef.ErrInvalidInput, shorten(err.Error()))
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%w: cosign public key: %s", errdef.ErrInvalidInput, shorten(err.Error()))
	}
	return v, nil
}

// SignatureStore is the repository of the signed artifact, as an oras-go
// remote.Repository is: signatures are its referrers, or under its tag
// sha256-<hex>.sig.
type SignatureStore interface {
	Resolve(ctx context.Context, reference string) (ocispec.Descriptor, error)
	Fetch(ctx context.Context, target ocispec.Descriptor) (io.ReadCloser, error)
	Referrers(ctx context.Context, desc ocispec.Descriptor, artifactType string, fn func(referrers []ocispec.Descriptor) error) error
}

// VerifyArtifact checks that the manifest subject carries a cosign
// signature that one of trust verifies: a Sigstore bundle stored as an OCI
// 1.1 referrer (cosign v3), or a signature of the sha256-<hex>.sig tag
// scheme (cosign v2). It returns who signed. Everything read is bounded; a
// failure names what was found and why none verified, on one line.
func VerifyArtifact(ctx context.Context, store SignatureStore, subject ocispec.Descriptor, trust []ArtifactTrust) (string, error) {
	if len(trust) == 0 {
		return "", fmt.Errorf("%w: no cosign key or trusted root configured", errdef.ErrInvalidInput)
	}
	var why []string
	found := 0
	// OCI 1.1 referrers (with oras-go's fallback to the referrers tag).
	var refs []ocispec.Descriptor
	err := store.Referrers(ctx, subject, MediaTypeSigstoreBundle, func(page []ocispec.Descriptor) error {
		refs = append(refs, page...)
		if len(refs) > maxCosignCandidates {
			return fmt.Errorf("%w: more than %d signature referrers", errdef.ErrLimitExceeded, maxCosignCandidates)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errdef.ErrLimitExceeded) && ctx.Err() == nil {
		why = append(why, "referrers: "+shorten(err.Error()))
	} else if err != nil {
		return "", err
	}
	for _, r := range refs {
		found++
		signer, err := verifyReferrer(ctx, store, subject, r, trust)
		if err == nil {
			return signer, nil
		}
		why = append(why, fmt.Sprintf("referrer %s: %s", r.Digest, err))
	}
	// The tag scheme.
	tag := strings.Replace(subject.Digest.String(), ":", "-", 1) + ".sig"
	desc, err := store.Resolve(ctx, tag)
	switch {
	case err == nil:
		n, signer, err := verifyTagScheme(ctx, store, subject, desc, trust)
		found += n
		if err == nil {
			return signer, nil
		}
		why = append(why, fmt.Sprintf("tag %s: %s", tag, err))
	case errors.Is(err, orasErrdef.ErrNotFound) || errors.Is(err, errdef.ErrNotFound): // no tag-scheme signature
	default:
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		why = append(why, fmt.Sprintf("tag %s: %s", tag, shorten(err.Error())))
	}
	if found == 0 {
		return "", fmt.Errorf("%w: %s has no cosign signature (neither an OCI referrer of type %s nor the tag %s)", errdef.ErrSignature, subject.Digest, MediaTypeSigstoreBundle, tag)
	}
	return "", fmt.Errorf("%w: no cosign signature of %s verifies: %s", errdef.ErrSignature, subject.Digest, shorten(strings.Join(why, "; ")))
}

// verifyReferrer checks one referrer: its manifest's bundle layer, a DSSE
// statement of `cosign sign` over subject.
func verifyReferrer(ctx context.Context, store SignatureStore, subject, ref ocispec.Descriptor, trust []ArtifactTrust) (string, error) {
	m, err := fetchManifest(ctx, store, ref)
	if err != nil {
		return "", err
	}
	for _, l := range m.Layers {
		if l.MediaType != MediaTypeSigstoreBundle {
			continue
		}
		raw, err := fetchBounded(ctx, store, l, MaxBundleSize)
		if err != nil {
			return "", err
		}
		var b bundle.Bundle
		if err := b.UnmarshalJSON(raw); err != nil {
			return "", fmt.Errorf("not a Sigstore bundle: %s", shorten(err.Error()))
		}
		env, err := b.Envelope()
		if err != nil || env == nil {
			return "", errors.New("the bundle holds no DSSE envelope")
		}
		st, err := env.Statement()
		if err != nil {
			return "", fmt.Errorf("DSSE statement: %s", shorten(err.Error()))
		}
		if st.GetPredicateType() != CosignSignPredicate {
			return "", fmt.Errorf("predicate type %s is not a cosign signature (%s)", errdef.Quote(st.GetPredicateType()), CosignSignPredicate)
		}
		want, _ := hex.DecodeString(subject.Digest.Encoded())
		return verifyWithTrust(&b, verify.WithArtifactDigest(subject.Digest.Algorithm().String(), want), trust)
	}
	return "", fmt.Errorf("no %s layer", MediaTypeSigstoreBundle)
}

// simpleSigning is the payload of a tag-scheme signature.
type simpleSigning struct {
	Critical struct {
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// verifyTagScheme checks the signature layers of the .sig manifest; it
// returns how many it looked at.
func verifyTagScheme(ctx context.Context, store SignatureStore, subject, desc ocispec.Descriptor, trust []ArtifactTrust) (int, string, error) {
	m, err := fetchManifest(ctx, store, desc)
	if err != nil {
		return 0, "", err
	}
	var why []string
	n := 0
	for _, l := range m.Layers {
		if l.MediaType != MediaTypeCosignSimpleSigning {
			continue
		}
		if n++; n > maxCosignCandidates {
			return n, "", fmt.Errorf("%w: more than %d signatures", errdef.ErrLimitExceeded, maxCosignCandidates)
		}
		signer, err := verifySimpleSigning(ctx, store, subject, l, trust)
		if err == nil {
			return n, signer, nil
		}
		why = append(why, err.Error())
	}
	if n == 0 {
		return 0, "", fmt.Errorf("no %s layer", MediaTypeCosignSimpleSigning)
	}
	return n, "", errors.New(strings.Join(why, "; "))
}

func verifySimpleSigning(ctx context.Context, store SignatureStore, subject, layer ocispec.Descriptor, trust []ArtifactTrust) (string, error) {
	payload, err := fetchBounded(ctx, store, layer, maxCosignPayload)
	if err != nil {
		return "", err
	}
	var p simpleSigning
	if err := json.Unmarshal(payload, &p); err != nil {
		return "", fmt.Errorf("payload is not a cosign simple signing document: %s", shorten(err.Error()))
	}
	if p.Critical.Image.DockerManifestDigest != subject.Digest.String() {
		return "", fmt.Errorf("payload signs %s, not %s", errdef.Quote(p.Critical.Image.DockerManifestDigest), subject.Digest)
	}
	sig, err := base64.StdEncoding.DecodeString(layer.Annotations[cosignAnnotationSignature])
	if err != nil || len(sig) == 0 {
		return "", errors.New("no base64 signature annotation")
	}
	var why []string
	for _, t := range trust {
		if t.Key != nil {
			if err := t.Key.VerifySignature(bytes.NewReader(sig), bytes.NewReader(payload)); err != nil {
				why = append(why, fmt.Sprintf("key %s: %s", t.KeyName, shorten(err.Error())))
				continue
			}
			return "key " + t.KeyName, nil
		}
		b, err := tagSchemeBundle(layer.Annotations, payload, sig)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		signer, err := t.Keyless.verifyEntity(b, verify.WithArtifact(bytes.NewReader(payload)))
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		return signer, nil
	}
	return "", errors.New(strings.Join(why, "; "))
}

// rekorBundle is cosign's dev.sigstore.cosign/bundle annotation.
type rekorBundle struct {
	SignedEntryTimestamp []byte `json:"SignedEntryTimestamp"`
	Payload              struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	} `json:"Payload"`
}

// tagSchemeBundle turns a keyless tag-scheme signature (certificate, chain,
// Rekor bundle and timestamp annotations) into the bundle v0.1 it is
// equivalent to, for sigstore-go.
func tagSchemeBundle(ann map[string]string, payload, sig []byte) (*bundle.Bundle, error) {
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(ann[cosignAnnotationCertificate] + "\n" + ann[cosignAnnotationChain]))
	if err != nil || len(certs) == 0 {
		return nil, errors.New("keyless: no signing certificate annotation")
	}
	var chain []*protocommon.X509Certificate
	for _, c := range certs {
		chain = append(chain, &protocommon.X509Certificate{RawBytes: c.Raw})
	}
	vm := &protobundle.VerificationMaterial{Content: &protobundle.VerificationMaterial_X509CertificateChain{
		X509CertificateChain: &protocommon.X509CertificateChain{Certificates: chain}}}
	if s := ann[cosignAnnotationBundle]; s != "" {
		var rb rekorBundle
		if err := json.Unmarshal([]byte(s), &rb); err != nil {
			return nil, fmt.Errorf("rekor bundle annotation: %s", shorten(err.Error()))
		}
		body, err := base64.StdEncoding.DecodeString(rb.Payload.Body)
		if err != nil {
			return nil, errors.New("rekor bundle annotation: body is not base64")
		}
		var kv struct{ Kind, APIVersion string }
		if err := json.Unmarshal(body, &kv); err != nil {
			return nil, errors.New("rekor bundle annotation: body is not a Rekor entry")
		}
		logID, err := hex.DecodeString(rb.Payload.LogID)
		if err != nil {
			return nil, errors.New("rekor bundle annotation: log ID is not hex")
		}
		vm.TlogEntries = []*protorekor.TransparencyLogEntry{{LogIndex: rb.Payload.LogIndex, LogId: &protocommon.LogId{KeyId: logID},
			KindVersion: &protorekor.KindVersion{Kind: kv.Kind, Version: kv.APIVersion}, IntegratedTime: rb.Payload.IntegratedTime,
			InclusionPromise: &protorekor.InclusionPromise{SignedEntryTimestamp: rb.SignedEntryTimestamp}, CanonicalizedBody: body}}
	}
	if s := ann[cosignAnnotationTimestamp]; s != "" {
		var ts struct {
			SignedRFC3161Timestamp []byte `json:"SignedRFC3161Timestamp"`
		}
		if err := json.Unmarshal([]byte(s), &ts); err != nil {
			return nil, errors.New("timestamp annotation is not cosign's")
		}
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: ts.SignedRFC3161Timestamp}}}
	}
	digest := sha256.Sum256(payload)
	pb := &protobundle.Bundle{MediaType: "application/vnd.dev.sigstore.bundle+json;version=0.1", VerificationMaterial: vm,
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest[:]}, Signature: sig}}}
	b, err := bundle.NewBundle(pb)
	if err != nil {
		return nil, fmt.Errorf("keyless tag-scheme signature: %s", shorten(err.Error()))
	}
	return b, nil
}

// verifyWithTrust tries every trust on a bundle: a key (the bundle names a
// public key, no certificate) or keyless.
func verifyWithTrust(b *bundle.Bundle, artifact verify.ArtifactPolicyOption, trust []ArtifactTrust) (string, error) {
	vc, err := b.VerificationContent()
	if err != nil {
		return "", fmt.Errorf("bundle verification material: %s", shorten(err.Error()))
	}
	var why []string
	for _, t := range trust {
		switch {
		case t.Key != nil && vc.Certificate() == nil:
			tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
				return root.NewExpiringKey(t.Key, time.Time{}, time.Time{}), nil
			})
			v, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
			if err == nil {
				_, err = v.Verify(b, verify.NewPolicy(artifact, verify.WithKey()))
			}
			if err == nil {
				return "key " + t.KeyName, nil
			}
			why = append(why, fmt.Sprintf("key %s: %s", t.KeyName, shorten(err.Error())))
		case t.Keyless != nil && vc.Certificate() != nil:
			signer, err := t.Keyless.verifyEntity(b, artifact)
			if err == nil {
				return signer, nil
			}
			why = append(why, err.Error())
		}
	}
	if len(why) == 0 {
		return "", errors.New("signed with a key where keyless is configured, or keyless where a key is")
	}
	return "", errors.New(strings.Join(why, "; "))
}

func fetchManifest(ctx context.Context, store SignatureStore, desc ocispec.Descriptor) (*ocispec.Manifest, error) {
	b, err := fetchBounded(ctx, store, desc, maxCosignManifest)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("signature manifest: %s", shorten(err.Error()))
	}
	return &m, nil
}

// fetchBounded reads desc whole, at most limit bytes, and checks its digest.
func fetchBounded(ctx context.Context, store SignatureStore, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	if desc.Size > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than %d", errdef.ErrLimitExceeded, desc.Digest, desc.Size, limit)
	}
	rc, err := store.Fetch(ctx, desc)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", desc.Digest, shorten(err.Error()))
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %s", desc.Digest, shorten(err.Error()))
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: %s is more than %d bytes", errdef.ErrLimitExceeded, desc.Digest, limit)
	}
	if err := desc.Digest.Validate(); err != nil || desc.Digest.Algorithm().FromBytes(b) != desc.Digest {
		return nil, fmt.Errorf("%w: %s: content does not match its digest", errdef.ErrDigestMismatch, desc.Digest)
	}
	return b, nil
}
