package argocdocm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// repositoryLocation is the repository to open when req is not confined:
// a relative path that exists inside Dir is a CTF or component archive
// there; anything else (a registry spec, an absolute path) is returned as
// it is.
func repositoryLocation(req Request) string {
	if req.Dir == "" || req.Repository == "" || filepath.IsAbs(req.Repository) {
		return req.Repository
	}
	p := filepath.Join(req.Dir, req.Repository)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return req.Repository
}

// location is where a request's repository is, decided once per render
// (locate): what Renderer.Open opens, and what the planner learns of it
// (plan.Input.Registry), so that no later step looks at the file system to
// tell a path from a registry.
type location struct {
	req Request
	// spec is the repository parsed, err why it did not parse (open
	// reports it).
	spec oci.Spec
	err  error
	// name is what open gets unconfined (repositoryLocation).
	name string
}

// locate decides where req's repository is: unconfined, a relative path
// that exists inside Dir, else the spec as written; confined, a name that
// exists inside Root is a local repository, and anything else a registry.
func locate(req Request) location {
	l := location{req: req}
	if req.Root == nil {
		l.name = repositoryLocation(req)
		l.spec, l.err = oci.ParseSpec(l.name)
	} else {
		l.spec, l.err = oci.ParseSpecIn(req.Repository, req.Root.Exists)
	}
	return l
}

// local reports whether the repository is a CTF or component archive.
func (l location) local() bool { return l.err == nil && l.spec.Type == oci.TypeCTF }

// registry is the registry and path of a registry repository
// ("host[:port]/path", scheme and trailing slash cut), "" for a local one.
func (l location) registry() string {
	if l.err != nil || l.local() {
		return ""
	}
	s := strings.TrimSpace(l.req.Repository)
	for _, p := range []string{"oci://", "http://", "https://"} {
		s = strings.TrimPrefix(s, p)
	}
	return strings.TrimSuffix(s, "/")
}

// open opens the repository. Unconfined (Root nil), open gets the
// location's name. Confined, a local repository in any form (a path,
// file://, ctf::, an OCM spec's filePath) is opened inside Root and read
// through that handle; only a registry reaches open, as an explicit spec
// that no later step can take for a path.
//
// A CTF or component archive file is opened with opts (an unpack cache:
// ctf.WithUnpacker, ctf.WithCache) and unpacked within ctx.
// allowLocal, when set, is asked before a CTF or component archive is
// opened, confined or not (the rule's localArchives): the one place it is.
func (l location) open(ctx context.Context, open func(context.Context, string) (ocm.Repository, error), allowLocal func() error, opts ...ctf.Option) (ocm.Repository, error) {
	if allowLocal != nil && l.local() {
		if err := allowLocal(); err != nil {
			return nil, err
		}
	}
	r := l.req
	if r.Root == nil {
		return open(ctx, l.name)
	}
	if l.err != nil {
		return nil, l.err
	}
	sp := l.spec
	if !l.local() {
		explicit, err := json.Marshal(sp)
		if err != nil {
			return nil, err
		}
		return open(ctx, string(explicit))
	}
	name := sp.FilePath
	f, d, err := r.Root.Open(param.Repository, name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if name == strings.TrimSpace(r.Repository) {
			// A bare name: say why it was not taken for a registry.
			return nil, fmt.Errorf("%w: %w (%s)", errdef.ErrNotFound, err, oci.RegistryHint)
		}
		return nil, fmt.Errorf("%w: %w", errdef.ErrNotFound, err)
	}
	display := errdef.Quote(name)
	if d != nil {
		return ctf.OpenDir(d, display)
	}
	// The render server's memo of archives keys this file by where it is in
	// which Application directory, so that no other Application's file can hit it.
	return ctf.OpenFile(f, display, slices.Concat(opts, []ctf.Option{ctf.WithContext(ctx), ctf.WithOrigin(r.Root.Origin(name))})...)
}

