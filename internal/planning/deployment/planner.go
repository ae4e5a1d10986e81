package deployment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment/ordering"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// DefinitionPlanner plans a component version from its deployment
// definition (see LoadDefinition): the renders with their values, and the
// work that finishes their output (patches, ConfigData file rules,
// automatic localisation, the --explain report), which the plan carries:
// each step its own patches, the plan what concerns the whole output. It
// reads resources through each call's plan.Input. Without a definition the
// request alone decides (its resources, values, release and path), with
// the component's config resources as the lowest value layer.
type DefinitionPlanner struct {
	// Log receives notes for people (images left alone by localisation).
	Log io.Writer
	// Explain, when set, receives the report of each render once its
	// output is finished.
	Explain func(*explain.Report)
	// CostLimit and ExprTimeout bound each CEL expression (defaults
	// expr.DefaultCostLimit, expr.DefaultExprTimeout).
	CostLimit   uint64
	ExprTimeout time.Duration
	// RequireDigests refuses shipped definitions and config resources without
	// a resource digest (set it when signatures are enforced: only digests
	// are covered by a signature).
	RequireDigests bool
}

var (
	_ plan.Planner        = (*DefinitionPlanner)(nil)
	_ plan.PackageChecker = (*DefinitionPlanner)(nil)
)

// Plan implements plan.Planner: one step per render that runs, then
// one per job; the finishing work rides on the plan.
func (p *DefinitionPlanner) Plan(ctx context.Context, cv ocm.ComponentVersion, req plan.Input) (*plan.Plan, error) {
	rs, err := p.newResolver(ctx, cv, req)
	if err != nil {
		return nil, err
	}
	plans, err := rs.renderPlans(ctx)
	if err != nil {
		return nil, err
	}
	out := &plan.Plan{}
	for _, rp := range plans {
		step, err := rs.plan(ctx, rp)
		if err != nil {
			return nil, err
		}
		out.Steps = append(out.Steps, step)
	}
	jobs, err := rs.jobs(ctx, plans)
	if err != nil {
		return nil, err
	}
	out.Steps = append(out.Steps, jobs...)
	rs.report.Expressions = rs.eval.Evaluations()
	if rs.def != nil {
		for i := range rs.report.Expressions {
			rs.report.Expressions[i].Where = strings.TrimPrefix(rs.report.Expressions[i].Where, rs.def.Source+": ")
		}
	}
	redactSecretExpressions(rs.report)
	redactKustomizeSecrets(rs.report)
	out.Finish = rs.finish()
	return out, nil
}

