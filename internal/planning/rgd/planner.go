package rgd

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/platform"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/cel"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/graph"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Prefix in the definition parameter (and --definition) chooses an RGD and
// the deployer block: "rgd:" (the root RGD), "rgd:NAME" (the RGD resource
// NAME), each optionally followed by "@flux" or "@argocd".
const Prefix = "rgd:"

// Deployer blocks.
const (
	DeployerArgoCD = "argocd"
	DeployerFlux   = "flux"
)

// DefaultTimeout bounds the evaluation of a whole RGD (every expression is
// bounded on its own too).
const DefaultTimeout = 20 * time.Second

// GraphPlanner plans a component version from its RGD when it has one and no
// ComponentDeployment definition applies; otherwise it is Config. Register
// it as the renderer's planner in place of Config.
type GraphPlanner struct {
	Config *deployment.DefinitionPlanner
	// Timeout bounds the evaluation of one RGD (default DefaultTimeout).
	Timeout time.Duration
}

var _ plan.Planner = (*GraphPlanner)(nil)
var _ plan.PackageChecker = (*GraphPlanner)(nil)
var _ plan.SelfRendering = (*GraphPlanner)(nil)

// Wrap is the planner for a renderer: c, and RGDs where c has no definition.
func Wrap(c *deployment.DefinitionPlanner) *GraphPlanner { return &GraphPlanner{Config: c} }

// limits is the CEL sandbox of the RGD's expressions: the definitions'.
func (p *GraphPlanner) limits() cel.Limits {
	if p.Config == nil {
		return cel.Limits{}
	}
	return cel.Limits{CostLimit: p.Config.CostLimit, Timeout: p.Config.ExprTimeout}
}

func (p *GraphPlanner) config() *deployment.DefinitionPlanner {
	if p.Config == nil {
		return &deployment.DefinitionPlanner{}
	}
	return p.Config
}

// choice is what the request asks for.
type choice struct {
	rgd      bool   // an RGD is asked for explicitly
	name     string // its resource, "" for the root one
	deployer string // "" for the default
}

// parseChoice reads the definition parameter: rgd:[NAME][@flux|@argocd],
// or resource:NAME naming an RGD resource.
func parseChoice(spec string) (choice, error) {
	spec = strings.TrimSpace(spec)
	rest, ok := strings.CutPrefix(spec, Prefix)
	if !ok {
		return choice{}, nil
	}
	c := choice{rgd: true}
	if name, dep, ok := strings.Cut(rest, "@"); ok {
		if dep != DeployerArgoCD && dep != DeployerFlux {
			return c, fmt.Errorf("%w: definition %s: deployer %s is not %s or %s", errdef.ErrInvalidInput, errdef.Quote(spec), errdef.Quote(dep), DeployerArgoCD, DeployerFlux)
		}
		rest, c.deployer = name, dep
	}
	c.name = rest
	return c, nil
}

// selection is what a request renders: a ComponentDeployment (rgd nil) or an RGD.
type selection struct {
	rgd      *RGD
	all      []*RGD // every RGD of the component, for chains
	deployer string
}

// choose decides between a ComponentDeployment and an RGD: an explicit
// definition file or resource wins, then a shipped ComponentDeployment,
// then the component's RGDs. RGDs of referenced components are read when
// the component has none of its own and either an RGD is asked for or the
// component reads as a platform (references, no renderable resource).
func (p *GraphPlanner) choose(ctx context.Context, cv ocm.ComponentVersion, req plan.Input) (*selection, error) {
	c, err := parseChoice(req.DefinitionFile)
	if err != nil {
		return nil, err
	}
	if !c.rgd {
		file, err := p.fileRGD(ctx, cv, req)
		if err != nil || file != nil {
			return file, err
		}
		c = p.resourceChoice(ctx, cv, req)
		if !c.rgd && definitionApplies(cv.Descriptor(), req) {
			return nil, nil
		}
	}
	all, err := p.availableRGDs(ctx, cv, req, c)
	if err != nil {
		return nil, err
	}
	sel := &selection{all: all, deployer: c.deployer}
	if c.name != "" {
		return p.chooseNamed(ctx, cv, req, sel, c.name)
	}
	return chooseRoot(sel, c, req.DefinitionFile)
}

