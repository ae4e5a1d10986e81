package signing

import (
	"context"
	"crypto"
	"crypto/rsa"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Signature algorithms and signature media types.
const (
	RSAPKCS1v15 = "RSASSA-PKCS1-V1_5"
	RSAPSS      = "RSASSA-PSS"
	// GPG is a detached OpenPGP signature over the digest bytes.
	GPG = "GPG"

	// MediaTypeRSA and MediaTypeRSAPSS: the signature value is hex.
	MediaTypeRSA    = "application/vnd.ocm.signature.rsa"
	MediaTypeRSAPSS = "application/vnd.ocm.signature.rsa.pss"
	// MediaTypePEM: the value is a PEM "SIGNATURE" block, optionally followed
	// by the signer's certificate and intermediates (not the root). With a
	// certificate the chain is validated against configured root CAs;
	// without one the configured key verifies it.
	MediaTypePEM = "application/x-pem-file"
	// MediaTypeGPG: the value is an ASCII-armored detached OpenPGP signature.
	MediaTypeGPG = "application/vnd.ocm.signature.gpg"
)

// supported names what this package verifies, for refusals.
const supported = RSAPSS + " and " + RSAPKCS1v15 + " (media types " + MediaTypeRSAPSS + ", " + MediaTypeRSA + " hex, or " +
	MediaTypePEM + "), " + GPG + " (" + MediaTypeGPG + "), " + SigstoreV1Alpha1 + " (" + MediaTypeSigstoreBundle + ")"

// Result describes one verified signature.
type Result struct {
	Component              string `json:"component"`
	Version                string `json:"version"`
	Signature              string `json:"signature"` // signature name
	Algorithm              string `json:"algorithm"` // RSAPKCS1v15, RSAPSS, GPG or SigstoreV1Alpha1
	NormalisationAlgorithm string `json:"normalisationAlgorithm"`
	HashAlgorithm          string `json:"hashAlgorithm"`
	Digest                 string `json:"digest"` // hex digest of the normalised descriptor, as signed
	// Signer is who signed when the signature says so: the certificate
	// that chained to a configured root, or the OpenPGP key.
	Signer string `json:"signer,omitempty"`
}

// now is the clock certificate and OpenPGP validity is checked against.
var now = time.Now

// VerifySignature verifies the signature called name on d with key: an RSA
// public key, a certificate, *RootCAs, *OpenPGPKeys (see ParsePublicKey) or
// a *Trust pairing a key with root CAs. What the key must be follows from
// the signature:
//
//   - RSASSA-PSS (max or any salt length) and RSASSA-PKCS1-V1_5 in hex, or in
//     a PEM SIGNATURE block without a certificate: an RSA public key (or a
//     certificate holding one);
//   - a PEM SIGNATURE block followed by the signer's certificate: root CAs
//     (or a CA certificate) that the certificate chains to, for code
//     signing, valid now; the signature is checked with the certificate's
//     key. A configured non-CA certificate is refused as an anchor. A bare
//     public key instead pins the signer: the embedded certificate is then
//     not consulted;
//   - GPG: an OpenPGP public key.
//
// The signed digest is never trusted: it is recomputed from d with the
// signature's own normalisation and hash algorithms and must equal the one in
// the signature, and the signature is then checked over the recomputed bytes.
// Every failure wraps errdef.ErrSignature and is one line naming component,
// version and signature; a recomputed digest that differs also wraps
// errdef.ErrDigestMismatch.
//
// Component references are covered only through their digests; check those
// with VerifyReferences (Verifier does both).
func VerifySignature(d *ocm.Descriptor, name string, key crypto.PublicKey) (*Result, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: nil descriptor", errdef.ErrInvalidInput)
	}
	fail := signatureFailure(d, name)
	sig, err := findSignature(d, name, fail)
	if err != nil {
		return nil, err
	}
	spec := sig.Signature
	if err := checkSupported(spec, fail); err != nil {
		return nil, err
	}
	t, err := trustOf(key)
	if err != nil {
		return nil, fail("%w", err)
	}
	h, err := hashFor(sig.Digest.HashAlgorithm)
	if err != nil {
		return nil, fail("%w", err)
	}
	got, err := matchDigest(d, sig.Digest)
	if err != nil {
		return nil, fail("%w", err)
	}
	hashed, _ := hex.DecodeString(got)
	res := &Result{
		Component: d.Name, Version: d.Version, Signature: name, Algorithm: spec.Algorithm,
		NormalisationAlgorithm: sig.Digest.NormalisationAlgorithm, HashAlgorithm: sig.Digest.HashAlgorithm, Digest: got,
	}
	switch {
	case isSigstoreBundle(spec):
		err = verifyKeylessSignature(t, spec, hashed, res, fail)
	case spec.Algorithm == GPG:
		err = verifyGPGSignature(t, spec, hashed, res, fail)
	default:
		err = verifyRSASignature(t, spec, h, hashed, res, fail)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// failure makes the errors of one signature's verification: each wraps
// errdef.ErrSignature and names component, version and signature.
type failure func(format string, args ...any) error

func signatureFailure(d *ocm.Descriptor, name string) failure {
	return func(format string, args ...any) error {
		return fmt.Errorf("%w: component %s:%s: signature %s: "+format,
			append([]any{errdef.ErrSignature, d.Name, d.Version, errdef.Quote(name)}, args...)...)
	}
}

// findSignature is the first signature of d called name; the refusal lists
// the names present.
func findSignature(d *ocm.Descriptor, name string, fail failure) (*ocm.Signature, error) {
	var sig *ocm.Signature
	names := make([]string, 0, len(d.Signatures))
	for i := range d.Signatures {
		names = append(names, d.Signatures[i].Name)
		if d.Signatures[i].Name == name && sig == nil {
			sig = &d.Signatures[i]
		}
	}
	if sig == nil {
		present := "none"
		if len(names) > 0 {
			present = strings.Join(names, ", ")
		}
		return nil, fail("not found (signatures present: %s)", present)
	}
	return sig, nil
}

// checkSupported refuses an algorithm or media type this package does not
// verify, before any key or digest is looked at.
func checkSupported(spec ocm.SignatureSpec, fail failure) error {
	switch {
	case isSigstoreBundle(spec):
	case strings.HasPrefix(strings.ToLower(spec.Algorithm), "notation"):
		return fail("algorithm %s is not verified yet: no released OCM CLI writes Notation signatures; support is planned (supported: %s)", errdef.Quote(spec.Algorithm), supported)
	case spec.Algorithm == SigstoreV1Alpha1:
		return fail("media type %s is not supported for %s (supported: %s)", errdef.Quote(spec.MediaType), spec.Algorithm, supported)
	case spec.Algorithm == GPG:
		if spec.MediaType != MediaTypeGPG {
			return fail("media type %s is not supported for %s (supported: %s)", errdef.Quote(spec.MediaType), GPG, supported)
		}
	case spec.Algorithm == RSAPKCS1v15, spec.Algorithm == RSAPSS:
		switch spec.MediaType {
		case MediaTypeRSA, MediaTypeRSAPSS, MediaTypePEM:
		default:
			return fail("media type %s is not supported for %s (supported: %s)", errdef.Quote(spec.MediaType), spec.Algorithm, supported)
		}
	case isSigstore(spec):
		return fail("algorithm %s (media type %s) is an older OCM sigstore format (ocm v1 library) whose value is a Rekor log entry checked against Rekor online; re-sign with %s (OCM CLI v0.13 and later), which this plugin verifies offline (supported: %s)",
			errdef.Quote(spec.Algorithm), errdef.Quote(spec.MediaType), SigstoreV1Alpha1, supported)
	default:
		return fail("algorithm %s is not supported (supported: %s)", errdef.Quote(spec.Algorithm), supported)
	}
	return nil
}

// verifyKeylessSignature checks a Sigstore bundle over the digest bytes
// with the configured trusted root and identity, and records the signer.
func verifyKeylessSignature(t trust, spec ocm.SignatureSpec, hashed []byte, res *Result, fail failure) error {
	if t.keyless == nil {
		return fail("a %s signature needs a Sigstore trusted root and a certificate identity and OIDC issuer, but %s is configured", spec.Algorithm, t.desc)
	}
	signer, err := t.keyless.Verify(spec.Value, hashed)
	if err != nil {
		return fail("%w", err)
	}
	res.Signer = signer
	return nil
}

// verifyGPGSignature checks a detached OpenPGP signature over the digest
// with the configured OpenPGP keys and records the signer.
func verifyGPGSignature(t trust, spec ocm.SignatureSpec, hashed []byte, res *Result, fail failure) error {
	if t.pgp == nil {
		return fail("a %s signature needs an armored OpenPGP public key, but %s is configured", GPG, t.desc)
	}
	signer, err := verifyGPG(t.pgp, hashed, spec.Value, now())
	if err != nil {
		return fail("%s", err)
	}
	res.Signer = signer
	return nil
}

// verifyRSASignature checks an RSA signature over the digest with the key
// that applies: the configured one, or that of an embedded certificate
// chaining to the configured roots (then recorded as the signer).
func verifyRSASignature(t trust, spec ocm.SignatureSpec, h crypto.Hash, hashed []byte, res *Result, fail failure) error {
	sigBytes, pub, err := rsaSignature(t, spec, res, fail)
	if err != nil {
		return err
	}
	if pub == nil {
		if t.roots != nil {
			return fail("the %s signature carries no certificate, so root CAs cannot verify it: configure the signer's public key", spec.MediaType)
		}
		return fail("an %s signature needs an RSA public key, but %s is configured", spec.Algorithm, t.desc)
	}
	if spec.Algorithm == RSAPSS {
		// nil options: any salt length (rsa.PSSSaltLengthAuto); the OCM CLI
		// signs with the maximum.
		err = rsa.VerifyPSS(pub, h, hashed, sigBytes, nil)
	} else {
		err = rsa.VerifyPKCS1v15(pub, h, hashed, sigBytes)
	}
	if err != nil {
		return fail("%s signature does not verify with the %s key: %v", spec.Algorithm, keySource(res), err)
	}
	return nil
}

// rsaSignature decodes the signature value (hex, or a PEM SIGNATURE block)
// and picks the key to check it with; nil when none applies.
func rsaSignature(t trust, spec ocm.SignatureSpec, res *Result, fail failure) ([]byte, *rsa.PublicKey, error) {
	if spec.MediaType == MediaTypePEM {
		return pemRSASignature(t, spec, res, fail)
	}
	sigBytes, err := hex.DecodeString(strings.TrimSpace(spec.Value))
	if err != nil {
		return nil, nil, fail("signature value is not hex: %v", err)
	}
	return sigBytes, t.rsa, nil
}

// pemRSASignature reads a PEM SIGNATURE block. With the signer's
// certificate and configured roots, the chain is verified and the
// certificate's key checks the signature; a configured bare key pins the
// signer instead and the certificate is not consulted.
func pemRSASignature(t trust, spec ocm.SignatureSpec, res *Result, fail failure) ([]byte, *rsa.PublicKey, error) {
	ps, err := parsePEMSignature(spec.Value, spec.Algorithm)
	if err != nil {
		return nil, nil, fail("%s", err)
	}
	pub := t.rsa
	if len(ps.certs) == 0 {
		return ps.sig, pub, nil
	}
	switch {
	case t.roots != nil:
		if res.Signer, err = verifyChain(ps.certs, t.roots, now()); err != nil {
			return nil, nil, fail("%s", err)
		}
		if pub, err = rsaKey(ps.certs[0].PublicKey); err != nil {
			return nil, nil, fail("signing certificate: %s", err)
		}
	case t.cert != nil:
		// `ocm verify` uses a configured certificate as the anchor of
		// the embedded chain; a leaf is no anchor.
		return nil, nil, fail("the signature carries the signer's certificate, and the configured certificate %s is not a CA certificate that could anchor it: configure the root CA", errdef.Quote(t.cert.Subject.String()))
	}
	return ps.sig, pub, nil
}

func keySource(res *Result) string {
	if res.Signer != "" {
		return "signing certificate's"
	}
	return "configured"
}

// isSigstoreBundle: OCM's keyless signature, verified with a trusted root.
func isSigstoreBundle(s ocm.SignatureSpec) bool {
	return (s.Algorithm == SigstoreV1Alpha1 || s.Algorithm == SigstoreLegacy) && s.MediaType == MediaTypeSigstoreBundle
}

// isSigstore: the OCM sigstore signer writes algorithm "sigstore" (or
// "sigstore-v2") and a sigstore media type.
func isSigstore(s ocm.SignatureSpec) bool {
	return strings.HasPrefix(strings.ToLower(s.Algorithm), "sigstore") || strings.Contains(strings.ToLower(s.MediaType), "sigstore")
}

// matchDigest recomputes the digest of d that want claims and returns it when
// it matches, else an error wrapping errdef.ErrDigestMismatch.
func matchDigest(d *ocm.Descriptor, want ocm.Digest) (string, error) {
	got, err := digestsFor(d, want.NormalisationAlgorithm, want.HashAlgorithm, true)
	if err != nil {
		return "", err
	}
	for _, g := range got {
		if strings.EqualFold(g, want.Value) {
			return g, nil
		}
	}
	return "", fmt.Errorf("the %s/%s digest of %s:%s is %s, the signed one is %s: %w",
		want.NormalisationAlgorithm, want.HashAlgorithm, d.Name, d.Version, got[0], errdef.Quote(want.Value), errdef.ErrDigestMismatch)
}

// LookupFunc returns the descriptor of a component version, for following
// component references. A missing version should wrap errdef.ErrNotFound.
type LookupFunc func(ctx context.Context, component, version string) (*ocm.Descriptor, error)

// RepositoryLookup looks component versions up in r.
func RepositoryLookup(r ocm.Repository) LookupFunc {
	return func(ctx context.Context, component, version string) (*ocm.Descriptor, error) {
		cv, err := r.LookupComponentVersion(ctx, component, version)
		if err != nil {
			return nil, err
		}
		return cv.Descriptor(), nil
	}
}

// DefaultMaxDepth bounds how deep VerifyReferences follows references.
// Real component trees are a handful of levels; the bound turns a hostile or
// broken repository into an error instead of unbounded work.
const DefaultMaxDepth = 16

// ReferenceResult describes one component reference that was followed.
type ReferenceResult struct {
	Parent                 string `json:"parent"`    // component:version holding the reference
	Name                   string `json:"name"`      // reference name
	Component              string `json:"component"` // referenced component version
	Version                string `json:"version"`
	NormalisationAlgorithm string `json:"normalisationAlgorithm,omitempty"`
	HashAlgorithm          string `json:"hashAlgorithm,omitempty"`
	// Digest is the verified hex digest; "" when the reference carries none,
	// in which case nothing about the referenced version was verified.
	Digest string `json:"digest,omitempty"`
}

// ReferenceOption configures VerifyReferences.
type ReferenceOption func(*refOptions)

type refOptions struct {
	requireDigests bool
	maxDepth       int
}

// WithRequireDigests makes a reference without a digest an error. Without it
// such a reference is reported (with an empty Digest) and not followed: a
// signature says nothing about what it points to.
func WithRequireDigests() ReferenceOption { return func(o *refOptions) { o.requireDigests = true } }

// WithMaxDepth sets the maximum reference depth; n <= 0 means DefaultMaxDepth.
func WithMaxDepth(n int) ReferenceOption { return func(o *refOptions) { o.maxDepth = n } }

// VerifyReferences checks, recursively, that every component reference of d
// that carries a digest points to a descriptor with exactly that digest
// (computed with the digest's own normalisation and hash algorithms). Each
// component version is expanded once; a reference back into the current path
// is a cycle and an error, as is going deeper than the maximum depth.
// Failures wrap errdef.ErrSignature; a differing digest also wraps
// errdef.ErrDigestMismatch.
func VerifyReferences(ctx context.Context, d *ocm.Descriptor, lookup LookupFunc, opts ...ReferenceOption) ([]ReferenceResult, error) {
	o := refOptions{maxDepth: DefaultMaxDepth}
	for _, opt := range opts {
		opt(&o)
	}
	if d == nil {
		return nil, fmt.Errorf("%w: nil descriptor", errdef.ErrInvalidInput)
	}
	if o.maxDepth <= 0 {
		o.maxDepth = DefaultMaxDepth
	}
	w := &refWalker{lookup: lookup, o: o, done: map[string]bool{}, onPath: map[string]bool{}}
	if err := w.walk(ctx, d, 0); err != nil {
		return w.results, err
	}
	return w.results, nil
}

type refWalker struct {
	lookup  LookupFunc
	o       refOptions
	done    map[string]bool // expanded component versions
	onPath  map[string]bool // component versions on the current path
	results []ReferenceResult
}

func (w *refWalker) walk(ctx context.Context, d *ocm.Descriptor, depth int) error {
	self := d.Name + ":" + d.Version
	if w.done[self] {
		return nil
	}
	w.onPath[self] = true
	defer delete(w.onPath, self)
	for _, ref := range d.References {
		if err := ctx.Err(); err != nil {
			return err
		}
		target := ref.ComponentName + ":" + ref.Version
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%w: component %s: reference %s to %s: "+format,
				append([]any{errdef.ErrSignature, self, errdef.Quote(ref.Name), target}, args...)...)
		}
		res := ReferenceResult{Parent: self, Name: ref.Name, Component: ref.ComponentName, Version: ref.Version}
		if ref.Digest == nil {
			if w.o.requireDigests {
				return fail("has no digest, and digests are required")
			}
			w.results = append(w.results, res)
			continue
		}
		if w.onPath[target] {
			return fail("reference cycle: %w", errdef.ErrInvalidDescriptor)
		}
		if depth+1 > w.o.maxDepth {
			return fail("deeper than %d levels: %w", w.o.maxDepth, errdef.ErrLimitExceeded)
		}
		if w.lookup == nil {
			return fail("no lookup to resolve it: %w", errdef.ErrInvalidInput)
		}
		rd, err := w.lookup(ctx, ref.ComponentName, ref.Version)
		if err != nil {
			return fail("%w", err)
		}
		if rd == nil || rd.Name != ref.ComponentName || rd.Version != ref.Version {
			return fail("lookup returned a different component version")
		}
		got, err := matchDigest(rd, *ref.Digest)
		if err != nil {
			return fail("%w", err)
		}
		res.NormalisationAlgorithm, res.HashAlgorithm, res.Digest = ref.Digest.NormalisationAlgorithm, ref.Digest.HashAlgorithm, got
		w.results = append(w.results, res)
		if err := w.walk(ctx, rd, depth+1); err != nil {
			return err
		}
	}
	w.done[self] = true
	return nil
}

