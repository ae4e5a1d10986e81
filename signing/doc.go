// Package signing verifies OCM component versions: it recomputes the digest of
// a component descriptor exactly as the OCM CLI computes it, checks RSA
// signatures over that digest, follows component references to check their
// digests, and checks resource content against the digests a descriptor
// declares.
//
// Design notes: docs/design.md, section signing.
package signing