// fileRGD is the selection of a definition file that is an RGD (by its
// kind), read as the request reads its files (confined to the
// Application's directory); nil when the parameter names no file or a
// file of another kind (a ComponentDeployment, for package deployment). The
// component's own RGDs stay available to its chained nodes.
func (p *GraphPlanner) fileRGD(ctx context.Context, cv ocm.ComponentVersion, req plan.Input) (*selection, error) {
	spec := strings.TrimSpace(req.DefinitionFile)
	if spec == "" || strings.HasPrefix(spec, deployment.ResourcePrefix) {
		return nil, nil
	}
	data, err := req.ReadFile(param.Definition, spec)
	if err != nil || !graph.LooksLikeRGD(data) {
		return nil, nil // package deployment reads it, and says why it cannot
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil || head.Kind != graph.Kind {
		return nil, nil
	}
	g, err := graph.Decode("ResourceGraphDefinition file "+errdef.Quote(spec), data)
	if err != nil {
		return nil, err
	}
	g.Source = fmt.Sprintf("ResourceGraphDefinition %s (file %s)", g.Name, errdef.Quote(spec))
	// The objects it emits come from the file: a resource of its own that
	// no descriptor digest (so no signature) covers.
	r := &RGD{RGD: g, Resource: &ocm.Resource{ElementMeta: ocm.ElementMeta{Name: "definition-file"}, Type: "resourceGraphDefinition"}}
	all, err := p.findRGDs(ctx, req.ResourceReader(), cv)
	if err != nil {
		return nil, err
	}
	var others []*RGD
	for _, o := range all {
		if o.Schema.Kind != g.Schema.Kind {
			others = append(others, o)
		}
	}
	return &selection{rgd: r, all: append([]*RGD{r}, others...)}, nil
}

// resourceChoice is the choice of a definition parameter resource:NAME
// that names a readable RGD resource of the component; else none.
func (p *GraphPlanner) resourceChoice(ctx context.Context, cv ocm.ComponentVersion, req plan.Input) choice {
	spec := strings.TrimSpace(req.DefinitionFile)
	name, ok := strings.CutPrefix(spec, deployment.ResourcePrefix)
	if !ok {
		return choice{}
	}
	id, err := ocm.ParseIdentity(name)
	if err != nil {
		return choice{}
	}
	res, err := cv.Descriptor().Resource(id)
	if err != nil || !isRGDCandidate(res) {
		return choice{}
	}
	if r, err := p.readRGD(ctx, req.ResourceReader(), cv, res, true); err != nil || r == nil {
		return choice{}
	}
	return choice{rgd: true, name: name}
}

// definitionApplies: what renders is no RGD: a definition file or
// resource, resources chosen by the request (rendered as they are, as
// before RGDs were read), or a ComponentDeployment the component ships.
func definitionApplies(d *ocm.Descriptor, req plan.Input) bool {
	if strings.TrimSpace(req.DefinitionFile) != "" || len(req.Resources) > 0 {
		return true
	}
	for i := range d.Resources {
		if d.Resources[i].Type == deployment.ResourceType {
			return true
		}
	}
	return false
}

// availableRGDs are the component's RGDs, else, when it has none and an
// RGD is asked for (not through a reference path) or it reads as a
// platform, those of the components it references.
func (p *GraphPlanner) availableRGDs(ctx context.Context, cv ocm.ComponentVersion, req plan.Input, c choice) ([]*RGD, error) {
	all, err := p.findRGDs(ctx, req.ResourceReader(), cv)
	if err != nil {
		return nil, err
	}
	d := cv.Descriptor()
	refPath, _ := splitName(c.name)
	if len(all) == 0 && len(d.References) > 0 && (c.rgd || platformLike(d)) && len(refPath) == 0 {
		return p.referencedRGDs(ctx, req.ResourceReader(), cv)
	}
	return all, nil
}

// chooseNamed selects the RGD rgd:NAME names: a resource of the
// component, or one reached through references (REF/…/RESOURCE).
func (p *GraphPlanner) chooseNamed(ctx context.Context, cv ocm.ComponentVersion, req plan.Input, sel *selection, name string) (*selection, error) {
	refPath, resName := splitName(name)
	id, err := ocm.ParseIdentity(resName)
	if err != nil {
		return nil, fmt.Errorf("definition %s: %w", errdef.Quote(req.DefinitionFile), err)
	}
	if len(refPath) > 0 {
		return p.chooseReferenced(ctx, cv, req, sel, refPath, id)
	}
	for _, r := range sel.all {
		if len(r.refPath) == 0 && r.Resource.Identity().Matches(id) {
			sel.rgd = r
			return sel, nil
		}
	}
	return nil, fmt.Errorf("%w: definition %s: the component has no ResourceGraphDefinition resource %s (it has: %s)", errdef.ErrNotFound, errdef.Quote(req.DefinitionFile), errdef.Quote(name), names(sel.all))
}

// chooseReferenced selects the RGD resource id of the component refPath
// leads to. Chains may use the other RGDs of the deployed component and
// of the one that ships it.
func (p *GraphPlanner) chooseReferenced(ctx context.Context, cv ocm.ComponentVersion, req plan.Input, sel *selection, refPath []string, id ocm.Identity) (*selection, error) {
	r, err := p.namedReferencedRGD(ctx, req.ResourceReader(), cv, refPath, id)
	if err != nil {
		return nil, fmt.Errorf("definition %s: %w", errdef.Quote(req.DefinitionFile), err)
	}
	more, err := p.findRGDsIn(ctx, req.ResourceReader(), r.cv, refPath)
	if err != nil {
		return nil, err
	}
	sel.all = append(slices.Clone(sel.all), r)
	for _, m := range more {
		if !m.Resource.Identity().Matches(r.Resource.Identity()) {
			sel.all = append(sel.all, m)
		}
	}
	if err := uniqueKinds(sel.all); err != nil {
		return nil, err
	}
	sel.rgd = r
	return sel, nil
}

// chooseRoot selects the one RGD no other instantiates; no RGD at all is
// no selection unless an RGD was asked for.
func chooseRoot(sel *selection, c choice, definition string) (*selection, error) {
	if len(sel.all) == 0 {
		if c.rgd {
			return nil, fmt.Errorf("%w: definition %s: the component ships no ResourceGraphDefinition, nor do the components it references", errdef.ErrNotFound, errdef.Quote(definition))
		}
		return nil, nil
	}
	roots := rootRGDs(sel.all)
	switch len(roots) {
	case 1:
		sel.rgd = roots[0]
		return sel, nil
	case 0:
		return nil, fmt.Errorf("%w: the component's ResourceGraphDefinitions (%s) instantiate each other in a cycle: choose one with the definition parameter rgd:NAME", errdef.ErrInvalidInput, names(sel.all))
	default:
		return nil, fmt.Errorf("%w: the component ships %d root ResourceGraphDefinitions (%s): choose one with the definition parameter rgd:NAME", errdef.ErrInvalidInput, len(roots), names(roots))
	}
}

// RendersItself implements plan.SelfRendering: a component that reads as
// a platform (references, no renderable resource of its own) is rendered
// from an RGD of a referenced component when no definition decides and
// exactly one root RGD is found (OCM's helm-nested). Several roots, or an
// RGD that cannot be read, leave it a platform; a digest or signature
// failure is an error.
func (p *GraphPlanner) RendersItself(ctx context.Context, cv ocm.ComponentVersion, in plan.Input) (bool, error) {
	if strings.TrimSpace(in.DefinitionFile) != "" || len(in.Resources) > 0 {
		return false, nil
	}
	sel, err := p.choose(ctx, cv, in)
	if err != nil {
		if errors.Is(err, errdef.ErrDigestMismatch) || errors.Is(err, errdef.ErrSignature) || errors.Is(err, errdef.ErrLimitExceeded) {
			return false, err
		}
		return false, nil
	}
	return sel != nil && sel.rgd != nil, nil
}

// splitName splits the NAME of rgd:NAME into reference names and the
// resource identity: "nested-rgd/kro-rgd" is resource kro-rgd of the
// component the reference nested-rgd names; "a/b/res" follows two
// references. Only the part before the first "," (the extra identity of
// the resource) is split.
func splitName(name string) ([]string, string) {
	head := name
	if i := strings.IndexByte(name, ','); i >= 0 {
		head = name[:i]
	}
	i := strings.LastIndexByte(head, '/')
	if i < 0 {
		return nil, name
	}
	return strings.Split(name[:i], "/"), name[i+1:]
}

// platformLike: references and no resource that renders without being named.
func platformLike(d *ocm.Descriptor) bool {
	if len(d.References) == 0 {
		return false
	}
	for i := range d.Resources {
		if plan.Renderable(d.Resources[i].Type) {
			return false
		}
	}
	return true
}

func names(rs []*RGD) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Label()+" (kind "+r.Schema.Kind+")")
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// rootRGDs are the RGDs whose kind no other RGD of the component instantiates.
func rootRGDs(all []*RGD) []*RGD {
	used := map[string]bool{}
	for _, r := range all {
		for _, n := range r.Nodes {
			g, k := graph.GVK(n.Template)
			if g == "kro.run" && k != r.Schema.Kind {
				used[k] = true
			}
		}
	}
	var out []*RGD
	for _, r := range all {
		if !used[r.Schema.Kind] {
			out = append(out, r)
		}
	}
	return out
}

