package argocdocm

import (
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
)

// HelmValues layers the request's values as helm does: files in order, then
// inline values, then --set-json, --set, --set-string and --set-file (Helm's
// order, pkg/cli/values.Options.MergeValues). Maps merge deeply, everything
// else is replaced.
func HelmValues(req Request) (map[string]any, error) {
	return plan.HelmValues(plan.Input{Request: req}, func(name string) ([]byte, error) { return req.ReadFile(param.ValueFiles, name) })
}
