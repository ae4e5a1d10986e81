package cmp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/suggest"
)

// knownParameters are the names an Application may set: the contract's, one
// instance parameter each ("parameters.<name>"), and what the plugin
// announces for display only (resolved-version, which it never reads).
func knownParameters() []string {
	var names []string
	for _, a := range ContractAnnouncements() {
		names = append(names, a.Name)
	}
	return append(names, param.ResolvedVersion)
}

// checkNames refuses a parameter, or an ARGOCD_ENV_ variable, the plugin
// does not know: a misspelt "valuess" would otherwise render without the
// values and Argo CD would deploy something else than the Application says.
// envNames are the ARGOCD_ENV_* names of the environment (nil: not known).
func checkNames(params map[string]Parameter, envNames []string) error {
	known := knownParameters()
	var unknown []string
	for name := range params {
		if slices.Contains(known, name) || strings.HasPrefix(name, param.InstancePrefix) && len(name) > len(param.InstancePrefix) {
			continue
		}
		unknown = append(unknown, name)
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("%w: unknown parameter %s%s (known: %s, and %s<name> for one instance parameter)",
			errdef.ErrInvalidInput, errdef.Quote(unknown[0]), didYouMean(unknown[0], known), strings.Join(known, ", "), param.InstancePrefix)
	}
	var knownEnv []string
	for _, n := range known {
		knownEnv = append(knownEnv, envPrefix+envName(n))
	}
	for _, name := range envNames {
		if !strings.HasPrefix(name, envPrefix) || slices.Contains(knownEnv, name) {
			continue
		}
		unknown = append(unknown, name)
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("%w: unknown plugin environment variable %s%s (known: %s)",
			errdef.ErrInvalidInput, errdef.Quote(unknown[0]), didYouMean(unknown[0], knownEnv), strings.Join(knownEnv, ", "))
	}
	return nil
}

// didYouMean is ", did you mean X?" for the known name closest to name,
// when one is close enough to be a typo of it.
func didYouMean(name string, known []string) string {
	c := suggest.Closest(name, known, 1)
	if len(c) == 0 {
		return ""
	}
	return fmt.Sprintf(", did you mean %s?", errdef.Quote(c[0]))
}