// isRGDCandidate: a resource that may hold an RGD: the RGD media type, or
// a blob of YAML (or unknown) content.
func isRGDCandidate(res *ocm.Resource) bool {
	mt := resourceMediaType(res)
	if mt == MediaType {
		return true
	}
	if res.Type != "blob" && res.Type != "resourceGraphDefinition" && res.Type != "kroRGD" {
		return false
	}
	switch {
	case mt == "", strings.Contains(mt, "yaml"), strings.Contains(mt, "json"), mt == "text/plain", mt == "application/octet-stream":
		return true
	}
	return false
}

// resourceMediaType is the media type of a resource's access without its
// parameters, lower case: OCM's CLI records a File/v1 input as
// "text/plain; charset=utf-8". An unparsable one is kept as it is
// (trimmed, lower case), so that it matches nothing known.
func resourceMediaType(res *ocm.Resource) string {
	mt, _ := res.Access.Fields["mediaType"].(string)
	mt = strings.TrimSpace(mt)
	if mt == "" {
		return ""
	}
	if base, _, err := mime.ParseMediaType(mt); err == nil {
		return base
	}
	return strings.ToLower(mt)
}

// findRGDs reads every RGD of the component: resources with the RGD media
// type (an error when unreadable) and blobs that turn out to be one.
func (p *GraphPlanner) findRGDs(ctx context.Context, rd plan.Reader, cv ocm.ComponentVersion) ([]*RGD, error) {
	out, err := p.findRGDsIn(ctx, rd, cv, nil)
	if err != nil {
		return nil, err
	}
	return out, uniqueKinds(out)
}

