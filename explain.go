package argocdocm

import (
	"context"
	"sort"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Parameter is an instance parameter a component's deployment definition
// (a ComponentDeployment or a kro RGD's schema) declares: what an Argo CD
// Application may set as "parameters.<Name>".
type Parameter struct {
	Name        string
	Type        string // string, integer, number, boolean, object or array
	Description string
	Default     any // nil: none
	Required    bool
	Enum        []any
	// Secret parameters take a reference to an existing Secret
	// ({secretName, key}), never a value.
	Secret bool
}

// Parameters are the instance parameters of the deployment definition req
// renders cv with (its DefinitionFile, else the component's own definition
// or RGD), sorted by name: nil without a definition, a non-nil (perhaps
// empty) list with one. The definition is
// read as Render reads it: through r's verified access, req's files
// confined.
func (r *Renderer) Parameters(ctx context.Context, cv ocm.ComponentVersion, req Request) ([]Parameter, error) {
	def, err := rgd.Wrap(r.definitions()).LoadParameters(ctx, cv, r.planInput(req, locate(req).registry()))
	if err != nil || def == nil {
		return nil, err
	}
	out := make([]Parameter, 0, len(def.Spec.Parameters))
	for name, p := range def.Spec.Parameters {
		out = append(out, Parameter{Name: name, Type: p.Type, Description: p.Description, Default: p.Default,
			Required: p.Required, Enum: p.Enum, Secret: p.Secret})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Convert prints the ComponentDeployment equivalent to the kro RGD cv
// ships (req.DefinitionFile "rgd:[NAME][@flux]" chooses one and its
// deployer block), as `argocd-ocm-plugin convert` does.
func (r *Renderer) Convert(ctx context.Context, cv ocm.ComponentVersion, req Request) ([]byte, error) {
	out, err := rgd.Wrap(r.definitions()).Convert(ctx, cv, r.planInput(req, locate(req).registry()))
	if err != nil {
		return nil, errdef.Wrap(err, errdef.Error{Application: req.Application, Component: req.Component, Version: cv.Descriptor().Version})
	}
	return out, nil
}