// Verifier verifies a component version: the named signatures and,
// recursively, the digests of its component references.
type Verifier struct {
	// Keys maps a signature name to the key that must verify it (anything
	// VerifySignature accepts: an RSA key, a certificate, *RootCAs,
	// *OpenPGPKeys or *Trust). Every named signature must be present and
	// valid; other signatures are ignored.
	Keys map[string]crypto.PublicKey
	// Lookup resolves component references. It is required as soon as a
	// reference has a digest to check (a signature covers references only by
	// their digests, so they must be followed to mean anything).
	Lookup LookupFunc
	// RequireDigests refuses references without a digest (WithRequireDigests).
	RequireDigests bool
	// MaxDepth bounds reference recursion; 0 means DefaultMaxDepth.
	MaxDepth int
}

// Report is what Verifier.Verify checked.
type Report struct {
	Signatures []Result
	References []ReferenceResult
}

// Verify checks every signature named in v.Keys (in name order), then the
// component references. An empty Keys is an error: verifying nothing must not
// look like success.
func (v *Verifier) Verify(ctx context.Context, d *ocm.Descriptor) (*Report, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: nil descriptor", errdef.ErrInvalidInput)
	}
	if len(v.Keys) == 0 {
		return nil, fmt.Errorf("%w: no signature keys configured to verify %s:%s with", errdef.ErrInvalidInput, d.Name, d.Version)
	}
	names := make([]string, 0, len(v.Keys))
	for n := range v.Keys {
		names = append(names, n)
	}
	sort.Strings(names)
	rep := &Report{}
	for _, n := range names {
		r, err := VerifySignature(d, n, v.Keys[n])
		if err != nil {
			return rep, err
		}
		rep.Signatures = append(rep.Signatures, *r)
	}
	if len(d.References) == 0 {
		return rep, nil
	}
	opts := []ReferenceOption{WithMaxDepth(v.MaxDepth)}
	if v.RequireDigests {
		opts = append(opts, WithRequireDigests())
	}
	refs, err := VerifyReferences(ctx, d, v.Lookup, opts...)
	rep.References = refs
	if err != nil {
		return rep, err
	}
	return rep, nil
}

