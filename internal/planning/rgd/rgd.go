package rgd

import (
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/graph"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/schema"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// MediaType marks an RGD resource (OCM's conformance scenarios use it).
const MediaType = "application/vnd.cncf.kro.resourcegraphdefinition.v1+yaml"

// maxChainDepth bounds RGDs instantiating RGDs.
const maxChainDepth = 8

// RGD is a ResourceGraphDefinition found in a component version: the
// decoded graph, the resource that ships it and where that is.
type RGD struct {
	*graph.RGD
	Resource *ocm.Resource

	// cv is the component version that ships the RGD when it is a
	// referenced one (nil: the component being deployed); refPath the
	// reference names from the deployed component to it.
	cv      ocm.ComponentVersion
	refPath []string
	inst    *schema.Instance
}

// Label names the RGD as the definition parameter does: its resource's
// identity, after the reference names that lead to the component that
// ships it ("nested-rgd/kro-rgd").
func (r *RGD) Label() string {
	id := "?"
	if r.Resource != nil {
		id = r.Resource.Identity().String()
	}
	if len(r.refPath) == 0 {
		return id
	}
	return strings.Join(r.refPath, "/") + "/" + id
}

// Parameters are the instance parameters of the RGD's schema.
func (r *RGD) Parameters() (*schema.Instance, error) {
	if r.inst != nil {
		return r.inst, nil
	}
	inst, err := r.Schema.Parameters(r.Source)
	if err != nil {
		return nil, err
	}
	r.inst = inst
	return inst, nil
}
