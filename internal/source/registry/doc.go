// Package registry is the plugin's HTTP side of OCI registries: credentials,
// TLS trust, the plain-HTTP policy, retries, and errors that say which registry,
// repository, reference and HTTP status failed. It hands out oras-go
// remote.Repository values configured with all of that; the OCM mapping lives
// in internal/source/ocm/oci.
//
// Design notes: docs/design.md, section internal/source/registry.
package registry
