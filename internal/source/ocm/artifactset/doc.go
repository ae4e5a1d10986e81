// Package artifactset reads an OCM artifact set: an OCI artifact (for example a
// Helm chart) serialised as one blob, media type
// application/vnd.oci.image.manifest.v1+tar+gzip (or +tar). The blob is a
// (gzipped) tar with index.json (main manifest named by the software.ocm/main
// annotation), oci-layout and blobs/sha256.<hex> (also accepted: blobs/sha256/<hex>
// and the older artifact-descriptor.json). Every blob is verified.
package artifactset
