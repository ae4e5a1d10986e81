// Package ocimapping is the OCM-on-OCI mapping shared by every store that keeps
// component versions as OCI manifests: a CTF (offline) and an OCI registry.
// It turns a manifest (or index) into a component descriptor and a localBlob
// reference into the layers that hold it, or (OCM CLI v0.13+) into the OCI
// manifest inside the version's index that holds it (artifact.go). Stores supply content through the
// small Fetcher interface; every fetched blob is verified against its digest.
package ocimapping