// findRGDsIn reads the RGDs of cv, reached through the references refPath
// (nil: the component being deployed).
func (p *GraphPlanner) findRGDsIn(ctx context.Context, rd plan.Reader, cv ocm.ComponentVersion, refPath []string) ([]*RGD, error) {
	d := cv.Descriptor()
	var out []*RGD
	for i := range d.Resources {
		res := &d.Resources[i]
		if !isRGDCandidate(res) {
			continue
		}
		r, err := p.readRGD(ctx, rd, cv, res, resourceMediaType(res) == MediaType)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue
		}
		if len(refPath) > 0 {
			r.cv, r.refPath = cv, slices.Clone(refPath)
			r.Source = fmt.Sprintf("ResourceGraphDefinition %s (resource %s of %s:%s, reference %s)", r.Name, res.Identity(), d.Name, d.Version, strings.Join(refPath, "/"))
		}
		out = append(out, r)
	}
	return out, nil
}

// uniqueKinds refuses two RGDs that define one kind: a chained node could
// not tell which one it instantiates.
func uniqueKinds(all []*RGD) error {
	kinds := map[string]string{}
	for _, r := range all {
		if other, ok := kinds[r.Schema.Kind]; ok {
			return fmt.Errorf("%w: resources %s and %s both define the kind %s", errdef.ErrInvalidInput, other, r.Label(), r.Schema.Kind)
		}
		kinds[r.Schema.Kind] = r.Label()
	}
	return nil
}

// Bounds of the search for RGDs in referenced components (the platform's
// reference depth; a count so that a wide graph is not read whole).
const (
	maxRefDepth      = platform.DefaultMaxDepth
	maxRefComponents = 64
)

