package sigstoretest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"google.golang.org/protobuf/encoding/protojson"
	"oras.land/oras-go/v2"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// CosignPayload is the simple signing payload `cosign sign` (tag scheme)
// signs for the manifest d of repository ref.
func CosignPayload(ref string, d digest.Digest) []byte {
	b, _ := json.Marshal(map[string]any{"critical": map[string]any{
		"identity": map[string]any{"docker-reference": ref},
		"image":    map[string]any{"docker-manifest-digest": d.String()},
		"type":     "cosign container image signature"}, "optional": nil})
	return b
}

// CosignKeyAnnotations signs payload with key as `cosign sign --key` does.
func CosignKeyAnnotations(key *ecdsa.PrivateKey, payload []byte) (map[string]string, error) {
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		return nil, err
	}
	return map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}, nil
}

// CosignKeylessAnnotations signs payload keyless (virtual Fulcio, Rekor,
// timestamp authority) and spells the result as cosign's tag-scheme
// annotations: certificate, Rekor bundle, RFC 3161 timestamp, signature.
func (a *Authority) CosignKeylessAnnotations(identity, issuer string, payload []byte) (map[string]string, error) {
	raw, err := a.Sign(identity, issuer, payload, SignOptions{})
	if err != nil {
		return nil, err
	}
	var b protobundle.Bundle
	if err := protojson.Unmarshal(raw, &b); err != nil {
		return nil, err
	}
	cert := b.GetVerificationMaterial().GetCertificate().GetRawBytes()
	certPEM := string(cryptoutils.PEMEncode(cryptoutils.CertificatePEMType, cert))
	e := b.GetVerificationMaterial().GetTlogEntries()[0]
	rb, err := json.Marshal(map[string]any{"SignedEntryTimestamp": e.GetInclusionPromise().GetSignedEntryTimestamp(),
		"Payload": map[string]any{"body": base64.StdEncoding.EncodeToString(e.GetCanonicalizedBody()), "integratedTime": e.GetIntegratedTime(),
			"logIndex": e.GetLogIndex(), "logID": hex.EncodeToString(e.GetLogId().GetKeyId())}})
	if err != nil {
		return nil, err
	}
	ts, err := json.Marshal(map[string]any{"SignedRFC3161Timestamp": b.GetVerificationMaterial().GetTimestampVerificationData().GetRfc3161Timestamps()[0].GetSignedTimestamp()})
	if err != nil {
		return nil, err
	}
	return map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(b.GetMessageSignature().GetSignature()),
		"dev.sigstore.cosign/certificate": certPEM, "dev.sigstore.cosign/chain": "", "dev.sigstore.cosign/bundle": string(rb),
		"dev.sigstore.cosign/rfc3161timestamp": string(ts)}, nil
}

// PushCosignTagSignature stores one tag-scheme signature of subject in t:
// the payload as a simple signing layer with the annotations, under the tag
// sha256-<hex>.sig.
func PushCosignTagSignature(ctx context.Context, t oras.Target, subject digest.Digest, payload []byte, ann map[string]string) error {
	cfg := []byte("{}")
	if err := push(ctx, t, ocispec.MediaTypeImageConfig, cfg); err != nil {
		return err
	}
	if err := push(ctx, t, signing.MediaTypeCosignSimpleSigning, payload); err != nil {
		return err
	}
	m, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: desc(ocispec.MediaTypeImageConfig, cfg), Layers: []ocispec.Descriptor{withAnnotations(desc(signing.MediaTypeCosignSimpleSigning, payload), ann)}})
	if err != nil {
		return err
	}
	md := desc(ocispec.MediaTypeImageManifest, m)
	if err := t.Push(ctx, md, bytes.NewReader(m)); err != nil {
		return err
	}
	return t.Tag(ctx, md, strings.Replace(subject.String(), ":", "-", 1)+".sig")
}

// CosignKeyBundle is the bundle `cosign sign --key` (v3, bundle format)
// makes for subject: a DSSE envelope of the in-toto statement of predicate
// https://sigstore.dev/cosign/sign/v1, with a public key hint, no log.
func CosignKeyBundle(key *ecdsa.PrivateKey, subject digest.Digest) ([]byte, error) {
	stmt, err := json.Marshal(map[string]any{"_type": "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"digest": map[string]string{subject.Algorithm().String(): subject.Encoded()}}},
		"predicateType": signing.CosignSignPredicate, "predicate": map[string]any{}})
	if err != nil {
		return nil, err
	}
	const payloadType = "application/vnd.in-toto+json"
	sum := sha256.Sum256(dsse.PAE(payloadType, stmt))
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		return nil, err
	}
	b := &protobundle.Bundle{MediaType: BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: "cosign.pub"}}},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{Payload: stmt, PayloadType: payloadType,
			Signatures: []*protodsse.Signature{{Sig: sig}}}}}
	return protojson.Marshal(b)
}

// PushCosignReferrer stores a bundle as cosign v3 does: an OCI 1.1
// referrer of subject with artifact type and layer of the bundle media type.
func PushCosignReferrer(ctx context.Context, t oras.Target, subject ocispec.Descriptor, bundleJSON []byte) error {
	empty := []byte("{}")
	if err := push(ctx, t, ocispec.MediaTypeEmptyJSON, empty); err != nil {
		return err
	}
	if err := push(ctx, t, signing.MediaTypeSigstoreBundle, bundleJSON); err != nil {
		return err
	}
	m, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, ArtifactType: signing.MediaTypeSigstoreBundle,
		Config: desc(ocispec.MediaTypeEmptyJSON, empty), Layers: []ocispec.Descriptor{desc(signing.MediaTypeSigstoreBundle, bundleJSON)},
		Subject: &subject, Annotations: map[string]string{"dev.sigstore.bundle.content": "dsse-envelope", "dev.sigstore.bundle.predicateType": signing.CosignSignPredicate}})
	if err != nil {
		return err
	}
	return t.Push(ctx, desc(ocispec.MediaTypeImageManifest, m), bytes.NewReader(m))
}

func push(ctx context.Context, t oras.Target, mt string, b []byte) error {
	d := desc(mt, b)
	if ok, err := t.Exists(ctx, d); err == nil && ok {
		return nil
	}
	if err := t.Push(ctx, d, bytes.NewReader(b)); err != nil {
		return fmt.Errorf("push %s: %w", d.Digest, err)
	}
	return nil
}

func desc(mt string, b []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
}

func withAnnotations(d ocispec.Descriptor, ann map[string]string) ocispec.Descriptor {
	d.Annotations = ann
	return d
}
