// Package verify checks a component version the way `ocm verify
// componentversions` does, offline: the required signatures (package
// signing), the digests of component references, recursively, and the
// digest of every resource whose content can be hashed without leaving the
// repository:
//
// Design notes: docs/design.md, section internal/source/verify.
package verify