// referencedRGDs reads the RGDs of the components cv references,
// breadth-first (nearest first), each reached through references whose
// digests are checked (follow); a component reached twice is read once.
func (p *GraphPlanner) referencedRGDs(ctx context.Context, rd plan.Reader, cv ocm.ComponentVersion) ([]*RGD, error) {
	type item struct {
		cv   ocm.ComponentVersion
		path []string
	}
	root := cv.Descriptor()
	seen := map[string]bool{root.Name + ":" + root.Version: true}
	queue := []item{{cv, nil}}
	var out []*RGD
	visited := 0
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		d := it.cv.Descriptor()
		for _, ref := range d.References {
			key := ref.ComponentName + ":" + ref.Version
			if seen[key] {
				continue
			}
			seen[key] = true
			path := append(slices.Clone(it.path), ref.Name)
			if len(path) > maxRefDepth {
				return nil, fmt.Errorf("%w: looking for ResourceGraphDefinitions: component references nest deeper than %d below %s:%s", errdef.ErrLimitExceeded, maxRefDepth, root.Name, root.Version)
			}
			visited++
			if visited > maxRefComponents {
				return nil, fmt.Errorf("%w: looking for ResourceGraphDefinitions: more than %d referenced components below %s:%s; name one with the definition parameter rgd:REFERENCE/RESOURCE", errdef.ErrLimitExceeded, maxRefComponents, root.Name, root.Version)
			}
			id := ocm.Identity{"name": ref.Name}
			for k, v := range ref.ExtraIdentity {
				id[k] = v
			}
			child, err := p.follow(ctx, it.cv, id)
			if err != nil {
				return nil, fmt.Errorf("looking for ResourceGraphDefinitions: %s:%s: %w", d.Name, d.Version, err)
			}
			rs, err := p.findRGDsIn(ctx, rd, child, path)
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
			queue = append(queue, item{child, path})
		}
	}
	return out, uniqueKinds(out)
}

// namedReferencedRGD reads the RGD rgd:REF/…/RESOURCE names.
func (p *GraphPlanner) namedReferencedRGD(ctx context.Context, rd plan.Reader, cv ocm.ComponentVersion, refPath []string, id ocm.Identity) (*RGD, error) {
	if len(refPath) > maxRefDepth {
		return nil, fmt.Errorf("%w: %d references, more than %d", errdef.ErrLimitExceeded, len(refPath), maxRefDepth)
	}
	at := cv
	for i, name := range refPath {
		if name == "" {
			return nil, fmt.Errorf("%w: reference %d of the path is empty", errdef.ErrInvalidInput, i+1)
		}
		next, err := p.follow(ctx, at, ocm.Identity{"name": name})
		if err != nil {
			return nil, err
		}
		at = next
	}
	d := at.Descriptor()
	res, err := d.Resource(id)
	if err != nil {
		return nil, fmt.Errorf("component %s:%s (reference %s): %w", d.Name, d.Version, strings.Join(refPath, "/"), err)
	}
	r, err := p.readRGD(ctx, rd, at, res, true)
	if err != nil {
		return nil, err
	}
	r.cv, r.refPath = at, slices.Clone(refPath)
	r.Source = fmt.Sprintf("ResourceGraphDefinition %s (resource %s of %s:%s, reference %s)", r.Name, res.Identity(), d.Name, d.Version, strings.Join(refPath, "/"))
	return r, nil
}

