// Package sigstoretest signs keyless the way the OCM CLI does (cosign
// sign-blob over the raw descriptor digest, a Sigstore bundle v0.3 as the
// signature value) with sigstore-go's own virtual Sigstore: a Fulcio CA, a
// Rekor log and a timestamp authority that live in memory. It also writes
// their trusted_root.json. For tests and committed fixtures only.
package sigstoretest

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/go-openapi/runtime"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/rekor/pkg/generated/models"
	"github.com/sigstore/rekor/pkg/pki"
	"github.com/sigstore/rekor/pkg/types"
	"github.com/sigstore/rekor/pkg/types/hashedrekord"
	_ "github.com/sigstore/rekor/pkg/types/hashedrekord/v0.0.1" // registers the entry version
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// BundleMediaType is the media type of the bundles Sign makes.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// Authority is one virtual Sigstore deployment.
type Authority struct {
	vs *ca.VirtualSigstore
}

// New starts a virtual Sigstore with fresh keys.
func New() (*Authority, error) {
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		return nil, err
	}
	return &Authority{vs: vs}, nil
}

// RootOptions leave parts out of a trusted root, or add the CT log.
type RootOptions struct {
	NoTransparencyLogs     bool
	NoTimestampAuthorities bool
	// CTLogs lists the virtual CT log: certificates must then carry SCTs,
	// which the virtual Fulcio does not embed.
	CTLogs bool
}

// TrustedRoot is the trusted_root.json of the authority.
func (a *Authority) TrustedRoot(o RootOptions) ([]byte, error) {
	tlogs, ctlogs := rawIDs(a.vs.RekorLogs()), map[string]*root.TransparencyLog{}
	tsas := a.vs.TimestampingAuthorities()
	if o.NoTransparencyLogs {
		tlogs = map[string]*root.TransparencyLog{}
	}
	if o.NoTimestampAuthorities {
		tsas = nil
	}
	if o.CTLogs {
		ctlogs = rawIDs(a.vs.CTLogs())
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, a.vs.FulcioCertificateAuthorities(), ctlogs, tsas, tlogs)
	if err != nil {
		return nil, err
	}
	return tr.MarshalJSON()
}

// rawIDs gives the virtual logs the log IDs a trusted_root.json holds (the
// key digest, not its hex spelling, which the virtual logs keep in memory).
func rawIDs(logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	out := make(map[string]*root.TransparencyLog, len(logs))
	for id, l := range logs {
		c := *l
		if raw, err := hex.DecodeString(id); err == nil {
			c.ID = raw
		}
		out[id] = &c
	}
	return out
}

// SignOptions shape one signature.
type SignOptions struct {
	// LogAt is the log's integrated time; zero means one minute after the
	// certificate was issued (it is valid for ten).
	LogAt time.Time
	// NoLog leaves the transparency log entry out (private infrastructure).
	NoLog bool
	// NoTimestamp leaves the RFC 3161 timestamp out.
	NoTimestamp bool
}

// Sign signs artifact as identity of issuer (a fresh short-lived
// certificate from the virtual Fulcio) and returns the bundle JSON: message
// signature, certificate, Rekor v1 hashedrekord entry with inclusion proof
// and signed entry timestamp, RFC 3161 timestamp.
func (a *Authority) Sign(identity, issuer string, artifact []byte, o SignOptions) ([]byte, error) {
	leaf, key, err := a.vs.GenerateLeafCert(identity, issuer)
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256(artifact)
	sig, err := ecdsa.SignASN1(rand.Reader, key.(*ecdsa.PrivateKey), digest[:])
	if err != nil {
		return nil, err
	}
	vm := &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: leaf.Raw}},
	}
	if !o.NoTimestamp {
		tsr, err := a.vs.TimestampResponse(sig)
		if err != nil {
			return nil, err
		}
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{
			Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: tsr}}}
	}
	if !o.NoLog {
		at := o.LogAt
		if at.IsZero() {
			at = leaf.NotBefore.Add(time.Minute)
		}
		entry, err := a.logEntry(leaf, digest[:], sig, at)
		if err != nil {
			return nil, err
		}
		vm.TlogEntries = []*protorekor.TransparencyLogEntry{entry}
	}
	b := &protobundle.Bundle{
		MediaType:            BundleMediaType,
		VerificationMaterial: vm,
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest[:]},
			Signature:     sig,
		}},
	}
	return protojson.Marshal(b)
}

