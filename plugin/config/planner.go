package config

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/pipeline"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/render/manifests"
)

// Planner plans a component version from its deployment definition (see
// LoadDefinition) and post-processes what was rendered: patches, ConfigData
// rules and automatic localisation. Register it as the Renderer's Planner
// AND as its first PostProcessor. Without a definition it plans like
// pipeline.RequestPlanner, with the component's config resources as the
// lowest value layer.
type Planner struct {
	// Access reads shipped definitions, config resources and (for rules and
	// --explain) charts and trees; nil reads offline.
	Access *access.Resolver
	// Log receives notes for people (images left alone by localisation).
	Log io.Writer
	// Explain, when set, receives the report of each render after post-processing.
	Explain func(*Report)
	// CostLimit and ExprTimeout bound each CEL expression (defaults
	// DefaultCostLimit, DefaultExprTimeout).
	CostLimit   uint64
	ExprTimeout time.Duration
	// ReadFile, a seam for tests, reads definition and values files by path
	// (Request.File). Default: Request.ReadFile, which reads inside the
	// Application's directory when the request is confined.
	ReadFile func(string) ([]byte, error)
	// RequireDigests refuses shipped definitions and config resources without
	// a resource digest (set it when signatures are enforced: only digests
	// are covered by a signature).
	RequireDigests bool

	mu      sync.Mutex
	pending map[string]*resolution
}

var (
	_ pipeline.Planner       = (*Planner)(nil)
	_ pipeline.PostProcessor = (*Planner)(nil)
)

// resolution is everything planned for one request.
type resolution struct {
	report       *Report
	steps        []pipeline.Step
	patches      []boundPatch
	autoLocalize bool
	requireAll   bool
}

// boundPatch is a patch with its target and value evaluated.
type boundPatch struct {
	source  string // where it was declared, for messages
	render  string
	targets []Target // any of them
	path    fieldpath.Path
	value   any
}

// Plan implements pipeline.Planner.
func (p *Planner) Plan(ctx context.Context, cv ocm.ComponentVersion, req pipeline.Request) (*pipeline.Plan, error) {
	r, err := p.resolve(ctx, cv, req)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.pending == nil {
		p.pending = map[string]*resolution{}
	}
	if len(p.pending) > 64 { // plans never post-processed (failed renders)
		p.pending = map[string]*resolution{}
	}
	p.pending[requestKey(cv, req)] = r
	p.mu.Unlock()
	return &pipeline.Plan{Steps: r.steps}, nil
}

// Process implements pipeline.PostProcessor.
func (p *Planner) Process(ctx context.Context, cv ocm.ComponentVersion, req pipeline.Request, objs []manifests.Object) ([]manifests.Object, error) {
	key := requestKey(cv, req)
	p.mu.Lock()
	r := p.pending[key]
	delete(p.pending, key)
	p.mu.Unlock()
	if r == nil {
		var err error
		if r, err = p.resolve(ctx, cv, req); err != nil {
			return nil, err
		}
	}
	for _, bp := range r.patches {
		objects, err := bp.apply(objs)
		if err != nil {
			return nil, err
		}
		r.report.addPatch(bp, objects)
	}
	if r.autoLocalize {
		changes, err := localize.Run(cv.Descriptor(), objs, r.requireAll, p.Log)
		if err != nil {
			return nil, err
		}
		r.report.Images = changes
		r.report.Localized = true
	}
	if p.Explain != nil {
		r.report.addOrdering(objs)
		p.Explain(r.report)
	}
	return objs, nil
}

func requestKey(cv ocm.ComponentVersion, req pipeline.Request) string {
	d := cv.Descriptor()
	b, err := json.Marshal(req)
	if err != nil {
		b = []byte(fmt.Sprintf("%#v", req))
	}
	return d.Name + ":" + d.Version + "@" + cv.DescriptorDigest() + "|" + string(b)
}

// renderPlan is one render being planned.
type renderPlan struct {
	name     string
	index    int // in the definition, -1 without one
	render   *Render
	res      *ocm.Resource
	release  string
	ns       string
	path     string
	explicit bool // valuesFrom given explicitly
}

// planner state of one resolution
type resolver struct {
	p       *Planner
	cv      ocm.ComponentVersion
	req     pipeline.Request
	def     *Definition
	eval    *Evaluator
	vars    map[string]any
	configs map[string]*configResource
	images  map[string]localize.Image
	report  *Report
}

