package cmp

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Announcement is one Argo CD ParameterAnnouncement, as the plugin's dynamic
// parameters command prints it (a JSON array of these). The JSON names are
// Argo CD's (reposerver/apiclient ParameterAnnouncement).
type Announcement struct {
	Name     string `json:"name"`
	Title    string `json:"title,omitempty"`
	Tooltip  string `json:"tooltip,omitempty"`
	Required bool   `json:"required,omitempty"`
	// ItemType is how the UI interprets the (always textual) value:
	// "string" (default), "boolean" or "number".
	ItemType string `json:"itemType,omitempty"`
	// CollectionType is "string" (default), "array" or "map"; only the field
	// of that type is used.
	CollectionType string            `json:"collectionType,omitempty"`
	String         string            `json:"string,omitempty"`
	Array          []string          `json:"array,omitempty"`
	Map            map[string]string `json:"map,omitempty"`
}

// Collection types of an announcement.
const (
	CollectionString = "string"
	CollectionArray  = "array"
	CollectionMap    = "map"
)

// ParameterSource contributes announcements for a resolved component version,
// e.g. the instance parameters of its deployment definition with their types
// and defaults. req is the request the Application's parameters make, with
// req.Version resolved. Names must not repeat a contract parameter.
type ParameterSource interface {
	Announce(ctx context.Context, cv ocm.ComponentVersion, req argocdocm.Request) ([]Announcement, error)
}

// ParameterSourceFunc adapts a function to ParameterSource.
type ParameterSourceFunc func(ctx context.Context, cv ocm.ComponentVersion, req argocdocm.Request) ([]Announcement, error)

// Announce implements ParameterSource.
func (f ParameterSourceFunc) Announce(ctx context.Context, cv ocm.ComponentVersion, req argocdocm.Request) ([]Announcement, error) {
	return f(ctx, cv, req)
}

// Announcer computes the plugin's parameter announcement from the environment
// Argo CD gives the dynamic parameters command (the Application's parameters
// and ARGOCD_ENV_ variables, as for generate). The zero value reads CTFs and
// component archives.
type Announcer struct {
	// Renderer opens the repository and resolves the component version as
	// generate does (argocdocm.Renderer.Resolve: the same stage, the same
	// rules, the sidecar policy's localArchives among them); nil: a zero
	// Renderer, which reads CTFs and component archives.
	Renderer *argocdocm.Renderer
	// Sources add announcements for the resolved component version (the
	// deployment definition's instance parameters), in order.
	Sources []ParameterSource
	// Dir is the Application's directory (argocdocm.Request.Dir); empty: the
	// working directory.
	Dir string
	// Root confines the files the Application names (argocdocm.Request.Root).
	Root *argocdocm.Root
}

// maxListedVersions bounds the versions a tooltip lists.
const maxListedVersions = 15

// ContractAnnouncements are the parameters every Application can set, with
// no defaults: what the plugin announces before it knows a component.
func ContractAnnouncements() []Announcement {
	return []Announcement{
		{Name: param.Repository, Title: "OCM repository", Required: true,
			Tooltip: "Where the component version is: an OCI registry (ghcr.io/org/ocm, http://host:5000/ocm) or a CTF / component archive (directory, tar, tgz). A relative path is resolved against the Application's path in git: a CTF committed next to the Application needs no registry and no credentials. Env fallback: ARGOCD_ENV_REPOSITORY."},
		{Name: param.Component, Title: "Component", Required: true,
			Tooltip: "OCM component name, e.g. example.com/demo/podinfo. Env fallback: ARGOCD_ENV_COMPONENT."},
		{Name: param.Version, Title: "Version", Required: true,
			Tooltip: "Component version, or a semantic-version constraint (~1.2, ^2, >=1.0.0). Argo CD caches manifests per git revision: a constraint is re-resolved only when Argo CD regenerates (hard refresh). Pin versions for predictable syncs. Env fallback: ARGOCD_ENV_VERSION."},
		{Name: param.Resource, Title: "Resource",
			Tooltip: "Resource to render: name or name,key=value (extra identity). Default: the component's only helmChart or directoryTree resource. Env fallback: ARGOCD_ENV_RESOURCE."},
		{Name: param.Path, Title: "Path in resource",
			Tooltip: "Entry path inside a directoryTree resource (a kustomization or plain manifests). Default: its root. Env fallback: ARGOCD_ENV_PATH."},
		{Name: param.Values, Title: "Helm values (YAML)",
			Tooltip: "Helm values as a YAML map; they win over value files. Do not put secrets here: Argo CD stores parameters and generated manifests in plain text. Env fallback: ARGOCD_ENV_VALUES."},
		{Name: param.ValueFiles, Title: "Helm value files", CollectionType: CollectionArray,
			Tooltip: "Values files in the Application's git path, later ones win. A string parameter or ARGOCD_ENV_VALUE_FILES may list them comma-separated."},
		{Name: param.Parameters, Title: "Instance parameters", CollectionType: CollectionMap,
			Tooltip: "Instance parameters of the component's deployment definition (name → value). Env fallback: ARGOCD_ENV_PARAMETERS holding a YAML map."},
		{Name: param.Definition, Title: "Deployment definition",
			Tooltip: "A deployment definition file in the Application's directory (relative path), or resource:NAME for one shipped in the component, or rgd:[NAME][@flux] for a kro ResourceGraphDefinition of the component (docs/kro.md). Default: the one the component ships, if any. Env fallback: ARGOCD_ENV_DEFINITION."},
		{Name: param.Platform, Title: "Render as platform", ItemType: "boolean",
			Tooltip: "true: render the component's references as child Argo CD Applications (app of apps). Default for components with references and no renderable resource. Env fallback: ARGOCD_ENV_PLATFORM."},
		{Name: param.PlatformConfig, Title: "Platform config files", CollectionType: CollectionArray,
			Tooltip: "Platform config files in the Application's git path: per-package settings of a platform, later ones win."},
		{Name: param.Localize, Title: "Localize images", ItemType: "boolean",
			Tooltip: "true: point workload images that are resources of the component at the component's location of them (after a transfer). Env fallback: ARGOCD_ENV_LOCALIZE."},
		{Name: param.Provenance, Title: "Provenance annotations", ItemType: "boolean",
			Tooltip: "true: annotate every object with component, version, descriptor digest, resource and verified signatures. Env fallback: ARGOCD_ENV_PROVENANCE."},
	}
}

