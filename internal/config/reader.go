package config

import (
	"context"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm"
)

// ResourceReader is what the planner reads of a component version's
// resources: shipped definitions and config resources, a chart's default
// values (for --explain) and the files of a tree (for file rules and
// kustomize overlays). The pipeline implements it (plan.Resources,
// from plan.ResourcesOf a renderer), so that the planner reads through the same
// verified access as the render and never fetches on its own.
type ResourceReader interface {
	// ReadDocument reads a small document resource of at most max bytes,
	// verified; an archive is refused.
	ReadDocument(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource, max int64) ([]byte, error)
	// ChartValues returns the default values of a helmChart resource.
	ChartValues(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (map[string]any, error)
	// ReadTree reads a directoryTree resource, verified.
	ReadTree(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (plan.Tree, error)
}

var _ ResourceReader = plan.Resources{}

func (p *Planner) resources() ResourceReader {
	if p.Resources == nil {
		return plan.Resources{} // offline: CTFs and component archives
	}
	return p.Resources
}

// readResource reads a small document resource (definition, config), verified.
func (p *Planner) readResource(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) ([]byte, error) {
	if p.RequireDigests && (res.Digest == nil || res.Digest.Value == "") {
		return nil, fmt.Errorf("%w: resource %s has no digest, so no signature covers it", errdef.ErrSignature, res.Identity())
	}
	return p.resources().ReadDocument(ctx, cv, res, yamlfile.MaxDocumentSize)
}

func (rs *resolver) chartDefaults(ctx context.Context, res *ocm.Resource) (map[string]any, error) {
	values, err := rs.p.resources().ChartValues(ctx, rs.cv, res)
	if err != nil {
		return nil, err
	}
	m, _ := jsonValue(values).(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// tree reads a directory resource once per render planned: its file rules
// and its kustomize overlay look at the same tree (it is not kept for the
// next render: trees may be large).
func (rs *resolver) tree(ctx context.Context, res *ocm.Resource) (plan.Tree, error) {
	key := res.Identity().String() + "@" + res.Version
	if t, ok := rs.trees[key]; ok {
		return t, nil
	}
	t, err := rs.p.resources().ReadTree(ctx, rs.cv, res)
	if err != nil {
		return plan.Tree{}, err
	}
	if rs.trees == nil {
		rs.trees = map[string]plan.Tree{}
	}
	rs.trees[key] = t
	return t, nil
}
