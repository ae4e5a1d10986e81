package deployment

import (
	"context"
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/overlay"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
)

// kustomizeField is where a render's kustomize field sits, for messages
// and the expressions --explain must not show (secretGenerator).
const kustomizeField = "kustomize"

// definitionOverlay evaluates the kustomize field of rp's render into an
// overlay; nil when there is none.
func (rs *resolver) definitionOverlay(ctx context.Context, rp renderPlan) (*kustomize.Overlay, error) {
	if rp.render == nil || len(rp.render.Kustomize) == 0 {
		return nil, nil
	}
	where := fmt.Sprintf("%s: spec.renders[%d].%s", rs.def.Source, rp.index, kustomizeField)
	if rp.res.Type == plan.TypeHelmChart {
		return nil, fmt.Errorf("%w: %s: resource %s is a helmChart; a kustomize overlay applies to a directoryTree whose entry is a kustomization", errdef.ErrInvalidInput, where, rp.res.Identity())
	}
	if err := overlay.CheckFields(where, rp.render.Kustomize); err != nil {
		return nil, err
	}
	v, err := rs.eval.Walk(ctx, where, NormalizeNumbers(map[string]any(rp.render.Kustomize)), rs.vars)
	if err != nil {
		return nil, err
	}
	return overlay.Decode(where, v)
}

// redactKustomizeSecrets hides the results of the expressions of a
// kustomize field's secretGenerator.
func redactKustomizeSecrets(r *explain.Report) {
	for i, e := range r.Expressions {
		if _, rest, ok := strings.Cut(e.Where, "."+kustomizeField+"."); ok && strings.HasPrefix(rest, "secretGenerator") {
			r.Expressions[i].Result = overlay.SecretValueShown
		}
	}
}
