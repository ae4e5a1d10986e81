package deployment

import (
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// InstanceDefinition is a definition that only declares instance parameters,
// for deployment formats of their own (kro ResourceGraphDefinitions, package
// internal/planning/rgd) that reuse the parameters' typing, defaults, validation and
// announcement. Names may be dotted paths of an instance spec
// ("podinfo.message"): they are never CEL names here. Each parameter is
// validated as in a definition.
func InstanceDefinition(source, name string, params map[string]*Parameter) (*Definition, error) {
	d := &Definition{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: name}, Source: source, Spec: Spec{Parameters: params}}
	for _, n := range sortedKeys(params) {
		p := params[n]
		if p == nil {
			return nil, fmt.Errorf("%w: %s: parameter %s: empty declaration", errdef.ErrInvalidInput, source, n)
		}
		if err := p.validate(); err != nil {
			return nil, fmt.Errorf("%w: %s: parameter %s: %v", errdef.ErrInvalidInput, source, n, err)
		}
	}
	return d, nil
}
