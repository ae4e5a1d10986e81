// Package oci reads OCM component versions from OCI registries (Harbor, GHCR,
// ECR, CNCF distribution, zot) with oras-go, and the OCI artifacts and Helm
// chart repositories that access specifications point at.
//
// # Mapping
//
// A repository spec (see ParseSpec: "ghcr.io/org/ocm",
// "http://127.0.0.1:5000/ocm", or {type: OCIRegistry, baseUrl, subPath})
// names a registry and a prefix. Component C lives in the OCI repository
// <prefix>/component-descriptors/C; version V is the tag ocm.VersionToTag(V)
// ("+" written ".build-"). The tag names the descriptor manifest, or an index
// holding it; the descriptor and local blobs are read with internal/source/ocm/ocimapping.
// Local blobs are layers of that manifest. After `ocm transfer
// --copy-resources`, charts are separate artifacts reached through ociArtifact
// (imageReference, possibly "http://host:port/repo:tag@sha256:…") or
// relativeOciReference (relative to the registry host); ArtifactResolver
// opens them, as well as helm accesses (a classic chart repository over
// HTTP(S), with the access's caCert, or oci://).
//
// # Requests
//
// Every blob and manifest goes through the shared disk cache (internal/source/cache),
// keyed by digest and verified on every read. A tag is resolved with one GET
// of its manifest, at most once per Client (one generation); a reference
// pinned by digest — "<version>@sha256:…" for LookupComponentVersion, or an
// imageReference with a digest — costs no request once cached. Only what is
// opened is downloaded: images and resources that rendering does not read
// are never fetched. Measured against the distribution registry (see
// counts_test.go): a cold lookup plus its chart blob takes 4 requests, a warm
// cache with a tag 1, a pinned digest 0. Under a sidecar policy the shared
// cache serves a manifest, blob or classic Helm chart only to a credential
// and repository (or chart URL) that downloaded and verified it before (a
// vouch, cache.FetchVouched; see Client.vouch): the first generation of
// another credential or repository downloads it once more, and tag
// resolutions shared between generations are kept per credential. A digest
// or a tag must not open another tenant's content.
//
// # Security
//
// Credentials, TLS trust, plain HTTP, the sidecar policy's gate and retries
// are internal/source/registry's: an http:// repository URL allows plain HTTP to its
// host (and only to it, so a descriptor cannot downgrade another host) but
// without credentials unless the operator allowed that host; every other host
// is HTTPS. Every repository, artifact, Helm repository and chart URL is put
// to the registry client's gate before the first request.
// Errors name registry, repository, reference and HTTP status and wrap the
// errdef sentinels; they never contain credentials.
package oci
