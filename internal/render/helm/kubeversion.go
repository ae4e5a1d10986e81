package helm

import (
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/common"
)

// kubeModules are the Kubernetes library modules whose version implies the
// Kubernetes version the plugin was built against, in order of preference:
// client-go is what helm's Makefile reads (k8s.io/client-go v0.X.Y is
// Kubernetes 1.X); apimachinery is released in lockstep with it.
var kubeModules = []string{"k8s.io/client-go", "k8s.io/apimachinery"}

// linkedClientGo is go.mod's k8s.io/client-go version, for builds without
// module dependencies in their build info (test binaries have none).
// TestLinkedClientGoIsGoMods keeps it equal to go.mod.
const linkedClientGo = "v0.37.2"

var defaultKubeVersion = sync.OnceValue(func() string {
	if info, ok := debug.ReadBuildInfo(); ok && len(info.Deps) > 0 {
		return kubeVersionFromModules(info.Deps)
	}
	v, _ := kubeVersionOf(linkedClientGo)
	return v
})

// DefaultKubeVersion is the Kubernetes version a render assumes when none is
// given: the one the linked Kubernetes libraries imply (k8s.io/client-go
// v0.X.Y → v1.X.0), which is what a released helm binary reports (its
// Makefile sets chartutil's k8sVersionMajor/Minor from the client-go version
// by ldflags). It is derived from the binary's build info, so `go run`, the
// image and every release binary agree without ldflags; test binaries, which
// carry no dependencies in their build info, use go.mod's version.
func DefaultKubeVersion() string { return defaultKubeVersion() }

func kubeVersionFromModules(deps []*debug.Module) string {
	for _, name := range kubeModules {
		for _, m := range deps {
			if m.Path != name {
				continue
			}
			mod := m
			if m.Replace != nil {
				mod = m.Replace
			}
			if v, ok := kubeVersionOf(mod.Version); ok {
				return v
			}
		}
	}
	return common.DefaultCapabilities.KubeVersion.Version
}

// kubeVersionOf maps a Kubernetes library version (v0.37.0) to the
// Kubernetes version it belongs to (v1.37.0).
func kubeVersionOf(module string) (string, bool) {
	v, err := semver.NewVersion(strings.TrimPrefix(module, "v"))
	if err != nil || v.Major() != 0 || v.Minor() == 0 {
		return "", false
	}
	return fmt.Sprintf("v1.%d.0", v.Minor()), true
}
