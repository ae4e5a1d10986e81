package ocm

import (
	"context"
	"io"
)

// Repository is a source of component versions. Implementations live in sibling
// packages (ctf for CTF and component archives, oci for registries).
type Repository interface {
	// LookupComponentVersion returns one version of a component. A missing
	// component or version is an error wrapping errdef.ErrNotFound.
	LookupComponentVersion(ctx context.Context, component, version string) (ComponentVersion, error)
	// ListVersions lists the versions of a component (tags mapped back to
	// versions; tags that are not versions are skipped), in no particular order.
	ListVersions(ctx context.Context, component string) ([]string, error)
	// Close releases files and connections.
	Close() error
}

// ComponentVersion is a resolved component version of a Repository.
type ComponentVersion interface {
	Descriptor() *Descriptor
	// DescriptorDigest is the digest of what names the version in its store
	// (the OCI manifest digest), "" if the store has none.
	DescriptorDigest() string
	// Repository is the repository the version came from; relative access types
	// (relativeOciReference, references to other components) resolve against it.
	Repository() Repository
	// OpenLocalBlob opens a blob stored with the component version, named by the
	// access's localReference (or fileName). The reader fails on Read or Close
	// when the bytes do not match the digest that names them.
	OpenLocalBlob(ctx context.Context, acc Access) (Blob, error)
}

// Blob is readable content with its declared size and media type.
type Blob interface {
	io.ReadCloser
	// Size in bytes, -1 if unknown.
	Size() int64
	// MediaType as declared by the store or the access, may be "".
	MediaType() string
	// Digest that names the content ("sha256:…"), "" if none.
	Digest() string
}

// LocalArtifactOpener is implemented by component versions whose store keeps
// OCI artifacts as local blobs of their own: the OCM CLI v0.13+ stores a Helm
// chart as a manifest inside the version's image index (access mediaType
// application/vnd.oci.image.manifest.v1+json, localReference = the manifest
// digest). OpenLocalBlob of such a blob yields the manifest bytes, what its
// genericBlobDigest/v1 hashes; rendering needs the content layer instead.
type LocalArtifactOpener interface {
	// OpenLocalArtifact opens the content layer (the Helm chart layer, else
	// the only layer) of the OCI artifact a localBlob names, verified as it
	// is read; manifestDigest is the artifact's manifest digest.
	OpenLocalArtifact(ctx context.Context, acc Access) (b Blob, manifestDigest string, err error)
}
