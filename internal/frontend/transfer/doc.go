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
// Signatures stay valid: the rewrites touch only access and
// repositoryContexts, which every jsonNormalisation leaves out of the
// digest, and the transfer recomputes each signature's digest of the
// rewritten descriptor before it writes anything.
//
// A run is idempotent and resumable: a version whose descriptor the target
// already holds (same normalised digest) is skipped, blobs the target holds
// are not copied again, and the version's manifest is pushed last, so a
// version that is present is complete; an interrupted run leaves the blobs
// it finished (a tgz target its staging directory) and the next run copies
// the rest. Every blob is streamed — verified against its digest as it is
// read, and by the target as it is stored (a CTF keeps a blob file only
// after its digest matched) — so memory stays bounded whatever the size.
// Nothing is overwritten: a tag that names other content, or a version
// with another descriptor, is refused with errdef.ErrConflict.
package transfer