func (p *Planner) resolve(ctx context.Context, cv ocm.ComponentVersion, req pipeline.Request) (*resolution, error) {
	d := cv.Descriptor()
	def, err := p.LoadDefinition(ctx, cv, req)
	if err != nil {
		return nil, err
	}
	rs := &resolver{p: p, cv: cv, req: req, def: def, configs: map[string]*configResource{}, images: map[string]localize.Image{},
		report: &Report{Component: d.Name, Version: d.Version, Definition: "none (the request alone, with the component's config resources)"}}
	out := &resolution{report: rs.report, autoLocalize: req.Localize}
	var plans []renderPlan
	var params []ParamValue
	if def == nil {
		if len(req.Parameters) > 0 {
			return nil, fmt.Errorf("%w: instance parameters (%s) need a deployment definition, and neither the request nor the component has one",
				errdef.ErrInvalidInput, strings.Join(sortedKeys(req.Parameters), ", "))
		}
		targets, err := pipeline.SelectResources(d, req.Resources)
		if err != nil {
			return nil, err
		}
		for _, res := range targets {
			plans = append(plans, renderPlan{name: res.Identity().String(), index: -1, res: res, release: req.ReleaseName, ns: req.Namespace, path: req.Path})
		}
		rs.vars, err = baseVars(ctx, cv, req, nil, false)
		if err != nil {
			return nil, err
		}
		rs.eval = &Evaluator{CostLimit: p.CostLimit, Timeout: p.ExprTimeout}
	} else {
		rs.report.Definition = fmt.Sprintf("%s (%s %s)", def.Source, def.Kind, def.Metadata.Name)
		if l := def.Spec.Localization; l != nil {
			out.autoLocalize = out.autoLocalize || l.Automatic
			out.requireAll = l.RequireAll
		}
		params, err = def.ResolveParameters(req.Parameters)
		if err != nil {
			return nil, err
		}
		rs.report.Parameters = params
		withRefs := false
		if b, err := json.Marshal(def.Spec); err == nil && bytes.Contains(b, []byte(VarReferences)) {
			withRefs = true
		}
		rs.vars, err = baseVars(ctx, cv, req, params, withRefs)
		if err != nil {
			return nil, err
		}
		rs.eval = &Evaluator{CostLimit: p.CostLimit, Timeout: p.ExprTimeout, Params: map[string]bool{},
			Resources: keySet(rs.vars[VarResources]), References: nil}
		for _, pv := range params {
			rs.eval.Params[pv.Name] = true
		}
		if withRefs {
			rs.eval.References = keySet(rs.vars[VarReferences])
		}
		if plans, err = rs.definitionPlans(ctx); err != nil {
			return nil, err
		}
	}
	for _, rp := range plans {
		step, patches, err := rs.plan(ctx, rp)
		if err != nil {
			return nil, err
		}
		out.steps = append(out.steps, step)
		out.patches = append(out.patches, patches...)
	}
	jobs, err := rs.jobs(ctx, plans)
	if err != nil {
		return nil, err
	}
	out.steps = append(out.steps, jobs...)
	rs.report.Expressions = rs.eval.Evaluations()
	if def != nil {
		for i := range rs.report.Expressions {
			rs.report.Expressions[i].Where = strings.TrimPrefix(rs.report.Expressions[i].Where, def.Source+": ")
		}
	}
	return out, nil
}