// Announce returns the announcement for the environment getenv describes:
// the contract parameters, and, once repository, component and version are
// known, the component's renderable resources and the resolved version, then
// what the Sources add. A repository, component or version that cannot be
// read is an error (*errdef.Error naming application, component, version).
func (a *Announcer) Announce(ctx context.Context, getenv func(string) string) ([]Announcement, error) {
	out := ContractAnnouncements()
	req, err := Request(getenv)
	if err != nil {
		return nil, err
	}
	req.Dir, req.Root = a.Dir, a.Root
	if req.Repository == "" || req.Component == "" {
		return out, nil
	}
	ectx := errdef.Error{Application: req.Application, Component: req.Component, Version: req.Version}
	more, err := a.announceComponent(ctx, req, out, &ectx)
	if err != nil {
		return nil, errdef.Wrap(err, ectx)
	}
	return more, nil
}

func (a *Announcer) announceComponent(ctx context.Context, req argocdocm.Request, out []Announcement, ectx *errdef.Error) ([]Announcement, error) {
	r := a.Renderer
	if r == nil {
		r = &argocdocm.Renderer{}
	}
	byName := map[string]*Announcement{}
	for i := range out {
		byName[out[i].Name] = &out[i]
	}

	if req.Version == "" {
		// A form being filled in: help with the versions there are.
		if err := announceVersions(ctx, r, req, byName[param.Version]); err != nil {
			return nil, err
		}
		return out, nil
	}

	found, err := r.Resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	defer found.Close()
	requested, version, cv := found.Requested, found.Version, found.Component
	ectx.Version, req.Version = version, version
	d := cv.Descriptor()

	res := byName[param.Resource]
	platformish, err := r.IsPlatform(ctx, cv, req)
	if err != nil {
		return nil, err
	}
	if platformish {
		announcePlatform(d, res, byName[param.Platform])
	} else {
		// A deployment definition or RGD chooses the resources itself
		// (Parameters is nil without one).
		defined, err := r.Parameters(ctx, cv, req)
		if err != nil {
			return nil, err
		}
		if err := announceResources(d, req, res, defined != nil); err != nil {
			return nil, err
		}
	}

	v := byName[param.Version]
	if strings.TrimSpace(requested) != version {
		v.Tooltip = fmt.Sprintf("%s resolves to %s now. %s", errdef.Quote(requested), version, v.Tooltip)
	}
	out = append(out, Announcement{
		Name:    param.ResolvedVersion,
		Title:   "Resolved version (read-only)",
		Tooltip: "The version the version parameter resolves to now, for information: the plugin ignores this parameter. Pin it as version to stop following a constraint.",
		String:  version,
	})
	return a.announceSources(ctx, cv, req, out)
}

