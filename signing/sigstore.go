package signing

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Keyless (Sigstore) signatures as the OCM CLI v0.13+ writes them
// (bindings/go/sigstore): `cosign sign-blob` over the raw bytes of the
// descriptor digest, the Sigstore protobuf bundle as the base64 value.
const (
	// SigstoreV1Alpha1 is the algorithm OCM writes; SigstoreLegacy its
	// old bare name, accepted on verify when the value is a bundle.
	SigstoreV1Alpha1 = "Sigstore/v1alpha1"
	SigstoreLegacy   = "sigstore"
	// MediaTypeSigstoreBundle: the value is a base64 Sigstore bundle (JSON).
	MediaTypeSigstoreBundle = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// NotationV1Alpha1 is OCM's planned Notation handler: no released OCM
	// CLI writes it, so it is refused by name.
	NotationV1Alpha1 = "Notation/v1alpha1"
)

// Bounds of keyless trust material, far above real sizes (a public-good
// trusted_root.json is about 10 KiB, a bundle about 5 KiB).
const (
	MaxTrustedRootSize = 1 << 20
	MaxBundleSize      = 256 << 10
)

// TrustedRoot is a Sigstore trusted root (the trusted_root.json of
// `cosign --trusted-root`): the Fulcio CAs, Rekor logs, timestamp
// authorities and certificate transparency logs a keyless signature may
// chain to. Nothing is fetched: the operator mounts it (public-good or
// private infrastructure).
type TrustedRoot struct {
	material                 *root.TrustedRoot
	cas, tlogs, tsas, ctlogs int
}

// ParseTrustedRoot parses a trusted_root.json. A root without a
// certificate authority verifies no keyless signature and is refused.
func ParseTrustedRoot(b []byte) (*TrustedRoot, error) {
	if len(b) > MaxTrustedRootSize {
		return nil, fmt.Errorf("%w: trusted root is %d bytes, more than %d", errdef.ErrLimitExceeded, len(b), MaxTrustedRootSize)
	}
	m, err := root.NewTrustedRootFromJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%w: trusted root: %s", errdef.ErrInvalidInput, shorten(err.Error()))
	}
	t := &TrustedRoot{material: m, cas: len(m.FulcioCertificateAuthorities()), tlogs: len(m.RekorLogs()),
		tsas: len(m.TimestampingAuthorities()), ctlogs: len(m.CTLogs())}
	if t.cas == 0 {
		return nil, fmt.Errorf("%w: trusted root lists no certificate authority (certificateAuthorities): it cannot verify a keyless signature", errdef.ErrInvalidInput)
	}
	return t, nil
}

// String says what the root holds, for reports.
func (t *TrustedRoot) String() string {
	return fmt.Sprintf("%d certificate authorities, %d transparency logs, %d timestamp authorities, %d CT logs", t.cas, t.tlogs, t.tsas, t.ctlogs)
}

// Identity is who must have signed, as cosign's --certificate-identity[-regexp]
// and --certificate-oidc-issuer[-regexp] name it: the certificate's subject
// alternative name (an e-mail address or a URI such as a CI workflow) and the
// OIDC issuer Fulcio recorded. Each needs an exact value or a regular
// expression (both must match when both are set). A regular expression must
// match the whole value: it is anchored, so "https://github.com/org/" does
// not accept "https://github.com/org/other-repo/…" by prefix.
type Identity struct {
	Subject       string `json:"certificateIdentity,omitempty"`
	SubjectRegexp string `json:"certificateIdentityRegexp,omitempty"`
	Issuer        string `json:"certificateOIDCIssuer,omitempty"`
	IssuerRegexp  string `json:"certificateOIDCIssuerRegexp,omitempty"`
}

// String is the identity as a policy names it.
func (id Identity) String() string {
	var parts []string
	for _, p := range [][2]string{{"identity", id.Subject}, {"identity regexp", id.SubjectRegexp}, {"issuer", id.Issuer}, {"issuer regexp", id.IssuerRegexp}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+errdef.Quote(p[1]))
		}
	}
	return strings.Join(parts, ", ")
}

