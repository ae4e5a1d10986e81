// Package artifactset is the OCM artifact set: an OCI artifact (a Helm
// chart, an image) serialised as one local blob, a (gzipped) tar with
// index.json (the main manifest named by software.ocm/main), oci-layout and
// blobs/<alg>.<hex>, as the OCM CLI writes it. Read reads one held in
// memory, Open one unpacked to a file, Write writes one; IsArtifactSet is
// the one media-type predicate. Every blob read is verified.
package artifactset
