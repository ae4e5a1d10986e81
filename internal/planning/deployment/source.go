package deployment

import (
	"context"
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/application"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// ResourcePrefix in Request.DefinitionFile selects a definition shipped in
// the component by resource identity: "resource:deploy-prod".
const ResourcePrefix = "resource:"

// LoadDefinition finds the deployment definition of a request, in this order:
//
//  1. Request.DefinitionFile: a file (CLI --definition, or the Argo CD
//     "definition" parameter, a path in the Application's source directory),
//     or "resource:NAME" for a definition resource of the component;
//  2. the component's one resource of type deploymentDefinition;
//  3. none: nil, and the request alone decides (see DefinitionPlanner).
//
// An explicit definition replaces the shipped one entirely; they are never
// merged. It returns nil, nil when there is none.
func (p *DefinitionPlanner) LoadDefinition(ctx context.Context, cv ocm.ComponentVersion, req plan.Input) (*Definition, error) {
	d := cv.Descriptor()
	spec := strings.TrimSpace(req.DefinitionFile)
	switch {
	case strings.HasPrefix(spec, ResourcePrefix):
		id, err := ocm.ParseIdentity(strings.TrimPrefix(spec, ResourcePrefix))
		if err != nil {
			return nil, fmt.Errorf("deployment definition %s: %w", errdef.Quote(spec), err)
		}
		res, err := d.Resource(id)
		if err != nil {
			return nil, fmt.Errorf("deployment definition %s: %w", errdef.Quote(spec), err)
		}
		return p.definitionFromResource(ctx, req.ResourceReader(), cv, res)
	case spec != "":
		// As the request reads its files: inside the Application's
		// directory when it is confined.
		data, err := req.ReadFile(param.Definition, spec)
		if err != nil {
			return nil, err
		}
		return Decode("deployment definition file "+spec, data)
	}
	var found []*ocm.Resource
	for i := range d.Resources {
		if d.Resources[i].Type == ResourceType {
			found = append(found, &d.Resources[i])
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return p.definitionFromResource(ctx, req.ResourceReader(), cv, found[0])
	default:
		names := make([]string, len(found))
		for i, r := range found {
			names[i] = r.Identity().String()
		}
		return nil, fmt.Errorf("%w: the component ships %d deployment definitions (%s): choose one with --definition resource:NAME (Argo CD parameter definition)",
			errdef.ErrInvalidInput, len(found), strings.Join(names, ", "))
	}
}

func (p *DefinitionPlanner) definitionFromResource(ctx context.Context, rd plan.Reader, cv ocm.ComponentVersion, res *ocm.Resource) (*Definition, error) {
	data, err := p.readResource(ctx, rd, cv, res)
	if err != nil {
		return nil, fmt.Errorf("deployment definition resource %s: %w", res.Identity(), err)
	}
	return Decode("deployment definition resource "+res.Identity().String(), data)
}

// CheckPackage validates a platform package's instance parameters against
// the deployment definition its child will use (plan.PackageChecker):
// resource:NAME or the one the child ships. A definition file in git is the
// child's to read (its render reads it confined to the Application's
// directory); those parameters are checked there.
func (p *DefinitionPlanner) CheckPackage(ctx context.Context, child ocm.ComponentVersion, in plan.Input) error {
	definition := strings.TrimSpace(in.DefinitionFile)
	if definition != "" && !strings.HasPrefix(definition, ResourcePrefix) {
		return nil
	}
	parameters := in.Parameters
	def, err := p.LoadDefinition(ctx, child, plan.Input{Request: application.Request{DefinitionFile: definition}, Reader: in.Reader})
	if err != nil {
		return err
	}
	if def == nil {
		if len(parameters) == 0 {
			return nil
		}
		return fmt.Errorf("%w: parameters (%s) need a deployment definition, and the component ships none", errdef.ErrInvalidInput, errdef.Cut(strings.Join(sortedKeys(parameters), ", ")))
	}
	_, err = def.ResolveParameters(parameters)
	return err
}