// Resource digest normalisation algorithms and the markers of resources
// whose content is not part of the signature.
const (
	GenericBlobDigestV1  = "genericBlobDigest/v1"
	OCIArtifactDigestV1  = "ociArtifactDigest/v1"
	ExcludeFromSignature = "EXCLUDE-FROM-SIGNATURE"
	NoDigest             = "NO-DIGEST"
)

// VerifyResourceDigest checks a digest the caller computed from a resource's
// content against the digest the (signed) descriptor declares for it.
// algorithm names what the caller computed: GenericBlobDigestV1 (hash of the
// blob bytes) or OCIArtifactDigestV1 (the OCI manifest digest); blobDigestHex
// is hex, optionally prefixed "sha256:"/"sha512:".
//
// checked is false, with no error, when the descriptor declares nothing to
// check: no digest, an EXCLUDE-FROM-SIGNATURE/NO-DIGEST marker, or access
// type none. Otherwise a differing digest wraps errdef.ErrDigestMismatch.
// Check checked: content that was not checked is not covered by a signature.
func VerifyResourceDigest(r *ocm.Resource, blobDigestHex, algorithm string) (checked bool, err error) {
	if r == nil {
		return false, fmt.Errorf("%w: nil resource", errdef.ErrInvalidInput)
	}
	dg := r.Digest
	if dg == nil || r.Access.Kind() == ocm.AccessNone {
		return false, nil
	}
	for _, f := range []string{dg.HashAlgorithm, dg.NormalisationAlgorithm, dg.Value} {
		if f == ExcludeFromSignature || f == NoDigest {
			return false, nil
		}
	}
	id := r.Identity().String()
	switch dg.NormalisationAlgorithm {
	case GenericBlobDigestV1, OCIArtifactDigestV1:
	default:
		return false, fmt.Errorf("%w: resource %s: digest normalisation %s is not supported (supported: %s, %s)",
			errdef.ErrSignature, id, errdef.Quote(dg.NormalisationAlgorithm), GenericBlobDigestV1, OCIArtifactDigestV1)
	}
	if algorithm != dg.NormalisationAlgorithm {
		return false, fmt.Errorf("%w: resource %s: its digest is %s, but a %s digest was computed",
			errdef.ErrInvalidInput, id, dg.NormalisationAlgorithm, algorithm)
	}
	h, err := hashFor(dg.HashAlgorithm)
	if err != nil {
		return false, fmt.Errorf("resource %s: %w", id, err)
	}
	got := blobDigestHex
	if alg, rest, ok := strings.Cut(got, ":"); ok {
		want := map[crypto.Hash]string{crypto.SHA256: "sha256", crypto.SHA512: "sha512"}[h]
		if alg != want {
			return false, fmt.Errorf("%w: resource %s: computed digest %s is not %s (the descriptor says %s)",
				errdef.ErrInvalidInput, id, errdef.Quote(blobDigestHex), want, dg.HashAlgorithm)
		}
		got = rest
	}
	if b, err := hex.DecodeString(got); err != nil || len(b) != h.Size() {
		return false, fmt.Errorf("%w: resource %s: computed digest %s is not a %s hex digest",
			errdef.ErrInvalidInput, id, errdef.Quote(blobDigestHex), dg.HashAlgorithm)
	}
	if !strings.EqualFold(got, dg.Value) {
		return false, fmt.Errorf("resource %s: content %s digest %s, the descriptor declares %s: %w",
			id, dg.NormalisationAlgorithm, strings.ToLower(got), dg.Value, errdef.ErrDigestMismatch)
	}
	return true, nil
}
