package argocdocm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Render runs one request, each stage once and in order: resolve the
// version (and verify its signatures), plan, fetch, verify and render
// each step, finish the output; emitting it is the caller's. The request
// is read, never changed: the resolved version is the component
// version's, and the Result's.
func (r *Renderer) Render(ctx context.Context, req Request) (*Result, error) {
	ectx := errdef.Error{Application: req.Application, Component: req.Component, Version: req.Version}
	res, err := r.render(ctx, req, &ectx)
	if err != nil {
		return nil, errdef.Wrap(err, ectx)
	}
	return res, nil
}

// render runs the stages; ectx follows them (the version once resolved,
// the resource of the step rendering) to name what failed.
func (r *Renderer) render(ctx context.Context, req Request, ectx *errdef.Error) (*Result, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	found, err := r.Resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	defer found.Close()
	repo, cv, version := found.Repository, found.Component, found.Version
	if version != req.Version {
		fmt.Fprintf(r.log(), "argocd-ocm-plugin: %s: version constraint %s resolved to %s (pin it to avoid surprises: Argo CD caches manifests per git revision)\n",
			req.Component, errdef.Quote(req.Version), version)
		ectx.Version = version // the request stays as it came
	}
	d := cv.Descriptor()
	signatures, err := r.verify(ctx, repo, cv)
	if err != nil {
		return nil, err
	}
	out := &Result{Component: d.Name, Version: d.Version, DescriptorDigest: cv.DescriptorDigest(), Signatures: signatures}
	platformish, err := r.isPlatform(ctx, cv, req)
	if err != nil {
		return nil, err
	}
	if platformish {
		if out.Objects, err = r.renderPlatform(ctx, repo, cv, req); err != nil {
			return nil, err
		}
		return out, nil
	}
	p, err := r.plannerOf().Plan(ctx, cv, r.planInput(req, found.where.registry()))
	if err != nil {
		return nil, err
	}
	if err := checkApplicationOverlay(req, p); err != nil {
		return nil, err
	}
	from, err := r.renderSteps(ctx, cv, req, p, out, ectx)
	if err != nil {
		return nil, err
	}
	ectx.Resource = ""
	if out.Objects, err = finish(ctx, p, out.Objects); err != nil {
		return nil, err
	}
	if r.allowances().requireImages {
		if err := r.guardImages(cv, out.Objects, len(signatures) > 0, from, ectx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// renderSteps fetches, verifies, renders and places each step of the plan
// into out, in order, and returns where each object came from for the
// image guard (nil when it is off).
func (r *Renderer) renderSteps(ctx context.Context, cv ocm.ComponentVersion, req Request, p *plan.Plan, out *Result, ectx *errdef.Error) (origins, error) {
	var from origins
	if r.allowances().requireImages {
		from = origins{}
	}
	for _, step := range p.Steps {
		ectx.Resource = step.Resource.Identity().String()
		if r.signatures != nil {
			if err := requireSignedDigest(step.Resource); err != nil {
				return nil, err
			}
		}
		var objs []manifests.Object
		if step.Objects != nil {
			objs = manifests.DeepCopy(step.Objects)
		} else {
			var err error
			from := cv
			if step.Component != nil {
				from = step.Component // a resource of a referenced component
			}
			if objs, err = r.renderStep(ctx, from, step, req); err != nil {
				return nil, err
			}
		}
		if step.Ordering != nil {
			if err := hooks.Apply(objs, *step.Ordering); err != nil {
				return nil, err
			}
		}
		if r.allowances().provenance || req.Provenance {
			annotateProvenance(objs, cv, step.Resource, out.Signatures)
		}
		from.add(objs, ectx.Resource)
		out.Objects = append(out.Objects, objs...)
	}
	return from, nil
}

// finish runs the plan's finishing work over the whole output (the steps'
// in step order, then the plan's), then gives Namespaces and CRDs their
// default place: last, so that patches are taken into account. When the
// output uses sync waves, Namespaces and CRDs without a wave of their own
// go before every wave (a no-op otherwise; see hooks.ApplyDefaults).
func finish(ctx context.Context, p *plan.Plan, objs []manifests.Object) ([]manifests.Object, error) {
	var err error
	for _, step := range p.Steps {
		for _, f := range step.Finish {
			if objs, err = f.Finish(ctx, objs); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range p.Finish {
		if objs, err = f.Finish(ctx, objs); err != nil {
			return nil, err
		}
	}
	hooks.ApplyDefaults(objs)
	return objs, nil
}

func validate(req Request) error {
	var missing []string
	if req.Repository == "" {
		missing = append(missing, "repository")
	}
	if req.Component == "" {
		missing = append(missing, "component")
	}
	if req.Version == "" {
		missing = append(missing, "version")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", errdef.ErrInvalidInput, strings.Join(missing, ", "))
	}
	// Refused before anything looks them up or quotes them at length: an
	// Application's parameters are a tenant's input.
	if err := checkName("component", req.Component, maxComponentName); err != nil {
		return err
	}
	if err := checkName("version", req.Version, maxVersion); err != nil {
		return err
	}
	for _, s := range req.Resources {
		if err := checkName("resource", s, maxResourceSelector); err != nil {
			return fmt.Errorf("%w (%s)", err, errdef.Quote(s)) // no context field names it
		}
	}
	return nil
}

// Bounds of a request's names: an OCM component name is at most 255 bytes
// (ocm.ValidComponentName), a version or constraint at most 256 (what the
// resolver accepts), a resource selector (name and identity attributes) 1 KiB.
const (
	maxComponentName    = 255
	maxVersion          = 256
	maxResourceSelector = 1024
)

// checkName refuses an overlong name, or one with control characters. The
// error's context names the value (cut short); the cause does not repeat it.
func checkName(what, s string, limit int) error {
	if len(s) > limit {
		return fmt.Errorf("%w: the %s is %d bytes long, at most %d are allowed", errdef.ErrInvalidInput, what, len(s), limit)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%w: %s %s holds control characters", errdef.ErrInvalidInput, what, errdef.Quote(s))
	}
	return nil
}

// stepRenderers render a step's resource, one per way a resource type
// renders (plan.RendersOf): a new resource type is an entry of plan's
// table, and a new way of rendering one an entry here.
var stepRenderers = map[plan.Renders]func(r *Renderer, ctx context.Context, cv ocm.ComponentVersion, step plan.Step, req Request) ([]manifests.Object, error){
	plan.RendersChart: (*Renderer).renderChart,
	plan.RendersTree:  (*Renderer).renderTree,
}

func (r *Renderer) renderStep(ctx context.Context, cv ocm.ComponentVersion, step plan.Step, req Request) ([]manifests.Object, error) {
	render, ok := stepRenderers[plan.RendersOf(step.Resource.Type)]
	if !ok {
		return nil, plan.NotRenderable(step.Resource)
	}
	return render(r, ctx, cv, step, req)
}

func (r *Renderer) renderChart(ctx context.Context, cv ocm.ComponentVersion, step plan.Step, req Request) ([]manifests.Object, error) {
	res := step.Resource
	if step.Path != "" {
		// Refused before anything is fetched: ignoring it would render
		// something other than what was asked for.
		return nil, fmt.Errorf("%w: path %s: resource %s is a helmChart; a path (--path, parameter path) selects an entry in a directoryTree resource",
			errdef.ErrInvalidInput, errdef.Quote(step.Path), res.Identity())
	}
	c, err := r.access.Read(ctx, cv, res)
	if err != nil {
		return nil, err
	}
	chart, err := access.ChartArchive(c)
	if err != nil {
		return nil, err
	}
	return helm.Render(ctx, chart, helm.Options{
		ReleaseName: step.ReleaseName,
		Namespace:   step.Namespace,
		KubeVersion: req.KubeVersion,
		APIVersions: req.APIVersions,
		Values:      step.Values,
		CRDs:        r.helmCRDs,
		Charts:      r.helmCharts,
	})
}

// renderTree streams the tree from where the blob lives, unpacked as it is
// read and verified at its end (see access.Resolver.ReadTree): a large
// tree is never held twice.
func (r *Renderer) renderTree(ctx context.Context, cv ocm.ComponentVersion, step plan.Step, req Request) ([]manifests.Object, error) {
	res := step.Resource
	entry, err := plan.EntryPath(step.Path, *res)
	if err != nil {
		return nil, err
	}
	tree, err := r.access.ReadTree(ctx, cv, res, r.archiveOptions...)
	if err != nil {
		return nil, err
	}
	app, err := applicationOverlayOption(req, res)
	if err != nil {
		return nil, err
	}
	objs, err := kustomize.Render(ctx, tree, entry, kustomize.WithOverlay(step.Overlay), app)
	if noEntry := (*kustomize.NoEntryError)(nil); errors.As(err, &noEntry) {
		return nil, fmt.Errorf("%w: with --path, the parameter path, a definition's path, or the resource label %s", err, EntryPathLabel)
	}
	return objs, err
}
