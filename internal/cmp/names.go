package cmp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/cmp/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
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
			errdef.ErrInvalidInput, errdef.Quote(unknown[0]), suggest(unknown[0], known), strings.Join(known, ", "), param.InstancePrefix)
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
			errdef.ErrInvalidInput, errdef.Quote(unknown[0]), suggest(unknown[0], knownEnv), strings.Join(knownEnv, ", "))
	}
	return nil
}

// suggest is ", did you mean X?" for the known name closest to name, when
// one is close (an edit distance of at most a third of its length, and 3).
func suggest(name string, known []string) string {
	best, dist := "", 4
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < dist && d <= max(1, len(k)/3) {
			best, dist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(", did you mean %q?", best)
}

// editDistance is the Levenshtein distance of a and b (short names only:
// callers cut input first).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 10
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
