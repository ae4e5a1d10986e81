// Package oci reads OCM component versions from OCI registries (Harbor, GHCR,
// ECR, CNCF distribution, zot) with oras-go, and the OCI artifacts and Helm
// chart repositories that access specifications point at.
//
// Design notes: docs/design.md, section internal/source/ocm/oci.
package oci
