package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/cmp"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// definitionParameters announces the instance parameters of the component's
// deployment definition as typed fields ("parameters.<name>"), with their
// defaults, so the Argo CD UI offers them for editing. The definition is
// read as r renders: through its access, the request's files confined.
func definitionParameters(r *argocdocm.Renderer) cmp.ParameterSource {
	return cmp.ParameterSourceFunc(func(ctx context.Context, cv ocm.ComponentVersion, req argocdocm.Request) ([]cmp.Announcement, error) {
		// The ComponentDeployment's parameters, or the RGD's.
		params, err := r.Parameters(ctx, cv, req)
		if err != nil {
			return nil, err
		}
		var out []cmp.Announcement
		for _, p := range params {
			a := cmp.Announcement{
				Name:     param.InstancePrefix + p.Name,
				Title:    p.Name,
				Tooltip:  parameterTooltip(p),
				Required: p.Required,
				ItemType: p.Type,
			}
			switch {
			case p.Secret:
				a.CollectionType, a.ItemType = cmp.CollectionMap, "string"
				a.Map = map[string]string{"secretName": "", "key": ""}
			case p.Type == deployment.TypeObject:
				a.CollectionType, a.ItemType = cmp.CollectionMap, "string"
				if m, ok := p.Default.(map[string]any); ok {
					a.Map = map[string]string{}
					for k, v := range m {
						a.Map[k] = fmt.Sprint(v)
					}
				}
			case p.Type == deployment.TypeArray:
				a.CollectionType, a.ItemType = cmp.CollectionArray, "string"
				if l, ok := p.Default.([]any); ok {
					for _, v := range l {
						a.Array = append(a.Array, fmt.Sprint(v))
					}
				}
			default:
				a.CollectionType = cmp.CollectionString
				if p.Default != nil {
					if s, ok := p.Default.(string); ok {
						a.String = s
					} else {
						b, _ := json.Marshal(p.Default)
						a.String = string(b)
					}
				}
			}
			out = append(out, a)
		}
		return out, nil
	})
}

func parameterTooltip(p argocdocm.Parameter) string {
	var b strings.Builder
	b.WriteString(p.Description)
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	fmt.Fprintf(&b, "(%s", p.Type)
	if len(p.Enum) > 0 {
		fmt.Fprintf(&b, "; one of %v", p.Enum)
	}
	if p.Secret {
		b.WriteString("; secret: give secretName and key of an existing Secret, never the value")
	}
	b.WriteString(")")
	return b.String()
}
