package helm

import (
	"fmt"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// missingDependencies is action.CheckDependencies of Helm v4.3.2 (same
// matching, by chart name and not alias, and same message): linking Helm's
// action package for these lines would link its Kubernetes clients,
// kubectl and the chart linter, whose package initialisation costs every
// process of the plugin several milliseconds. TestMissingDependenciesIsHelms
// compares both.
func missingDependencies(c *chart.Chart, reqs []*chart.Dependency) error {
	var missing []string
	for _, r := range reqs {
		if !hasDependency(c, r.Name) {
			missing = append(missing, r.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("found in Chart.yaml, but missing in charts/ directory: %s", errdef.Cut(strings.Join(missing, ", ")))
	}
	return nil
}

func hasDependency(c *chart.Chart, name string) bool {
	for _, d := range c.Dependencies() {
		if d.Name() == name {
			return true
		}
	}
	return false
}