// Renderer runs requests. Build one per generation with Engine.Renderer,
// which applies the generation's sidecar rule (Generation): what it allows
// and verifies is fixed when it is built. The zero value renders offline
// from CTFs and component archives under no rule: no signatures, local
// archives allowed, no image origin guard, platform children inherit their
// parent's project and destination. Its exported fields observe a render;
// none of them changes what is allowed.
type Renderer struct {
	// Opened, when set, sees every repository a render opens, local or
	// remote, under the name the request gave it, and may wrap it (debug
	// logging, keeping it for error hints); nil keeps it as opened.
	Opened func(name string, repo ocm.Repository) ocm.Repository
	// Log receives notes for people (e.g. the resolved version); default io.Discard.
	Log io.Writer
	// Explain, when set, receives the report of each render's plan (what
	// `render --explain` prints): the definition, each parameter and its
	// source, the values and patches, the placement of objects.
	Explain func(Explanation)

	// Set by Engine.Renderer; the zero values render offline.

	// open opens Request.Repository; nil: openOffline. A confined request
	// opens local repositories itself, inside its Root.
	open func(ctx context.Context, spec string) (ocm.Repository, error)
	// rule is the generation's sidecar rule (Generation.Rule, with a
	// Person's decisions), what the operator allows every request of this
	// renderer; the renderer applies it in one place (allowances). nil (the
	// zero Renderer): local archives allowed, no image origin guard,
	// platform children inherit their parent's project and destination.
	rule *policy.Rule
	// signatures, when set, must verify before anything renders (keys by
	// signature name; references are verified recursively), and every
	// rendered resource must carry a digest the signature covers: the
	// rule's signatures (or a Person's), built by Engine.verifier.
	signatures *signing.Verifier

	// planner decides what each request renders, from the request's
	// plan.Input; nil: the planner of deployment definitions, RGDs and
	// instance parameters (packages config and rgd), built per
	// render from Log, signatures and Explain. Tests replace it
	// (export_test.go).
	planner plan.Planner

	// access reads resource content; its Artifacts source is nil offline.
	access access.Resolver
	// archiveOptions bound directory resources when they are unpacked
	// (WithArchiveLimits; nil: the defaults of package archive).
	archiveOptions []archive.Option
	// helmCRDs keeps charts' decoded CRDs between renders (the render
	// server's, see helm.CRDCache); nil decodes them in every render.
	helmCRDs *helm.CRDCache
	// helmCharts keeps loaded charts between renders (the render server's,
	// see helm.ChartCache); nil loads each chart in every render.
	helmCharts *helm.ChartCache
	// ctfOptions open a CTF or component archive file of the Application's
	// checkout: an unpack cache (ctf.WithUnpacker, ctf.WithCache); nil
	// unpacks a tgz into a temporary file. Either way within the render's
	// context.
	ctfOptions []ctf.Option
}

func (r *Renderer) log() io.Writer {
	if r.Log == nil {
		return io.Discard
	}
	return r.Log
}

// openOffline opens a CTF (directory, tar, tgz) or a component archive.
func openOffline(_ context.Context, spec string) (ocm.Repository, error) {
	return ctf.Open(spec)
}

// Result is a rendered request: Version is the version rendered (a
// constraint in the request resolves to it).
type Result struct {
	Component, Version string
	DescriptorDigest   string
	Signatures         []string // verified signature names
	// Objects are the manifests in output order, each a Kubernetes object
	// as decoded JSON (values string, float64 or int64, bool, nil, []any
	// and map[string]any).
	Objects []map[string]any
}

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

// plannerOf is r's planner: the deployment definitions' (ComponentDeployment,
// then a kro RGD the component ships), unless a test set another.
func (r *Renderer) plannerOf() plan.Planner {
	if r.planner != nil {
		return r.planner
	}
	return rgd.Wrap(r.definitions())
}

// definitions is the planner of deployment definitions for one render.
func (r *Renderer) definitions() *deployment.DefinitionPlanner {
	p := &deployment.DefinitionPlanner{Log: r.log(), RequireDigests: r.signatures != nil}
	if r.Explain != nil {
		p.Explain = func(rep *explain.Report) { r.Explain(rep) }
	}
	return p
}

// planInput is what r's planner plans req from: the request itself,
// where its repository was found (registry, "" for a local one) and r's
// verified access to resources.
func (r *Renderer) planInput(req Request, registry string) plan.Input {
	return plan.Input{Request: req, Registry: registry, Reader: plan.NewResources(r.access, r.archiveOptions...)}
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

// Renderable reports whether the pipeline can render a resource type.
func Renderable(t string) bool { return plan.Renderable(t) }

// SelectResources returns the resources named by selectors ("name" or
// "name,key=value"), or the only renderable resource when there are none.
func SelectResources(d *ocm.Descriptor, selectors []string) ([]*ocm.Resource, error) {
	return plan.SelectResources(d, selectors)
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
