// Package signing verifies OCM component versions: it recomputes the digest of
// a component descriptor exactly as the OCM CLI computes it, checks RSA
// signatures over that digest, follows component references to check their
// digests, and checks resource content against the digests a descriptor
// declares.
//
// Nothing a descriptor claims about itself is trusted: the digest in a
// signature is recomputed from the descriptor bytes (Descriptor.Raw) before
// the signature is checked, reference digests are recomputed from the
// referenced descriptors, and resource digests from the fetched content.
// Trust comes only from the keys the caller configures.
//
// Normalisation: jsonNormalisation/v3 (the CLI default) and its byte-identical
// successor name jsonNormalisation/v4alpha1, plus the legacy
// jsonNormalisation/v2 and v1 for old signatures. See Normalise for how the
// descriptor is reduced and jcs.go for the RFC 8785 canonicaliser and its
// limits (numbers go through IEEE doubles, as in OCM).
//
// Signatures (what the OCM CLI, old and new, writes):
//
//   - RSASSA-PKCS1-V1_5 and RSASSA-PSS (any salt length; the new CLI uses the
//     maximum) over the digest bytes as a precomputed SHA-256/SHA-512 hash, the
//     value in hex (application/vnd.ocm.signature.rsa, …rsa.pss), checked with
//     a configured RSA key or a certificate holding one;
//   - the same in a PEM SIGNATURE block (application/x-pem-file). When the
//     block is followed by the signer's certificate (and intermediates), the
//     chain is validated against configured root CAs (chain.go): codeSigning
//     usage, valid now, a leaf is never an anchor; the signature is then
//     checked with the leaf's key. A bare configured public key pins the
//     signer instead;
//   - GPG (application/vnd.ocm.signature.gpg): an armored detached OpenPGP
//     signature over the digest bytes, checked with an armored OpenPGP public
//     key (github.com/ProtonMail/go-crypto).
//
// Sigstore signatures are refused with the reason: keyless verification needs
// Fulcio and Rekor online. Key files are told apart by content
// (ParsePublicKey).
//
// Errors wrap the sentinels of package errdef: errdef.ErrSignature for every
// verification failure, errdef.ErrDigestMismatch when a recomputed digest
// differs, errdef.ErrInvalidInput/ErrInvalidDescriptor for malformed input.
package signing
