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
//
// # OCM level by hand, OCI level through oras-go
//
// What this package decides is OCM: which component versions (references),
// which resources move and where (CopyResources, CopyImages), the
// rewritten descriptor, access and repository contexts, the signatures'
// digests, keeping a v0.13+ index or a plain manifest, the tag and name
// checks. Every OCI graph it then moves — a version's manifest or index
// with its config, layers and index entries; a chart or image copied as an
// artifact of its own; an image carried into a CTF — is copied by
// oras.CopyGraph (oras.Copy when the root is tagged): children before
// parents, concurrently (copyConcurrency), skipping what the target holds
// (which is what makes a run resumable). Both sides are oras.Targets: a
// registry repository is the plugin's registry client's remote.Repository
// (address policy, credentials, plain-HTTP rule, gate; registryRepo), a CTF
// repository is ctf.Storage (package ctf writes the format). The hooks
// carry this package's rules: FindSuccessors (graph) bounds and verifies
// every manifest (ocimapping.MaxManifestSize, maxGraphDepth) and follows
// manifests, config and layers only (no subject); the source (source)
// verifies every node as it is read and keeps the first failure, so that
// an error names the source's corrupt blob, not the target's reaction;
// PreCopy returning oras.SkipNode is the plan and the dry run (addJob: the
// graph is walked against the target before anything is written, so that
// nothing is written when any part fails to plan); PostCopy and the
// source's reads are the progress.
//
// A rewritten version is not a manifest rewritten while it is copied: its
// new descriptor layer, config, manifest and index are made first (they
// must be, to check the signatures before anything is written) and served
// over the source (overlay), so that CopyGraph copies the new graph like
// any other. What stays by hand and why: an artifact set (a chart stored as
// a local blob) is unpacked to a temporary file before it is copied (it is
// one blob of the source, not a graph); an image carried into a CTF is
// copied by CopyGraph into a spool directory and then written as one
// artifact set blob, in the order its manifests list the blobs (CopyGraph's
// order is concurrent, and the same image must make the same blob).
package transfer