func keySet(v any) map[string]bool {
	out := map[string]bool{}
	if m, ok := v.(map[string]any); ok {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

// definitionPlans evaluates the renders of the definition: conditions,
// resources, release names, namespaces and paths.
func (rs *resolver) definitionPlans(ctx context.Context) ([]renderPlan, error) {
	d := rs.cv.Descriptor()
	var sels []ocm.Identity
	for _, s := range rs.req.Resources {
		id, err := ocm.ParseIdentity(s)
		if err != nil {
			return nil, err
		}
		sels = append(sels, id)
	}
	used := make([]bool, len(sels))
	var plans []renderPlan
	for i := range rs.def.Spec.Renders {
		r := &rs.def.Spec.Renders[i]
		where := fmt.Sprintf("%s: spec.renders[%d]", rs.def.Source, i)
		res, err := d.Resource(r.Resource)
		if err != nil {
			return nil, fmt.Errorf("%s.resource: %w", where, err)
		}
		if len(sels) > 0 {
			match := false
			for j, s := range sels {
				if res.Identity().Matches(s) {
					match, used[j] = true, true
				}
			}
			if !match {
				continue
			}
		}
		if !pipeline.Renderable(res.Type) {
			return nil, fmt.Errorf("%w: %s.resource: resource %s has type %s; the plugin renders helmChart and directoryTree resources",
				errdef.ErrUnsupportedMediaType, where, res.Identity(), res.Type)
		}
		rr := RenderReport{Name: r.Name, Resource: res.Identity().String(), Type: res.Type}
		if r.When != "" {
			ok, err := rs.condition(ctx, where+".when", r.When)
			if err != nil {
				return nil, err
			}
			if !ok {
				rr.Skipped = "when " + r.When + " is false"
				rs.report.Renders = append(rs.report.Renders, rr)
				continue
			}
		}
		rp := renderPlan{name: r.Name, index: i, render: r, res: res, explicit: r.ValuesFrom != nil}
		for _, f := range []struct {
			name, val, def string
			out            *string
		}{
			{"releaseName", r.ReleaseName, rs.req.ReleaseName, &rp.release},
			{"namespace", r.Namespace, rs.req.Namespace, &rp.ns},
			{"path", r.Path, rs.req.Path, &rp.path},
		} {
			*f.out = f.def
			if f.val == "" {
				continue
			}
			v, err := rs.eval.Template(ctx, where+"."+f.name, f.val, rs.vars)
			if err != nil {
				return nil, err
			}
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%w: %s.%s: %s is %s, want a string", errdef.ErrInvalidInput, where, f.name, f.val, describeValue(v))
			}
			*f.out = s
		}
		plans = append(plans, rp)
	}
	for j, ok := range used {
		if !ok {
			return nil, fmt.Errorf("%w: resource %s is not rendered by %s (it renders: %s)",
				errdef.ErrNotFound, sels[j], rs.def.Source, rs.def.renderedResources())
		}
	}
	if len(plans) == 0 {
		return nil, fmt.Errorf("%w: %s: every render is switched off by its when condition: nothing to render", errdef.ErrInvalidInput, rs.def.Source)
	}
	return plans, nil
}

func (d *Definition) renderedResources() string {
	var names []string
	for _, r := range d.Spec.Renders {
		names = append(names, r.Resource.String())
	}
	return strings.Join(names, ", ")
}

func (rs *resolver) condition(ctx context.Context, where, s string) (bool, error) {
	switch strings.TrimSpace(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	v, err := rs.eval.Template(ctx, where, s, rs.vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%w: %s: %s is %s, want true or false", errdef.ErrInvalidInput, where, s, describeValue(v))
	}
	return b, nil
}

// layerOp is one step of value layering, replayed for the report with the
// chart defaults underneath.
type layerOp func(v *Values) error

// plan builds the step and the patches of one render.
func (rs *resolver) plan(ctx context.Context, rp renderPlan) (pipeline.Step, []boundPatch, error) {
	d := rs.cv.Descriptor()
	where := "render " + rp.name
	if rp.index >= 0 {
		where = fmt.Sprintf("%s: spec.renders[%d]", rs.def.Source, rp.index)
	}
	isChart := rp.res.Type == pipeline.TypeHelmChart
	var ops []layerOp
	var configs []*configResource

	// 1. config resources
	var cfgRes []*ocm.Resource
	if rp.explicit {
		for j, vf := range rp.render.ValuesFrom {
			res, err := d.Resource(vf.Resource)
			if err != nil {
				return pipeline.Step{}, nil, fmt.Errorf("%s.valuesFrom[%d]: %w", where, j, err)
			}
			cfgRes = append(cfgRes, res)
		}
	} else {
		for i := range d.Resources {
			if IsConfigResource(&d.Resources[i]) {
				cfgRes = append(cfgRes, &d.Resources[i])
			}
		}
	}
	for _, res := range cfgRes {
		c, err := rs.config(ctx, res)
		if err != nil {
			return pipeline.Step{}, nil, err
		}
		if c.cd != nil && isChart && c.hasFileRules() {
			if rp.explicit {
				return pipeline.Step{}, nil, fmt.Errorf("%w: %s: ConfigData %s has rules for files, which apply to directoryTree resources, not to the Helm chart %s",
					errdef.ErrInvalidInput, where, c.res.Identity(), rp.res.Identity())
			}
			rs.report.Notes = append(rs.report.Notes, fmt.Sprintf("%s: ConfigData %s skipped: its file rules apply to directory resources", rp.name, c.res.Identity()))
			continue
		}
		configs = append(configs, c)
		vals, src := c.values, c.describe()
		ops = append(ops, func(v *Values) error { v.Merge(vals, layerFrom(LayerConfig, src)); return nil })
	}

	// 2. localisation into values
	var assigns []struct {
		a   localize.Assignment
		src string
	}
	addMapping := func(id ocm.Identity, m localize.Mapping, sem localize.Semantics, src string) error {
		img, err := rs.image(id)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		as, err := m.AssignAs(img, sem)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		for _, a := range as {
			assigns = append(assigns, struct {
				a   localize.Assignment
				src string
			}{a, src + " (" + a.Part + " of " + img.Identity() + ")"})
		}
		return nil
	}
	if rs.req.Localize || (rs.def != nil && rs.def.Spec.Localization != nil && rs.def.Spec.Localization.Automatic) {
		if isChart {
			for i := range d.Resources {
				res := &d.Resources[i]
				if !localize.IsImage(res) {
					continue
				}
				m, ok, err := localize.Hint(res)
				if err != nil {
					return pipeline.Step{}, nil, err
				}
				if ok {
					if err := addMapping(res.Identity(), m, localize.OCMCLI, "label "+localize.HintLabel+" of resource "+res.Identity().String()); err != nil {
						return pipeline.Step{}, nil, err
					}
				}
			}
		}
	}
	for _, c := range configs {
		if c.cd == nil {
			continue
		}
		for j, l := range c.cd.Localization {
			if l.File != "" {
				continue // applied to the rendered objects below
			}
			if err := addMapping(l.Resource, l.Mapping, localize.OCMController, fmt.Sprintf("%s localization[%d]", c.describe(), j)); err != nil {
				return pipeline.Step{}, nil, err
			}
		}
	}
	if rp.render != nil {
		for j, m := range rp.render.Localization {
			if err := addMapping(m.Resource, m.Mapping, localize.OCMCLI, fmt.Sprintf("%s.localization[%d]", where, j)); err != nil {
				return pipeline.Step{}, nil, err
			}
		}
	}
	for _, as := range assigns {
		as := as
		ops = append(ops, func(v *Values) error {
			if err := v.Set(as.a.Path, as.a.Value, Origin{Layer: LayerLocalization, Source: as.src}); err != nil {
				return fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, as.src, err)
			}
			return nil
		})
	}

	// 3. definition values
	if rp.render != nil && len(rp.render.Values) > 0 {
		raw := rp.render.Values
		base := where + ".values"
		evaluated, err := rs.eval.Walk(ctx, base, raw, rs.vars)
		if err != nil {
			return pipeline.Step{}, nil, err
		}
		em := evaluated.(map[string]any)
		relWhere := strings.TrimPrefix(base, rs.def.Source+": ")
		ops = append(ops, func(v *Values) error {
			v.Merge(em, func(p fieldpath.Path, value any) Origin {
				o := Origin{Layer: LayerDefinition, Source: relWhere + "." + p.String(), Value: value}
				if s, ok := fieldpath.Get(raw, p); ok {
					if str, ok := s.(string); ok && HasExpression(str) {
						o.Expr = str
					}
				}
				return o
			})
			return nil
		})
	}

	// 4. the instance's values
	inst, origin, err := instanceValues(rs.req, rs.p.ReadFile)
	if err != nil {
		return pipeline.Step{}, nil, errdef.Mark(errdef.ErrInvalidInput, err)
	}
	ops = append(ops, func(v *Values) error { v.Merge(inst, origin); return nil })

	vals := NewValues()
	for _, op := range ops {
		if err := op(vals); err != nil {
			return pipeline.Step{}, nil, err
		}
	}
	final := vals.Copy()
	for _, c := range configs {
		if c.cd != nil && c.cd.Configuration != nil && c.cd.Configuration.Schema != nil {
			if err := validateSchema(final, c.cd.Configuration.Schema); err != nil {
				return pipeline.Step{}, nil, fmt.Errorf("%w: %s: the values of render %s %v (configuration.schema)", errdef.ErrInvalidInput, c.describe(), rp.name, err)
			}
		}
	}

	rr := RenderReport{Name: rp.name, Resource: rp.res.Identity().String(), Type: rp.res.Type, ReleaseName: rp.release, Namespace: rp.ns, Path: rp.path}
	if rs.p.Explain != nil {
		shown := NewValues()
		if isChart {
			if defaults, err := rs.chartDefaults(ctx, rp.res); err == nil {
				shown.Merge(defaults, layerFrom(LayerChart, "values.yaml of the chart"))
			} else {
				rs.report.Notes = append(rs.report.Notes, fmt.Sprintf("%s: chart defaults not shown: %v", rp.name, err))
			}
		}
		for _, op := range ops {
			if err := op(shown); err != nil {
				return pipeline.Step{}, nil, err
			}
		}
		rr.Values = shown.Leaves()
	}
	rs.report.Renders = append(rs.report.Renders, rr)

	// 5. patches and file rules
	patches, err := rs.patches(ctx, rp, where, configs, final)
	if err != nil {
		return pipeline.Step{}, nil, err
	}
	// 5b. what kustomize can apply itself, as an overlay over the entry
	patches, overlay, err := rs.overlay(ctx, rp, patches)
	if err != nil {
		return pipeline.Step{}, nil, err
	}
	// 6. placement in Argo CD's sync
	ordering, err := rs.ordering(ctx, rp, where)
	if err != nil {
		return pipeline.Step{}, nil, err
	}
	step := pipeline.Step{Resource: rp.res, ReleaseName: rp.release, Namespace: rp.ns, Path: rp.path, Values: final, Ordering: ordering, Overlay: overlay}
	return step, patches, nil
}

func (c *configResource) hasFileRules() bool {
	if c.cd == nil {
		return false
	}
	if c.cd.Configuration != nil && len(c.cd.Configuration.Rules) > 0 {
		return true
	}
	for _, l := range c.cd.Localization {
		if l.File != "" {
			return true
		}
	}
	return false
}

func (rs *resolver) config(ctx context.Context, res *ocm.Resource) (*configResource, error) {
	key := res.Identity().String() + "@" + res.Version
	if c, ok := rs.configs[key]; ok {
		return c, nil
	}
	data, err := rs.p.readResource(ctx, rs.cv, res)
	if err != nil {
		return nil, fmt.Errorf("config resource %s: %w", res.Identity(), err)
	}
	c, err := parseConfigResource(res, data)
	if err != nil {
		return nil, err
	}
	rs.configs[key] = c
	return c, nil
}

func (rs *resolver) image(id ocm.Identity) (localize.Image, error) {
	key := id.String()
	if img, ok := rs.images[key]; ok {
		return img, nil
	}
	res, err := rs.cv.Descriptor().Resource(id)
	if err != nil {
		return localize.Image{}, err
	}
	if !localize.IsImage(res) {
		return localize.Image{}, fmt.Errorf("%w: resource %s has type %s, not an image (ociImage)", errdef.ErrInvalidInput, res.Identity(), res.Type)
	}
	img, err := localize.ImageOf(res)
	if err != nil {
		return localize.Image{}, err
	}
	rs.images[key] = img
	return img, nil
}

func (rs *resolver) chartDefaults(ctx context.Context, res *ocm.Resource) (map[string]any, error) {
	r := rs.p.Access
	if r == nil {
		r = &access.Resolver{}
	}
	c, err := r.Read(ctx, rs.cv, res)
	if err != nil {
		return nil, err
	}
	tgz, err := access.ChartArchive(c)
	if err != nil {
		return nil, err
	}
	ch, err := helm.LoadArchive(tgz)
	if err != nil {
		return nil, err
	}
	m, _ := jsonValue(ch.Values).(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func (rs *resolver) tree(ctx context.Context, res *ocm.Resource) (*archive.Tree, error) {
	r := rs.p.Access
	if r == nil {
		r = &access.Resolver{}
	}
	// Streamed and verified as the render reads it: the blob is never held
	// beside the tree.
	return r.ReadTree(ctx, rs.cv, res)
}
