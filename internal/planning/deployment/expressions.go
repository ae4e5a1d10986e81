package deployment

import (
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment/ordering"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
)

// checkExpressions compiles every expression of a definition, so syntax
// errors and unknown parameters surface before anything is fetched.
func (d *Definition) checkExpressions() error {
	e := &expr.Evaluator{Params: map[string]bool{}}
	for name := range d.Spec.Parameters {
		e.Params[name] = true
	}
	for i, r := range d.Spec.Renders {
		base := fmt.Sprintf("%s: spec.renders[%d]", d.Source, i)
		for _, f := range []struct{ name, val string }{
			{"when", r.When}, {"releaseName", r.ReleaseName}, {"namespace", r.Namespace}, {"path", r.Path},
		} {
			if strings.Contains(f.val, "${") {
				if err := e.Check(base+"."+f.name, f.val); err != nil {
					return err
				}
			}
		}
		if err := e.CheckTree(base+".values", r.Values); err != nil {
			return err
		}
		for j, p := range r.Patches {
			w := fmt.Sprintf("%s.patches[%d]", base, j)
			for _, f := range []struct{ name, val string }{
				{"target.apiVersion", p.Target.APIVersion}, {"target.kind", p.Target.Kind},
				{"target.name", p.Target.Name}, {"target.namespace", p.Target.Namespace},
			} {
				if strings.Contains(f.val, "${") {
					if err := e.Check(w+"."+f.name, f.val); err != nil {
						return err
					}
				}
			}
			if err := e.CheckTree(w+".value", p.Value); err != nil {
				return err
			}
		}
	}
	for i, r := range d.Spec.Renders {
		if err := ordering.CheckRenderExpressions(e.Check, fmt.Sprintf("%s: spec.renders[%d]", d.Source, i), r.SyncWave, r.Ordering); err != nil {
			return err
		}
	}
	return ordering.CheckJobExpressions(e.Check, d.Source, d.Spec.Jobs)
}