// boundPatch is a patch with its target and value evaluated.
type boundPatch struct {
	source  string // where it was declared, for messages
	render  string
	targets []ordering.Target // any of them
	path    fieldpath.Path
	value   any
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

// resolver is the state of one Plan.
type resolver struct {
	p       *DefinitionPlanner
	cv      ocm.ComponentVersion
	req     plan.Input
	def     *Definition
	eval    *expr.Evaluator
	vars    map[string]any
	configs map[string]*configResource
	images  map[string]localize.Image
	trees   map[string]plan.Tree // of the render being planned
	report  *explain.Report
	// autoLocalize and requireAll: automatic localisation of the output,
	// asked for by the request or the definition.
	autoLocalize, requireAll bool
	// instance values, computed once for all renders (see instanceValues)
	inst       map[string]any
	instOrigin func(fieldpath.Path, any) explain.Origin
}

// newResolver loads the definition of a request and prepares what its
// expressions see.
func (p *DefinitionPlanner) newResolver(ctx context.Context, cv ocm.ComponentVersion, req plan.Input) (*resolver, error) {
	d := cv.Descriptor()
	def, err := p.LoadDefinition(ctx, cv, req)
	if err != nil {
		return nil, err
	}
	rs := &resolver{p: p, cv: cv, req: req, def: def, configs: map[string]*configResource{}, images: map[string]localize.Image{},
		report:       &explain.Report{Component: d.Name, Version: d.Version, Definition: "none (the request alone, with the component's config resources)"},
		autoLocalize: req.Localize}
	if def == nil {
		if len(req.Parameters) > 0 {
			return nil, fmt.Errorf("%w: instance parameters (%s) need a deployment definition, and neither the request nor the component has one",
				errdef.ErrInvalidInput, errdef.Cut(strings.Join(sortedKeys(req.Parameters), ", ")))
		}
		if rs.vars, err = baseVars(ctx, cv, req, nil, false); err != nil {
			return nil, err
		}
		rs.eval = &expr.Evaluator{CostLimit: p.CostLimit, Timeout: p.ExprTimeout}
		return rs, nil
	}
	rs.report.Definition = fmt.Sprintf("%s (%s %s)", def.Source, def.Kind, def.Metadata.Name)
	if l := def.Spec.Localization; l != nil {
		rs.autoLocalize = rs.autoLocalize || l.Automatic
		rs.requireAll = l.RequireAll
	}
	params, err := def.ResolveParameters(req.Parameters)
	if err != nil {
		return nil, err
	}
	rs.report.Parameters = params
	withRefs := false
	if b, err := json.Marshal(def.Spec); err == nil && bytes.Contains(b, []byte(expr.VarReferences)) {
		withRefs = true
	}
	if rs.vars, err = baseVars(ctx, cv, req, params, withRefs); err != nil {
		return nil, err
	}
	rs.eval = &expr.Evaluator{CostLimit: p.CostLimit, Timeout: p.ExprTimeout, Params: map[string]bool{},
		Resources: keySet(rs.vars[expr.VarResources]), References: nil}
	for _, pv := range params {
		rs.eval.Params[pv.Name] = true
	}
	if withRefs {
		rs.eval.References = keySet(rs.vars[expr.VarReferences])
	}
	return rs, nil
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

// renderPlans are the renders that run: the definition's, or without one
// the request's resources with the request's release, namespace and path.
func (rs *resolver) renderPlans(ctx context.Context) ([]renderPlan, error) {
	if rs.def != nil {
		return rs.definitionPlans(ctx)
	}
	targets, err := plan.SelectResources(rs.cv.Descriptor(), rs.req.Resources)
	if err != nil {
		return nil, err
	}
	var plans []renderPlan
	for _, res := range targets {
		plans = append(plans, renderPlan{name: res.Identity().String(), index: -1, res: res, release: rs.req.ReleaseName, ns: rs.req.Namespace, path: rs.req.Path})
	}
	return plans, nil
}

// definitionPlans evaluates the renders of the definition: conditions,
// resources, release names, namespaces and paths.
func (rs *resolver) definitionPlans(ctx context.Context) ([]renderPlan, error) {
	sel, err := newSelection(rs.req.Resources)
	if err != nil {
		return nil, err
	}
	var plans []renderPlan
	for i := range rs.def.Spec.Renders {
		rp, ok, err := rs.definitionPlan(ctx, i, sel)
		if err != nil {
			return nil, err
		}
		if ok {
			plans = append(plans, rp)
		}
	}
	if j := sel.unused(); j >= 0 {
		return nil, fmt.Errorf("%w: resource %s is not rendered by %s (it renders: %s)",
			errdef.ErrNotFound, sel.ids[j], rs.def.Source, rs.def.renderedResources())
	}
	if len(plans) == 0 {
		return nil, fmt.Errorf("%w: %s: every render is switched off by its when condition: nothing to render", errdef.ErrInvalidInput, rs.def.Source)
	}
	return plans, nil
}

// selection is the request's resource selectors, each marked when a render
// of the definition matches it.
type selection struct {
	ids  []ocm.Identity
	used []bool
}

func newSelection(selectors []string) (*selection, error) {
	s := &selection{}
	for _, sel := range selectors {
		id, err := ocm.ParseIdentity(sel)
		if err != nil {
			return nil, err
		}
		s.ids = append(s.ids, id)
	}
	s.used = make([]bool, len(s.ids))
	return s, nil
}

// matches reports whether res is selected (every resource is, without
// selectors) and marks the selectors that select it.
func (s *selection) matches(res *ocm.Resource) bool {
	if len(s.ids) == 0 {
		return true
	}
	match := false
	for j, id := range s.ids {
		if res.Identity().Matches(id) {
			match, s.used[j] = true, true
		}
	}
	return match
}

// unused is the index of the first selector no render matched, -1 if none.
func (s *selection) unused() int {
	for j, ok := range s.used {
		if !ok {
			return j
		}
	}
	return -1
}

// definitionPlan evaluates render i of the definition; false when it is
// not selected or its when condition is false.
func (rs *resolver) definitionPlan(ctx context.Context, i int, sel *selection) (renderPlan, bool, error) {
	r := &rs.def.Spec.Renders[i]
	where := fmt.Sprintf("%s: spec.renders[%d]", rs.def.Source, i)
	res, err := rs.cv.Descriptor().Resource(r.Resource)
	if err != nil {
		return renderPlan{}, false, fmt.Errorf("%s.resource: %w", where, err)
	}
	if !sel.matches(res) {
		return renderPlan{}, false, nil
	}
	if !plan.RenderableNamed(res.Type) {
		return renderPlan{}, false, fmt.Errorf("%w: %s.resource: resource %s has type %s; the plugin renders helmChart and directoryTree resources",
			errdef.ErrUnsupportedMediaType, where, res.Identity(), res.Type)
	}
	if r.When != "" {
		ok, err := rs.condition(ctx, where+".when", r.When)
		if err != nil {
			return renderPlan{}, false, err
		}
		if !ok {
			rs.report.Renders = append(rs.report.Renders, explain.RenderReport{Name: r.Name, Resource: res.Identity().String(), Type: res.Type, Skipped: "when " + r.When + " is false"})
			return renderPlan{}, false, nil
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
		if *f.out, err = rs.stringField(ctx, where+"."+f.name, f.val, f.def); err != nil {
			return renderPlan{}, false, err
		}
	}
	return rp, true, nil
}

// stringField evaluates a field that must yield a string; def when it is empty.
func (rs *resolver) stringField(ctx context.Context, where, val, def string) (string, error) {
	if val == "" {
		return def, nil
	}
	v, err := rs.eval.Template(ctx, where, val, rs.vars)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: %s: %s is %s, want a string", errdef.ErrInvalidInput, where, val, expr.DescribeValue(v))
	}
	return s, nil
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
		return false, fmt.Errorf("%w: %s: %s is %s, want true or false", errdef.ErrInvalidInput, where, s, expr.DescribeValue(v))
	}
	return b, nil
}

// layerOp is one step of value layering, replayed for the report with the
// chart defaults underneath.
type layerOp func(v *Values) error

// plan builds the step of one render: its values layered (config
// resources < localisation < definition values < the instance's), its
// patches, kustomize overlay and placement in Argo CD's sync.
func (rs *resolver) plan(ctx context.Context, rp renderPlan) (plan.Step, error) {
	rs.trees = map[string]plan.Tree{} // read for this render only
	defer func() { rs.trees = nil }()
	where := "render " + rp.name
	if rp.index >= 0 {
		where = fmt.Sprintf("%s: spec.renders[%d]", rs.def.Source, rp.index)
	}
	configs, ops, err := rs.configLayers(ctx, rp, where)
	if err != nil {
		return plan.Step{}, err
	}
	localization, err := rs.localizationLayer(rp, where, configs)
	if err != nil {
		return plan.Step{}, err
	}
	ops = append(ops, localization...)
	if op, err := rs.definitionLayer(ctx, rp, where); err != nil {
		return plan.Step{}, err
	} else if op != nil {
		ops = append(ops, op)
	}
	inst, origin, err := rs.instanceValues()
	if err != nil {
		return plan.Step{}, err
	}
	ops = append(ops, func(v *Values) error { v.Merge(inst, origin); return nil })
	final, err := layered(ops)
	if err != nil {
		return plan.Step{}, err
	}
	if err := checkSchemas(final, configs, rp); err != nil {
		return plan.Step{}, err
	}
	if err := rs.reportRender(ctx, rp, ops); err != nil {
		return plan.Step{}, err
	}
	// patches and file rules; what kustomize can apply itself becomes an
	// overlay over the entry, the rest finishes the output
	patches, err := rs.patches(ctx, rp, where, configs, final)
	if err != nil {
		return plan.Step{}, err
	}
	patches, overlay, err := rs.overlay(ctx, rp, patches)
	if err != nil {
		return plan.Step{}, err
	}
	placement, err := rs.placement(ctx, rp, where)
	if err != nil {
		return plan.Step{}, err
	}
	step := plan.Step{Resource: rp.res, ReleaseName: rp.release, Namespace: rp.ns, Path: rp.path, Values: final, Ordering: placement, Overlay: overlay}
	if len(patches) > 0 {
		step.Finish = []plan.Finisher{patchSet{patches: patches, report: rs.report}}
	}
	return step, nil
}

// layered applies ops, lowest layer first, and returns the final values.
func layered(ops []layerOp) (map[string]any, error) {
	vals := NewValues()
	for _, op := range ops {
		if err := op(vals); err != nil {
			return nil, err
		}
	}
	return vals.Copy(), nil
}

// checkSchemas validates the final values against the schema of every
// ConfigData resource of the render.
func checkSchemas(final map[string]any, configs []*configResource, rp renderPlan) error {
	for _, c := range configs {
		if c.cd != nil && c.cd.Configuration != nil && c.cd.Configuration.Schema != nil {
			if err := validateSchema(final, c.cd.Configuration.Schema); err != nil {
				return fmt.Errorf("%w: %s: the values of render %s %v (configuration.schema)", errdef.ErrInvalidInput, c.describe(), rp.name, err)
			}
		}
	}
	return nil
}

// configResources are the config resources of a render: its valuesFrom,
// else every config resource of the component.
func (rs *resolver) configResources(rp renderPlan, where string) ([]*ocm.Resource, error) {
	d := rs.cv.Descriptor()
	var out []*ocm.Resource
	if rp.explicit {
		for j, vf := range rp.render.ValuesFrom {
			res, err := d.Resource(vf.Resource)
			if err != nil {
				return nil, fmt.Errorf("%s.valuesFrom[%d]: %w", where, j, err)
			}
			out = append(out, res)
		}
		return out, nil
	}
	for i := range d.Resources {
		if IsConfigResource(&d.Resources[i]) {
			out = append(out, &d.Resources[i])
		}
	}
	return out, nil
}

// configLayers reads the config resources of a render: the lowest value
// layer. ConfigData with file rules is for directory resources: a chart
// render refuses it when named, and skips it otherwise.
func (rs *resolver) configLayers(ctx context.Context, rp renderPlan, where string) ([]*configResource, []layerOp, error) {
	cfgRes, err := rs.configResources(rp, where)
	if err != nil {
		return nil, nil, err
	}
	isChart := rp.res.Type == plan.TypeHelmChart
	var configs []*configResource
	var ops []layerOp
	for _, res := range cfgRes {
		c, err := rs.config(ctx, res)
		if err != nil {
			return nil, nil, err
		}
		if c.cd != nil && isChart && c.hasFileRules() {
			if rp.explicit {
				return nil, nil, fmt.Errorf("%w: %s: ConfigData %s has rules for files, which apply to directoryTree resources, not to the Helm chart %s",
					errdef.ErrInvalidInput, where, c.res.Identity(), rp.res.Identity())
			}
			rs.report.Notes = append(rs.report.Notes, fmt.Sprintf("%s: ConfigData %s skipped: its file rules apply to directory resources", rp.name, c.res.Identity()))
			continue
		}
		configs = append(configs, c)
		vals, src := c.values, c.describe()
		ops = append(ops, func(v *Values) error { v.Merge(vals, layerFrom(explain.LayerConfig, src)); return nil })
	}
	return configs, ops, nil
}

// assignment is an image location part set into the values.
type assignment struct {
	localize.Assignment
	src string
}

// localizationLayer sets image locations into the values of a render: the
// localization-hint labels of the component's images (a chart, with
// automatic localisation), the values mappings of its ConfigData and the
// render's own mappings.
func (rs *resolver) localizationLayer(rp renderPlan, where string, configs []*configResource) ([]layerOp, error) {
	var assigns []assignment
	add := func(id ocm.Identity, m localize.Mapping, sem localize.Semantics, src string) error {
		as, err := rs.assignments(id, m, sem, src)
		assigns = append(assigns, as...)
		return err
	}
	if rs.autoLocalize && rp.res.Type == plan.TypeHelmChart {
		d := rs.cv.Descriptor()
		for i := range d.Resources {
			res := &d.Resources[i]
			if !localize.IsImage(res) {
				continue
			}
			m, ok, err := localize.Hint(res)
			if err != nil {
				return nil, err
			}
			if ok {
				if err := add(res.Identity(), m, localize.OCMCLI, "label "+localize.HintLabel+" of resource "+res.Identity().String()); err != nil {
					return nil, err
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
				continue // a patch of the rendered objects (see patches)
			}
			if err := add(l.Resource, l.Mapping, localize.OCMController, fmt.Sprintf("%s localization[%d]", c.describe(), j)); err != nil {
				return nil, err
			}
		}
	}
	if rp.render != nil {
		for j, m := range rp.render.Localization {
			if err := add(m.Resource, m.Mapping, localize.OCMCLI, fmt.Sprintf("%s.localization[%d]", where, j)); err != nil {
				return nil, err
			}
		}
	}
	ops := make([]layerOp, len(assigns))
	for i, as := range assigns {
		ops[i] = func(v *Values) error {
			if err := v.Set(as.Path, as.Value, explain.Origin{Layer: explain.LayerLocalization, Source: as.src}); err != nil {
				return fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, as.src, err)
			}
			return nil
		}
	}
	return ops, nil
}

// assignments are the value parts a mapping sets for image resource id.
func (rs *resolver) assignments(id ocm.Identity, m localize.Mapping, sem localize.Semantics, src string) ([]assignment, error) {
	img, err := rs.image(id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	as, err := m.AssignAs(img, sem)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	out := make([]assignment, len(as))
	for i, a := range as {
		out[i] = assignment{a, src + " (" + a.Part + " of " + img.Identity() + ")"}
	}
	return out, nil
}

// definitionLayer is the render's values in the definition, evaluated;
// nil when it has none.
func (rs *resolver) definitionLayer(ctx context.Context, rp renderPlan, where string) (layerOp, error) {
	if rp.render == nil || len(rp.render.Values) == 0 {
		return nil, nil
	}
	raw := rp.render.Values
	base := where + ".values"
	evaluated, err := rs.eval.Walk(ctx, base, raw, rs.vars)
	if err != nil {
		return nil, err
	}
	em := evaluated.(map[string]any)
	relWhere := strings.TrimPrefix(base, rs.def.Source+": ")
	return func(v *Values) error {
		v.Merge(em, func(p fieldpath.Path, value any) explain.Origin {
			o := explain.Origin{Layer: explain.LayerDefinition, Source: relWhere + "." + p.String(), Value: value}
			if s, ok := fieldpath.Get(raw, p); ok {
				if str, ok := s.(string); ok && expr.HasExpression(str) {
					o.Expr = str
				}
			}
			return o
		})
		return nil
	}, nil
}

// instanceValues are the request's values (the top layer), read once for
// every render of the plan.
func (rs *resolver) instanceValues() (map[string]any, func(fieldpath.Path, any) explain.Origin, error) {
	if rs.inst == nil {
		inst, origin, err := instanceValues(rs.req)
		if err != nil {
			return nil, nil, errdef.Mark(errdef.ErrInvalidInput, err)
		}
		rs.inst, rs.instOrigin = inst, origin
	}
	return rs.inst, rs.instOrigin, nil
}

// reportRender records a render in the report; with --explain, with every
// value and the layers that set it, the chart's defaults underneath.
func (rs *resolver) reportRender(ctx context.Context, rp renderPlan, ops []layerOp) error {
	rr := explain.RenderReport{Name: rp.name, Resource: rp.res.Identity().String(), Type: rp.res.Type, ReleaseName: rp.release, Namespace: rp.ns, Path: rp.path}
	if rp.render != nil {
		field := fieldpath.Key("spec", "renders").Index(rp.index)
		if rp.render.Path != "" {
			rr.PathAt = rs.definitionAt(field.Child("path"), 3)
		}
		if rp.render.Namespace != "" {
			rr.NamespaceAt = rs.definitionAt(field.Child("namespace"), 3)
		}
	}
	if rs.p.Explain != nil {
		shown := NewValues()
		if rp.res.Type == plan.TypeHelmChart {
			if defaults, err := rs.chartDefaults(ctx, rp.res); err == nil {
				shown.Merge(defaults, layerFrom(explain.LayerChart, "values.yaml of the chart"))
			} else {
				rs.report.Notes = append(rs.report.Notes, fmt.Sprintf("%s: chart defaults not shown: %v", rp.name, err))
			}
		}
		for _, op := range ops {
			if err := op(shown); err != nil {
				return err
			}
		}
		rr.Values = shown.Leaves()
	}
	rs.report.Renders = append(rs.report.Renders, rr)
	return nil
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
	data, err := rs.p.readResource(ctx, rs.req.ResourceReader(), rs.cv, res)
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
