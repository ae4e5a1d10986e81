package deployment

import (
	"context"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// readResource reads a small document resource (definition, config)
// through the renderer's verified access (plan.Input.Reader): the planner
// never fetches on its own.
func (p *DefinitionPlanner) readResource(ctx context.Context, rd plan.Reader, cv ocm.ComponentVersion, res *ocm.Resource) ([]byte, error) {
	if p.RequireDigests && (res.Digest == nil || res.Digest.Value == "") {
		return nil, fmt.Errorf("%w: resource %s has no digest, so no signature covers it", errdef.ErrSignature, res.Identity())
	}
	return rd.ReadDocument(ctx, cv, res, yamlfile.MaxDocumentSize)
}

func (rs *resolver) chartDefaults(ctx context.Context, res *ocm.Resource) (map[string]any, error) {
	values, err := rs.req.ResourceReader().ChartValues(ctx, rs.cv, res)
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
	t, err := rs.req.ResourceReader().ReadTree(ctx, rs.cv, res)
	if err != nil {
		return plan.Tree{}, err
	}
	if rs.trees == nil {
		rs.trees = map[string]plan.Tree{}
	}
	rs.trees[key] = t
	return t, nil
}
