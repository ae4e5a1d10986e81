// Package access turns a resource's access specification into verified content:
// local blobs come from the component version's own store, remote artifacts
// (ociArtifact, relativeOciReference, helm) from an ArtifactSource that the
// caller supplies (none in a fully offline render). Content is checked against
// the digest that names it and against the resource digest in the descriptor
// before any caller unpacks it.
package access