// Keyless verifies Sigstore signatures against a trusted root and an
// identity: the certificate must chain to a Fulcio CA of the root at the
// time a transparency log or timestamp authority of the root observed the
// signature, carry the identity, and (when the root lists CT logs) an SCT.
//
// By default the signature must be in a transparency log of the root (an
// inclusion proof and a signed entry timestamp, whose time validates the
// short-lived certificate; a Rekor v2 entry has no time, so a signed
// timestamp is required instead), as `cosign verify-blob` does.
// PrivateInfrastructure (OCM's name for cosign's --insecure-ignore-tlog)
// drops the log and requires an RFC 3161 timestamp from a timestamp
// authority of the root instead.
type Keyless struct {
	root     *TrustedRoot
	id       Identity
	private  bool
	identity verify.CertificateIdentity
}

// NewKeyless checks that root and id can verify anything: both halves of the
// identity, regular expressions that compile, a root with the logs or
// timestamp authorities the mode needs.
func NewKeyless(tr *TrustedRoot, id Identity, privateInfrastructure bool) (*Keyless, error) {
	if tr == nil {
		return nil, fmt.Errorf("%w: keyless verification needs a trusted root", errdef.ErrInvalidInput)
	}
	subjectRE, issuerRE, err := id.anchored()
	if err != nil {
		return nil, err
	}
	switch {
	case !privateInfrastructure && tr.tlogs == 0:
		return nil, fmt.Errorf("%w: trusted root lists no transparency log (tlogs), so no log inclusion can be verified: give the root of the infrastructure that signed, or set privateInfrastructure if it has no log (a signed timestamp is then required)", errdef.ErrInvalidInput)
	case privateInfrastructure && tr.tsas == 0:
		return nil, fmt.Errorf("%w: privateInfrastructure needs a timestamp authority (timestampAuthorities) in the trusted root to establish when the short-lived certificate signed", errdef.ErrInvalidInput)
	}
	san, err := verify.NewSANMatcher(id.Subject, subjectRE)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate identity: %v", errdef.ErrInvalidInput, err)
	}
	iss, err := verify.NewIssuerMatcher(id.Issuer, issuerRE)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate OIDC issuer: %v", errdef.ErrInvalidInput, err)
	}
	ci, err := verify.NewCertificateIdentity(san, iss, certificate.Extensions{})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errdef.ErrInvalidInput, err)
	}
	return &Keyless{root: tr, id: id, private: privateInfrastructure, identity: ci}, nil
}

// Identity is the identity k requires.
func (k *Keyless) Identity() Identity { return k.id }

// anchored makes re match whole values only; "" stays "".
func anchored(what, re string) (string, error) {
	if re == "" {
		return "", nil
	}
	if _, err := regexp.Compile(re); err != nil {
		return "", fmt.Errorf("%w: %s %s: %s", errdef.ErrInvalidInput, what, errdef.Quote(re), shorten(err.Error()))
	}
	return `^(?:` + re + `)$`, nil
}

// Verify checks a base64 Sigstore bundle (an OCM signature value) over
// artifact, the raw bytes of the digest OCM signed, and returns who signed
// and when it was observed.
func (k *Keyless) Verify(value string, artifact []byte) (string, error) {
	b, err := parseBundle(value)
	if err != nil {
		return "", err
	}
	return k.verifyEntity(b, verify.WithArtifact(bytes.NewReader(artifact)))
}

// verifyEntity verifies a bundle made with a certificate against the root,
// the artifact policy and the identity.
func (k *Keyless) verifyEntity(b *bundle.Bundle, artifact verify.ArtifactPolicyOption) (string, error) {
	vc, err := b.VerificationContent()
	if err != nil {
		return "", fmt.Errorf("bundle verification material: %s", shorten(err.Error()))
	}
	leaf := vc.Certificate()
	if leaf == nil {
		return "", errors.New("the bundle was signed with a key, not keyless with a certificate: verify it with that key")
	}
	signer, err := certificate.SummarizeCertificate(leaf)
	if err != nil {
		return "", fmt.Errorf("signing certificate: %s", shorten(err.Error()))
	}
	opts, err := k.verifierOptions(b)
	if err != nil {
		return "", err
	}
	v, err := verify.NewVerifier(k.root.material, opts...)
	if err != nil {
		return "", fmt.Errorf("%w: %s", errdef.ErrInvalidInput, shorten(err.Error()))
	}
	res, err := v.Verify(b, verify.NewPolicy(artifact, verify.WithCertificateIdentity(k.identity)))
	if err != nil {
		var mismatch *verify.ErrNoMatchingCertificateIdentity
		if errors.As(err, &mismatch) {
			return "", fmt.Errorf("signed by %s (OIDC issuer %s), the policy requires %s", errdef.Quote(signer.SubjectAlternativeName), errdef.Quote(signer.Issuer), k.id)
		}
		return "", fmt.Errorf("keyless signature of %s (OIDC issuer %s) does not verify against the trusted root: %s", errdef.Quote(signer.SubjectAlternativeName), errdef.Quote(signer.Issuer), shorten(err.Error()))
	}
	return fmt.Sprintf("%s (OIDC issuer %s), %s", errdef.Field(signer.SubjectAlternativeName), errdef.Field(signer.Issuer), observed(res.VerifiedTimestamps)), nil
}

