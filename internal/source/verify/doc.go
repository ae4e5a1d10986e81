// Package verify checks a component version the way `ocm verify
// componentversions` does, offline: the required signatures (package
// signing), the digests of component references, recursively, and the
// digest of every resource whose content can be hashed without leaving the
// repository:
//
//   - a local blob (localBlob, localFilesystemBlob) is re-read and hashed by
//     its digest's normalisation: genericBlobDigest/v1 is the hash of the blob
//     bytes (SHA-256 or SHA-512, as the digest says), ociArtifactDigest/v1 the
//     digest of the main manifest of the OCI artifact set the blob holds (and
//     every manifest, config and layer blob of the set is hashed too);
//   - a remote access that pins a digest (imageReference or reference
//     "host/repo[:tag]@sha256:…") is compared with the declared
//     ociArtifactDigest/v1 digest: the access is not part of the signed
//     normalised descriptor, so a redirected reference keeps a valid
//     signature, and only this comparison finds it.
//
// Every resource gets a Resource result: Checked, Mismatch or NotCheckable
// (with the reason, e.g. the content lives in a registry this offline check
// does not read). Resources of referenced component versions are checked
// too, for every reference that carries a digest (what a signature covers).
package verify
