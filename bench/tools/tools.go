//go:build tools

// Package tools pins the reference CLIs: `go build helm.sh/helm/v3/cmd/helm`
// and `go build sigs.k8s.io/kustomize/kustomize/v5` from this directory.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