// verifierOptions are cosign's (pkg/cosign verificationOptions) for a
// certificate: SCTs when the root has CT logs, the log and its integrated
// time, or signed timestamps where there is no (timed) log entry.
func (k *Keyless) verifierOptions(b *bundle.Bundle) ([]verify.VerifierOption, error) {
	var opts []verify.VerifierOption
	if k.root.ctlogs > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	if k.private {
		return append(opts, verify.WithSignedTimestamps(1)), nil
	}
	opts = append(opts, verify.WithTransparencyLog(1))
	entries, err := b.TlogEntries()
	if err != nil {
		return nil, fmt.Errorf("bundle: transparency log entries: %s", shorten(err.Error()))
	}
	if len(entries) == 0 {
		return nil, errors.New("bundle has no transparency log entry, and the policy requires one (set privateInfrastructure for a signature made without a log)")
	}
	timed := false
	for _, e := range entries {
		timed = timed || !e.IntegratedTime().IsZero()
	}
	if !timed {
		// Rekor v2 entries carry no time: cosign then requires a
		// signed timestamp.
		return append(opts, verify.WithSignedTimestamps(1)), nil
	}
	return append(opts, verify.WithIntegratedTimestamps(1)), nil
}

// parseBundle decodes an OCM sigstore signature value: a base64 bundle of
// a message signature.
func parseBundle(value string) (*bundle.Bundle, error) {
	value = strings.TrimSpace(value)
	if len(value) > base64.StdEncoding.EncodedLen(MaxBundleSize) {
		return nil, fmt.Errorf("%w: signature value is %d bytes, more than a %d-byte bundle", errdef.ErrLimitExceeded, len(value), MaxBundleSize)
	}
	raw, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return nil, fmt.Errorf("signature value is not base64: %s", shorten(err.Error()))
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("signature value is not a Sigstore bundle: %s", shorten(err.Error()))
	}
	if b.GetMessageSignature() == nil {
		return nil, errors.New("the bundle holds a DSSE envelope, not the message signature over the digest that OCM makes")
	}
	return &b, nil
}

// observed says which verified timestamps establish the signing time.
func observed(ts []verify.TimestampVerificationResult) string {
	var parts []string
	for _, t := range ts {
		what := "logged"
		if t.Type != "Tlog" {
			what = "timestamped"
		}
		p := what + " " + t.Timestamp.UTC().Format(time.RFC3339)
		if t.URI != "" {
			p += " by " + t.URI
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "no observer timestamp"
	}
	return strings.Join(parts, ", ")
}

// shorten makes a library's error one bounded line: they may quote
// hostile input at length.
func shorten(s string) string {
	return errdef.CutMessage(oneLine(s))
}

// Check refuses an identity that cannot verify anything or would accept
// anyone: both halves are required, regular expressions must compile.
func (id Identity) Check() error {
	_, _, err := id.anchored()
	return err
}

// anchored checks id as Check says and returns its regular expressions
// anchored ("" for none).
func (id Identity) anchored() (subjectRE, issuerRE string, err error) {
	if (id.Subject == "" && id.SubjectRegexp == "") || (id.Issuer == "" && id.IssuerRegexp == "") {
		return "", "", fmt.Errorf("%w: keyless verification needs a certificate identity (or identity regexp) and an OIDC issuer (or issuer regexp): without both, anyone with an account at any issuer could sign", errdef.ErrInvalidInput)
	}
	if subjectRE, err = anchored("certificate identity regexp", id.SubjectRegexp); err != nil {
		return "", "", err
	}
	issuerRE, err = anchored("certificate OIDC issuer regexp", id.IssuerRegexp)
	return subjectRE, issuerRE, err
}
