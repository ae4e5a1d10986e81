//go:build tools

// Package tools pins the reference helm CLI: `go build helm.sh/helm/v4/cmd/helm`
// from this directory (make reftools). ./kustomize pins the reference
// kustomize.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
