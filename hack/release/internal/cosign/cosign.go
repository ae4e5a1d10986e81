// Package cosign signs and verifies container images the way cosign does
// with a key pair (cosign's SIGNATURE_SPEC, tag-based discovery): a "simple
// signing" payload naming the image's manifest digest, an ECDSA P-256
// signature over its SHA-256 (ASN.1 DER, base64), stored in the image's
// repository under the tag sha256-<hex>.sig as an OCI image manifest whose
// layers are the payloads (media type
// application/vnd.dev.cosign.simplesigning.v1+json) carrying the signature
// in the dev.cosignproject.cosign/signature annotation. `cosign verify --key`
// checks what Sign writes; Verify checks what `cosign sign --key` writes.
// No transparency log, no certificates, no keyless signing.
package cosign

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Format constants of cosign's signature spec.
const (
	PayloadMediaType    = types.MediaType("application/vnd.dev.cosign.simplesigning.v1+json")
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	PayloadType         = "cosign container image signature"
	// maxPayload bounds what Verify reads of one payload blob.
	maxPayload = 1 << 20
)

// ErrNoSignature: the image has no signature tag, or none of its
// signatures verifies with the key for this digest.
var ErrNoSignature = errors.New("no valid signature")

// Payload is the simple signing payload. Field order is cosign's.
type Payload struct {
	Critical Critical `json:"critical"`
	Optional any      `json:"optional"`
}

type Critical struct {
	Identity Identity `json:"identity"`
	Image    Image    `json:"image"`
	Type     string   `json:"type"`
}

type Identity struct {
	DockerReference string `json:"docker-reference"`
}

type Image struct {
	DockerManifestDigest string `json:"docker-manifest-digest"`
}

// NewPayload is the payload for the image ref (by digest), as cosign writes
// it: the repository as docker-reference, no optional claims.
func NewPayload(ref name.Digest) ([]byte, error) {
	return json.Marshal(Payload{Critical: Critical{
		Identity: Identity{DockerReference: ref.Context().Name()},
		Image:    Image{DockerManifestDigest: ref.DigestStr()},
		Type:     PayloadType,
	}})
}

// SignatureTag is where cosign looks for the signatures of ref.
func SignatureTag(ref name.Digest) (name.Tag, error) {
	algo, hex, ok := strings.Cut(ref.DigestStr(), ":")
	if !ok {
		return name.Tag{}, fmt.Errorf("digest %q", ref.DigestStr())
	}
	return ref.Context().Tag(algo + "-" + hex + ".sig"), nil
}

// GenerateKey makes an ECDSA P-256 key pair, PEM-encoded: the private key as
// PKCS#8 ("PRIVATE KEY", unencrypted: keep it in a secret store; `cosign
// import-key-pair` turns it into cosign's encrypted format) and the public
// key as PKIX ("PUBLIC KEY", what `cosign verify --key` reads).
func GenerateKey() (privPEM, pubPEM []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}

// ParsePrivateKey reads a PEM ECDSA P-256 private key (PKCS#8 or SEC 1).
func ParsePrivateKey(b []byte) (*ecdsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("private key: no PEM block")
	}
	var k *ecdsa.PrivateKey
	switch blk.Type {
	case "PRIVATE KEY":
		p, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		ek, ok := p.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("private key: %T, want ECDSA P-256", p)
		}
		k = ek
	case "EC PRIVATE KEY":
		ek, err := x509.ParseECPrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		k = ek
	case "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
		return nil, errors.New("private key: cosign's encrypted key format; sign with `cosign sign --key` instead, or use an unencrypted PKCS#8 key (see docs/release.md)")
	default:
		return nil, fmt.Errorf("private key: PEM type %q", blk.Type)
	}
	if k.Curve != elliptic.P256() {
		return nil, fmt.Errorf("private key: curve %s, want P-256", k.Curve.Params().Name)
	}
	return k, nil
}

