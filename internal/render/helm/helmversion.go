package helm

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/common"
)

// helmModule is the module whose release the plugin renders as.
const helmModule = "helm.sh/helm/v4"

// linkedHelm is go.mod's helm.sh/helm/v4 version, for builds without module
// dependencies in their build info (test binaries have none).
// TestLinkedHelmIsGoMods keeps it equal to go.mod.
const linkedHelm = "v4.3.2"

// capabilities are the Capabilities every render starts from: Helm's
// defaults, with .Capabilities.HelmVersion as the helm CLI of the linked
// release reports it (helmBuildInfo).
var capabilities = sync.OnceValue(func() *common.Capabilities {
	caps := common.DefaultCapabilities.Copy()
	helm := linkedHelm
	if info, ok := debug.ReadBuildInfo(); ok && len(info.Deps) > 0 {
		helm = moduleVersion(info.Deps, helmModule)
	}
	version, treeState, ok := helmRelease(helm)
	if !ok {
		return caps // not a release of Helm: the library's own report
	}
	caps.HelmVersion.Version = version
	caps.HelmVersion.GitTreeState = treeState
	caps.HelmVersion.GoVersion = runtime.Version()
	caps.HelmVersion.KubeClientVersion = strings.TrimSuffix(DefaultKubeVersion(), ".0")
	return caps
})

// helmRelease is what a helm CLI built from the release v of helm.sh/helm/v4
// reports as its version and git tree state: Helm's Makefile stamps the
// release tag (v4.3.2) and "clean" into internal/version by ldflags, which a
// program linking the library does not get (it reports "v4.3", the minor
// line compiled into the package, and no tree state). Only a release
// version counts: a pseudo-version or a pre-release is not a tag of Helm's
// that the CLI would be built from.
//
// The CLI also reports the commit of the tag, which the module does not
// carry (the reference CLI built from the module, make reftools, reports
// none either), its Go version (that of the build: the plugin reports its
// own, as the CLI does) and the Kubernetes line of its client-go, which is
// the plugin's (go.mod's k8s.io/client-go, the same as Helm's go.mod).
func helmRelease(v string) (version, treeState string, ok bool) {
	sv, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v"))
	if err != nil || !strings.HasPrefix(v, "v") || sv.Major() != 4 || sv.Prerelease() != "" || sv.Metadata() != "" {
		return "", "", false
	}
	return v, "clean", true
}

// moduleVersion is the version of module path among deps (its replacement's
// when it is replaced), or "" when it is not there.
func moduleVersion(deps []*debug.Module, path string) string {
	for _, m := range deps {
		if m.Path != path {
			continue
		}
		if m.Replace != nil {
			return m.Replace.Version // "" for a directory: not a release
		}
		return m.Version
	}
	return ""
}
