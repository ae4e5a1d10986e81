// Package access turns a resource's access specification into verified content:
// local blobs come from the component version's own store, remote artifacts
// (ociArtifact, relativeOciReference, helm) from an ArtifactSource that the
// caller supplies (none in a fully offline render).
//
// Resolver.Read returns content checked against the digest that names it and
// against the resource digest in the descriptor before any caller unpacks it.
// Resolver.ReadTree, for directory resources, unpacks while it reads instead,
// so that a large tree is never held twice (blob and files); it hashes the
// stream on the way, reads it to the end, and returns the tree only when the
// same digests match, discarding it otherwise.
package access
