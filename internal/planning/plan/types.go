package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Resource types a step renders.
const (
	TypeHelmChart     = "helmChart"
	TypeDirectoryTree = "directoryTree"
	TypeFilesystem    = "filesystem" // legacy name of directoryTree
	// TypeOCIArtifact renders as a directory tree when its OCI manifest has
	// one tar layer (a Flux OCIRepository artifact: OCM's
	// kustomize-configuration-localization example); most ociArtifact
	// resources are images, so it renders only when a step names it.
	TypeOCIArtifact = "ociArtifact"
)

// Renders is how a resource type renders: the pipeline keeps one step
// renderer per value.
type Renders int

// How resource types render; RendersNothing: the type is not rendered.
const (
	RendersNothing Renders = iota
	RendersChart           // helm template of a chart archive
	RendersTree            // kustomize or plain manifests of a directory tree
)

// resourceTypes is every resource type a step renders: adding one is an
// entry here and, for a new Renders, a step renderer in the pipeline.
// Messages name the types that are not legacy, in this order.
var resourceTypes = []struct {
	name    string
	renders Renders
	legacy  bool // accepted, never offered
	// named: rendered only when named (a resource selector, a definition's
	// render, an RGD block); never chosen as the only renderable resource,
	// never what makes a component no platform. The reader refuses content
	// of another shape (access.Resolver.ReadTree).
	named bool
}{
	{TypeHelmChart, RendersChart, false, false},
	{TypeDirectoryTree, RendersTree, false, false},
	{TypeFilesystem, RendersTree, true, false},
	{TypeOCIArtifact, RendersTree, true, true},
}

// RendersOf is how resources of type t render when a step names them.
func RendersOf(t string) Renders {
	for _, rt := range resourceTypes {
		if rt.name == t {
			return rt.renders
		}
	}
	return RendersNothing
}

// Renderable reports whether resources of type t render without being
// named: the only renderable resource of a component is chosen among
// them, and a component with one is no platform.
func Renderable(t string) bool {
	for _, rt := range resourceTypes {
		if rt.name == t {
			return rt.renders != RendersNothing && !rt.named
		}
	}
	return false
}

// RenderableNamed reports whether a step that names a resource of type t
// renders it (Renderable, and the types rendered only when named).
func RenderableNamed(t string) bool { return RendersOf(t) != RendersNothing }

// RenderableTypes names the renderable types for messages, joined by
// conjunction: "helmChart and directoryTree".
func RenderableTypes(conjunction string) string {
	var names []string
	for _, rt := range resourceTypes {
		if !rt.legacy {
			names = append(names, rt.name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conjunction + " " + names[len(names)-1]
}

// NotRenderable is the error for a resource whose type no step renders.
func NotRenderable(res *ocm.Resource) error {
	return fmt.Errorf("%w: resource %s has type %s; the plugin renders %s resources",
		errdef.ErrUnsupportedMediaType, res.Identity(), res.Type, RenderableTypes("and"))
}

// SelectResources returns the resources named by selectors ("name" or
// "name,key=value"), or the only renderable resource when there are none.
func SelectResources(d *ocm.Descriptor, selectors []string) ([]*ocm.Resource, error) {
	if len(selectors) == 0 {
		return onlyRenderable(d)
	}
	var out []*ocm.Resource
	seen := map[string]bool{} // a selector repeated (10 000 times by a hostile Application) selects once
	for _, s := range selectors {
		if seen[s] {
			continue
		}
		seen[s] = true
		id, err := ocm.ParseIdentity(s)
		if err != nil {
			return nil, err
		}
		res, err := d.Resource(id)
		if err != nil {
			return nil, err
		}
		if !RenderableNamed(res.Type) {
			return nil, NotRenderable(res)
		}
		if !slices.Contains(out, res) { // two spellings of one identity
			out = append(out, res)
		}
	}
	return out, nil
}

func onlyRenderable(d *ocm.Descriptor) ([]*ocm.Resource, error) {
	var cands []*ocm.Resource
	var all []string
	for i := range d.Resources {
		all = append(all, d.Resources[i].Identity().String()+" ("+d.Resources[i].Type+")")
		if Renderable(d.Resources[i].Type) {
			cands = append(cands, &d.Resources[i])
		}
	}
	switch len(cands) {
	case 1:
		return cands, nil
	case 0:
		return nil, fmt.Errorf("%w: no renderable resource (%s) in component %s:%s; it has: %s",
			errdef.ErrNotFound, RenderableTypes("or"), d.Name, d.Version, orNone(all))
	default:
		names := make([]string, len(cands))
		for i, c := range cands {
			names[i] = c.Identity().String()
		}
		return nil, fmt.Errorf("%w: component %s:%s has %d renderable resources (%s): choose with --resource / the resource parameter",
			errdef.ErrInvalidInput, d.Name, d.Version, len(cands), strings.Join(names, ", "))
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no resources"
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}
