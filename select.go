package argocdocm

import (
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Renderable reports whether the pipeline can render a resource type.
func Renderable(t string) bool { return plan.Renderable(t) }

// SelectResources returns the resources named by selectors ("name" or
// "name,key=value"), or the only renderable resource when there are none.
func SelectResources(d *ocm.Descriptor, selectors []string) ([]*ocm.Resource, error) {
	return plan.SelectResources(d, selectors)
}