// logEntry is the Rekor v1 hashedrekord entry of a signature, with the
// log's signed entry timestamp and an inclusion proof in a tree of one.
func (a *Authority) logEntry(leaf *x509.Certificate, digest, sig []byte, at time.Time) (*protorekor.TransparencyLogEntry, error) {
	certPEM, err := cryptoutils.MarshalCertificateToPEM(leaf)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	proposed, err := types.NewProposedEntry(ctx, hashedrekord.KIND, "0.0.1", types.ArtifactProperties{
		ArtifactHash:   hex.EncodeToString(digest),
		SignatureBytes: sig,
		PublicKeyBytes: [][]byte{certPEM},
		PKIFormat:      string(pki.X509),
	})
	if err != nil {
		return nil, err
	}
	impl, err := types.CreateVersionedEntry(proposed)
	if err != nil {
		return nil, err
	}
	body, err := types.CanonicalizeEntry(ctx, impl)
	if err != nil {
		return nil, err
	}
	if _, err := models.UnmarshalProposedEntry(strings.NewReader(string(body)), runtime.JSONConsumer()); err != nil {
		return nil, err
	}
	logID, err := a.vs.RekorLogID()
	if err != nil {
		return nil, err
	}
	set, err := a.vs.RekorSignPayload(tlog.RekorPayload{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: at.Unix(), LogIndex: 0, LogID: logID})
	if err != nil {
		return nil, err
	}
	proof, err := a.vs.GetInclusionProof(body)
	if err != nil {
		return nil, err
	}
	rootHash, err := hex.DecodeString(*proof.RootHash)
	if err != nil {
		return nil, err
	}
	rawID, err := hex.DecodeString(logID)
	if err != nil {
		return nil, err
	}
	return &protorekor.TransparencyLogEntry{
		LogIndex:          0,
		LogId:             &protocommon.LogId{KeyId: rawID},
		KindVersion:       &protorekor.KindVersion{Kind: hashedrekord.KIND, Version: "0.0.1"},
		IntegratedTime:    at.Unix(),
		InclusionPromise:  &protorekor.InclusionPromise{SignedEntryTimestamp: set},
		InclusionProof:    &protorekor.InclusionProof{LogIndex: 0, RootHash: rootHash, TreeSize: *proof.TreeSize, Hashes: [][]byte{}, Checkpoint: &protorekor.Checkpoint{Envelope: *proof.Checkpoint}},
		CanonicalizedBody: body,
	}, nil
}

// Normalisation and hash of the signatures SignDescriptor adds, as the OCM
// CLI v0.13 signs.
const (
	Normalisation = "jsonNormalisation/v4alpha1"
	Hash          = "SHA-256"
)

// SignDescriptor adds a signature called name to the descriptor document raw
// (YAML or JSON, v2): its jsonNormalisation/v4alpha1 SHA-256 digest signed by
// sign over the raw digest bytes, algorithm Sigstore/v1alpha1, the bundle in
// base64, as the OCM CLI's sigstore handler writes it. Signatures already
// there stay.
func SignDescriptor(raw []byte, name string, sign func(artifact []byte) ([]byte, error)) ([]byte, error) {
	d, err := ocm.DecodeDescriptor(raw)
	if err != nil {
		return nil, err
	}
	dg, err := signing.Digest(d, Normalisation, Hash)
	if err != nil {
		return nil, err
	}
	sum, err := hex.DecodeString(dg)
	if err != nil {
		return nil, err
	}
	bundle, err := sign(sum)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	doc := map[string]any{}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	sigs, _ := doc["signatures"].([]any)
	doc["signatures"] = append(sigs, map[string]any{"name": name,
		"digest": map[string]any{"hashAlgorithm": Hash, "normalisationAlgorithm": Normalisation, "value": dg},
		"signature": map[string]any{"algorithm": signing.SigstoreV1Alpha1, "mediaType": signing.MediaTypeSigstoreBundle,
			"value": base64.StdEncoding.EncodeToString(bundle)}})
	return yaml.Marshal(doc)
}

// SignComponent signs c keyless as identity of issuer under name (see
// SignDescriptor); c's other signatures stay.
func (a *Authority) SignComponent(c *ocmbuild.Component, name, identity, issuer string, o SignOptions) error {
	raw, err := c.DescriptorYAML()
	if err != nil {
		return err
	}
	signed, err := SignDescriptor(raw, name, func(artifact []byte) ([]byte, error) { return a.Sign(identity, issuer, artifact, o) })
	if err != nil {
		return err
	}
	c.RawDescriptor = signed
	return nil
}