// announceVersions lists the component's versions in the version
// parameter's tooltip v.
func announceVersions(ctx context.Context, r *argocdocm.Renderer, req argocdocm.Request, v *Announcement) error {
	repo, err := r.Open(ctx, req)
	if err != nil {
		return err
	}
	defer repo.Close()
	versions, err := repo.ListVersions(ctx, req.Component)
	if err != nil {
		return err
	}
	if len(versions) == 0 {
		return fmt.Errorf("%w: component %s has no versions in %s", errdef.ErrNotFound, req.Component, req.Repository)
	}
	v.Tooltip = "Available: " + listVersions(versions) + ". " + v.Tooltip
	return nil
}

// announcePlatform lists, in the resource tooltip res, the child
// Applications a platform renders (one per reference), and says in the
// platform tooltip plat that it renders as one.
func announcePlatform(d *ocm.Descriptor, res, plat *Announcement) {
	refs := make([]string, len(d.References))
	for i, ref := range d.References {
		refs[i] = ref.Name + " (" + ref.ComponentName + ":" + ref.Version + ")"
	}
	res.Tooltip = d.Name + ":" + d.Version + " is rendered as a platform: one child Application per reference: " +
		orNone(refs) + ". " + res.Tooltip
	plat.Tooltip = "Rendering as a platform now. " + plat.Tooltip
}

// announceSources appends to out what the Sources announce for cv; a name
// announced twice is refused.
func (a *Announcer) announceSources(ctx context.Context, cv ocm.ComponentVersion, req argocdocm.Request, out []Announcement) ([]Announcement, error) {
	names := map[string]bool{}
	for _, an := range out {
		names[an.Name] = true
	}
	for _, src := range a.Sources {
		more, err := src.Announce(ctx, cv, req)
		if err != nil {
			return nil, err
		}
		for _, an := range more {
			if an.Name == "" {
				return nil, fmt.Errorf("%w: a parameter announcement without a name", errdef.ErrInvalidInput)
			}
			if names[an.Name] {
				return nil, fmt.Errorf("%w: parameter %s is announced twice (a deployment-definition parameter may not reuse a plugin parameter name)", errdef.ErrInvalidInput, errdef.Quote(an.Name))
			}
			names[an.Name] = true
			out = append(out, an)
		}
	}
	return out, nil
}

// announceResources lists the renderable resources in the resource
// tooltip and makes the one generate would render (or the selection) the
// default.
func announceResources(d *ocm.Descriptor, req argocdocm.Request, res *Announcement, defined bool) error {
	if len(req.Resources) > 0 {
		selected, err := argocdocm.SelectResources(d, req.Resources)
		if err != nil {
			return err // a selection that does not exist or cannot be rendered
		}
		ids := make([]string, len(selected))
		for i, r := range selected {
			ids[i] = r.Identity().String()
		}
		res.String = strings.Join(ids, ",")
	}
	var renderable []string
	for i := range d.Resources {
		if argocdocm.Renderable(d.Resources[i].Type) {
			renderable = append(renderable, d.Resources[i].Identity().String()+" ("+d.Resources[i].Type+")")
		}
	}
	switch {
	case len(req.Resources) > 0, defined && len(renderable) != 1:
		// Chosen by the request, or by the definition.
	case len(renderable) == 0:
		// Not a platform either (the caller checked): generate has nothing to render.
		return fmt.Errorf("%w: no renderable resource (helmChart or directoryTree) and no references in component %s:%s",
			errdef.ErrNotFound, d.Name, d.Version)
	case len(renderable) == 1:
		if sel, err := argocdocm.SelectResources(d, nil); err == nil {
			res.String = sel[0].Identity().String()
		}
	default:
		res.Required = true // generate fails until one is chosen
	}
	res.Tooltip = "Renderable resources of " + d.Name + ":" + d.Version + ": " + orNone(renderable) + ". " + res.Tooltip
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// listVersions renders versions highest first (semantic versions before
// others), at most maxListedVersions of them.
func listVersions(vs []string) string {
	type pv struct {
		raw string
		v   *semver.Version
	}
	ps := make([]pv, 0, len(vs))
	for _, s := range vs {
		v, _ := semver.NewVersion(s)
		ps = append(ps, pv{s, v})
	}
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		switch {
		case a.v != nil && b.v != nil:
			if c := a.v.Compare(b.v); c != 0 {
				return c > 0
			}
			return a.raw > b.raw
		case a.v != nil:
			return true
		case b.v != nil:
			return false
		default:
			return a.raw < b.raw
		}
	})
	var names []string
	for i, p := range ps {
		if i == maxListedVersions {
			names = append(names, fmt.Sprintf("… (%d more)", len(ps)-maxListedVersions))
			break
		}
		names = append(names, p.raw)
	}
	return strings.Join(names, ", ")
}
