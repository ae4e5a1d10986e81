// Package transfer copies OCM component versions between repositories — a
// CTF (directory, tar or tgz) or an OCI registry, in every direction — and
// writes what the OCM CLI's `ocm transfer` writes: descriptors under OCM's
// naming (<prefix>/component-descriptors/<name>, tag = version with "+" as
// ".build-"), local blobs as layers of the descriptor manifest, and, with
// CopyResources, local blobs that are OCI artifacts (Helm charts stored as
// artifact sets) uploaded as artifacts of their own (repository
// <prefix>/<referenceName>, its tag) with their access rewritten to
// ociArtifact "<scheme>://<host>/<prefix>/<name>:<tag>@<digest>". CopyImages
// copies the artifacts ociArtifact accesses name (images) by digest. A
// registry target is appended to repositoryContexts; a CTF is an
// intermediate repository and is not. A version the OCM CLI v0.13+ wrote
// (its tag names an image index whose other entries are charts stored as
// OCI manifests) stays an index with those entries, unless CopyResources
// moves a chart out into an artifact of its own.
//
// Design notes: docs/design.md, section internal/frontend/transfer.
package transfer
