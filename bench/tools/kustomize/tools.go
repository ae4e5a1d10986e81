//go:build tools

// Package tools pins the reference kustomize CLI: `go build
// sigs.k8s.io/kustomize/kustomize/v5` from this directory with
// GOTOOLCHAIN=go1.27.4 (make reftools).
package tools

import _ "sigs.k8s.io/kustomize/kustomize/v5"
