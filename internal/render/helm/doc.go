// Package helm renders a Helm chart archive as `helm template` does — the
// steps of the Helm library's install action in client-only dry-run mode,
// run here one by one (see installClientOnly) — and returns the objects. It
// knows nothing about OCM.
//
// Design notes: docs/design.md, section internal/render/helm.
package helm