// ParsePublicKey reads a PEM PKIX ECDSA P-256 public key (cosign.pub).
func ParsePublicKey(b []byte) (*ecdsa.PublicKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, errors.New("public key: want a PEM PUBLIC KEY block")
	}
	p, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	k, ok := p.(*ecdsa.PublicKey)
	if !ok || k.Curve != elliptic.P256() {
		return nil, fmt.Errorf("public key: %T, want ECDSA P-256", p)
	}
	return k, nil
}

func options(ctx context.Context, opts []remote.Option) []remote.Option {
	return append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
}

// Sign signs ref and adds the signature to its signature manifest (created
// when missing), returning the signature tag.
func Sign(ctx context.Context, ref name.Digest, key *ecdsa.PrivateKey, opts ...remote.Option) (name.Tag, error) {
	payload, err := NewPayload(ref)
	if err != nil {
		return name.Tag{}, err
	}
	h := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, h[:])
	if err != nil {
		return name.Tag{}, err
	}
	tag, err := SignatureTag(ref)
	if err != nil {
		return name.Tag{}, err
	}
	ro := options(ctx, opts)
	base, err := remote.Image(tag, ro...)
	switch {
	case isNotFound(err):
		base = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	case err != nil:
		return name.Tag{}, fmt.Errorf("read %s: %w", tag, err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:       static.NewLayer(payload, PayloadMediaType),
		Annotations: map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)},
	})
	if err != nil {
		return name.Tag{}, err
	}
	if err := remote.Write(tag, img, ro...); err != nil {
		return name.Tag{}, fmt.Errorf("write %s: %w", tag, err)
	}
	return tag, nil
}

// Verified is one signature that verified.
type Verified struct {
	Payload Payload
	Layer   v1.Hash
}

// Verify checks that the signature manifest of ref holds at least one
// payload signed by key that names ref's digest. It returns the verified
// payloads, or an error wrapping ErrNoSignature that says why each failed.
func Verify(ctx context.Context, ref name.Digest, key *ecdsa.PublicKey, opts ...remote.Option) ([]Verified, error) {
	tag, err := SignatureTag(ref)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(tag, options(ctx, opts)...)
	if isNotFound(err) {
		return nil, fmt.Errorf("%w for %s: no signature manifest %s", ErrNoSignature, ref, tag)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	var ok []Verified
	var why []string
	for i, l := range m.Layers {
		if l.MediaType != PayloadMediaType {
			continue
		}
		p, err := verifyLayer(img, l, ref, key)
		if err != nil {
			why = append(why, fmt.Sprintf("layer %d (%s): %v", i, l.Digest, err))
			continue
		}
		ok = append(ok, Verified{Payload: *p, Layer: l.Digest})
	}
	if len(ok) == 0 {
		if len(why) == 0 {
			why = append(why, "no simple signing payloads")
		}
		return nil, fmt.Errorf("%w for %s in %s: %s", ErrNoSignature, ref, tag, strings.Join(why, "; "))
	}
	return ok, nil
}

func verifyLayer(img v1.Image, l v1.Descriptor, ref name.Digest, key *ecdsa.PublicKey) (*Payload, error) {
	sigB64, ok := l.Annotations[SignatureAnnotation]
	if !ok {
		return nil, errors.New("no signature annotation")
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	if l.Size > maxPayload {
		return nil, fmt.Errorf("payload of %d bytes", l.Size)
	}
	layer, err := img.LayerByDigest(l.Digest)
	if err != nil {
		return nil, err
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	payload, err := io.ReadAll(io.LimitReader(rc, maxPayload+1))
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256(payload)
	if got := (v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", h)}); got != l.Digest {
		return nil, fmt.Errorf("payload digest %s, manifest says %s", got, l.Digest)
	}
	if !ecdsa.VerifyASN1(key, h[:], sig) {
		return nil, errors.New("signature does not verify with the key")
	}
	var p Payload
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if p.Critical.Type != PayloadType {
		return nil, fmt.Errorf("payload type %q", p.Critical.Type)
	}
	if p.Critical.Image.DockerManifestDigest != ref.DigestStr() {
		return nil, fmt.Errorf("signed digest %s, not %s", p.Critical.Image.DockerManifestDigest, ref.DigestStr())
	}
	return &p, nil
}

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}
