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
// Signatures: RSASSA-PKCS1-V1_5 and RSASSA-PSS over the digest bytes as a
// precomputed SHA-256/SHA-512 hash, the value in hex or as a PEM SIGNATURE
// block. Sigstore signatures are out of scope and reported as unsupported.
// Certificates are accepted as key containers, but no PKI chain is validated.
//
// Errors wrap the sentinels of package errdef: errdef.ErrSignature for every
// verification failure, errdef.ErrDigestMismatch when a recomputed digest
// differs, errdef.ErrInvalidInput/ErrInvalidDescriptor for malformed input.
package signing
