// Package kustomize renders a kustomization shipped inside an OCM resource
// (a directoryTree archive) with the kustomize library, sigs.k8s.io/kustomize/api
// (the library behind kustomize v5.8.2).
//
// Design notes: docs/design.md, section internal/render/kustomize.
package kustomize
