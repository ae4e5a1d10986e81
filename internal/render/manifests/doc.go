// Package manifests decodes, encodes and renders plain Kubernetes manifests.
//
// Design notes: docs/design.md, section internal/render/manifests.
package manifests