// readRGD reads and decodes one candidate; nil, nil when it is not an RGD
// and must not be one.
func (p *GraphPlanner) readRGD(ctx context.Context, rd plan.Reader, cv ocm.ComponentVersion, res *ocm.Resource, must bool) (*RGD, error) {
	if p.Config != nil && p.Config.RequireDigests && (res.Digest == nil || res.Digest.Value == "") {
		if !must {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: resource %s has no digest, so no signature covers it", errdef.ErrSignature, res.Identity())
	}
	data, err := rd.ReadDocument(ctx, cv, res, yamlfile.MaxDocumentSize)
	if err != nil {
		if must {
			return nil, fmt.Errorf("ResourceGraphDefinition resource %s: %w", res.Identity(), err)
		}
		if errors.Is(err, errdef.ErrDigestMismatch) || errors.Is(err, errdef.ErrSignature) {
			return nil, fmt.Errorf("resource %s: %w", res.Identity(), err)
		}
		return nil, nil
	}
	if !must && !graph.LooksLikeRGD(data) {
		return nil, nil
	}
	g, err := graph.Decode("ResourceGraphDefinition resource "+res.Identity().String(), data)
	if err != nil {
		return nil, err
	}
	g.Source = fmt.Sprintf("ResourceGraphDefinition %s (resource %s)", g.Name, res.Identity())
	return &RGD{RGD: g, Resource: res}, nil
}

// LoadParameters is the instance parameters a request has: its
// ComponentDeployment's, or its RGD's (nil when it has neither), for the
// parameter announcement.
func (p *GraphPlanner) LoadParameters(ctx context.Context, cv ocm.ComponentVersion, req plan.Input) (*deployment.Definition, error) {
	sel, err := p.choose(ctx, cv, req)
	if err != nil {
		return nil, err
	}
	if sel == nil {
		return p.config().LoadDefinition(ctx, cv, req)
	}
	inst, err := sel.rgd.Parameters()
	if err != nil {
		return nil, err
	}
	return inst.Definition, nil
}

// CheckPackage implements plan.PackageChecker: a platform package's
// parameters against its child's definition or RGD.
func (p *GraphPlanner) CheckPackage(ctx context.Context, child ocm.ComponentVersion, in plan.Input) error {
	sel, err := p.choose(ctx, child, in)
	if err != nil {
		return err
	}
	if sel == nil {
		return p.config().CheckPackage(ctx, child, in)
	}
	inst, err := sel.rgd.Parameters()
	if err != nil {
		return err
	}
	_, err = inst.Definition.ResolveParameters(in.Parameters)
	return err
}

// Plan implements plan.Planner.
func (p *GraphPlanner) Plan(ctx context.Context, cv ocm.ComponentVersion, req plan.Input) (*plan.Plan, error) {
	sel, err := p.choose(ctx, cv, req)
	if err != nil {
		return nil, err
	}
	if sel == nil {
		return p.config().Plan(ctx, cv, req)
	}
	if err := unusedInputs(sel.rgd, req); err != nil {
		return nil, err
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := cv.Descriptor()
	report := &explain.Report{Component: d.Name, Version: d.Version,
		Definition: fmt.Sprintf("%s, kind %s (kro, rendered statically)", sel.rgd.Source, sel.rgd.Schema.Kind)}
	e := &evaluation{p: p, cv: cv, req: req, all: sel.all, deployer: sel.deployer, report: report}
	inst, err := sel.rgd.Parameters()
	if err != nil {
		return nil, err
	}
	params, err := inst.Definition.ResolveParameters(req.Parameters)
	if err != nil {
		return nil, err
	}
	report.Parameters = params
	appName := req.Application
	if appName == "" {
		appName = req.ReleaseName
	}
	meta := map[string]any{"name": appName, "namespace": req.Namespace}
	ispec, err := inst.Spec(params, req.Parameters)
	if err != nil {
		return nil, err
	}
	steps, err := e.run(ectx, sel.rgd, ispec, meta, 0, 0, nil)
	if err != nil {
		if ectx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("%w: %s: evaluating the graph took longer than %s", errdef.ErrLimitExceeded, sel.rgd.Source, timeout)
		}
		return nil, err
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%w: %s: the graph renders nothing (no deployer block, no object to emit)", errdef.ErrInvalidInput, sel.rgd.Source)
	}
	steps = e.waves(steps)
	out := &plan.Plan{}
	for _, s := range steps {
		out.Steps = append(out.Steps, s.Step)
	}
	if req.Localize && p.Config != nil {
		report.Notes = append(report.Notes, "localize: the RGD's own localisation (its OCM Resource statuses) applies; automatic localisation is not run over an RGD's output")
	}
	if p.Config != nil && p.Config.Explain != nil {
		out.Finish = append(out.Finish, deployment.Explanation{Report: report, Explain: p.Config.Explain})
	}
	return out, nil
}

// unusedInputs refuses what an RGD render would ignore: its deployer
// blocks and nodes say what renders, with which values and paths, so a
// value file or a path the Application gives would silently do nothing.
func unusedInputs(r *RGD, req plan.Input) error {
	why := "the ResourceGraphDefinition's nodes and deployer blocks decide what renders and with which values; set its instance parameters (parameters) instead"
	switch {
	case len(req.ValueFiles) > 0:
		return fmt.Errorf("%w: %s %s: %s renders: %s", errdef.ErrInvalidInput, param.ValueFiles, errdef.Quote(req.ValueFiles[0]), r.Source, why)
	case strings.TrimSpace(req.Path) != "":
		return fmt.Errorf("%w: %s %s: %s renders: %s", errdef.ErrInvalidInput, param.Path, errdef.Quote(req.Path), r.Source, why)
	case len(req.Values) > 0, len(req.Set) > 0, len(req.SetString) > 0, len(req.SetJSON) > 0, len(req.SetFile) > 0:
		return fmt.Errorf("%w: %s: %s renders: %s", errdef.ErrInvalidInput, param.Values, r.Source, why)
	}
	return nil
}
