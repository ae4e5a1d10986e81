//go:build tools

// Package deps pins modules that packages under construction will import, so
// that go mod tidy keeps them. Remove an import once real code uses it.
package deps

import (
	_ "github.com/Masterminds/semver/v3"
	_ "github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	_ "github.com/google/cel-go/cel"
	_ "github.com/spf13/cobra"
	_ "helm.sh/helm/v3/pkg/action"
	_ "oras.land/oras-go/v2/registry/remote"
	_ "sigs.k8s.io/kustomize/api/krusty"
	_ "sigs.k8s.io/kustomize/kyaml/filesys"
	_ "sigs.k8s.io/yaml"
)
