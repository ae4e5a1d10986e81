package rgd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/graph"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// evaluation is the state of one Plan over an RGD and its chained RGDs.
type evaluation struct {
	p        *GraphPlanner
	cv       ocm.ComponentVersion
	req      plan.Input
	all      []*RGD
	deployer string
	report   *explain.Report
	// budget is shared by the RGD and every RGD it chains to.
	budget budget
}

// Bounds of one evaluation, the RGD and its chained RGDs together, on top
// of the deadline (GraphPlanner.Timeout) and every expression's own limits.
const (
	// maxEvaluations bounds the expressions evaluated: a forEach node's
	// template counts once per item, a chained RGD's expressions count too.
	maxEvaluations = 100_000
	// maxObjects bounds the objects the graph emits, as decoded YAML is
	// bounded (manifests.MaxObjects).
	maxObjects = manifests.MaxObjects
)

// budget counts what one evaluation spent.
type budget struct {
	evaluations, objects int
}

// spend charges n expressions evaluated and objs objects emitted.
func (b *budget) spend(where string, n, objs int) error {
	b.evaluations += n
	b.objects += objs
	switch {
	case b.evaluations > maxEvaluations:
		return fmt.Errorf("%w: %s: the graph evaluates more than %d expressions (forEach items and chained RGDs included)", errdef.ErrLimitExceeded, where, maxEvaluations)
	case b.objects > maxObjects:
		return fmt.Errorf("%w: %s: the graph makes more than %d objects (forEach items and chained RGDs included)", errdef.ErrLimitExceeded, where, maxObjects)
	}
	return nil
}

// step is a plan step with the level of the node it came from.
type step struct {
	plan.Step
	level int
	node  string
}

// evaluated is one evaluated RGD.
type evaluated struct {
	rgd      *RGD
	order    []*graph.Node
	level    map[string]int
	objs     map[string]map[string]any
	items    map[string][]map[string]any // the objects of forEach nodes
	bindings map[string]*binding
	skipped  map[string]bool // nodes left out (includeWhen), and their dependents
}

// run evaluates an RGD for one instance (spec, metadata) and returns its
// steps; chained RGDs are expanded in place.
func (e *evaluation) run(ctx context.Context, r *RGD, spec, meta map[string]any, depth, base int, chain []string) ([]step, error) {
	if slices.Contains(chain, r.Schema.Kind) {
		return nil, fmt.Errorf("%w: %s: the chained RGDs instantiate each other in a cycle: %s -> %s", errdef.ErrInvalidInput, r.Source, errdef.Cut(strings.Join(chain, " -> ")), r.Schema.Kind)
	}
	if depth > maxChainDepth {
		return nil, fmt.Errorf("%w: %s: RGDs chained more than %d deep", errdef.ErrLimitExceeded, r.Source, maxChainDepth)
	}
	chain = append(slices.Clone(chain), r.Schema.Kind)
	order, level, err := r.Analyze()
	if err != nil {
		return nil, err
	}
	g := &evaluated{rgd: r, order: order, level: level, objs: map[string]map[string]any{}, items: map[string][]map[string]any{}, bindings: map[string]*binding{}, skipped: map[string]bool{}}
	vars := map[string]any{"schema": map[string]any{"apiVersion": "kro.run/v1alpha1", "kind": r.Schema.Kind, "metadata": meta, "spec": spec}}
	ev := e.evaluator(r)
	for _, n := range order {
		if err := e.evaluateNode(ctx, ev, g, n, vars); err != nil {
			return nil, err
		}
	}
	e.recordExpressions(r, ev)
	return e.steps(ctx, g, meta, depth, base, chain)
}

// evaluator evaluates the expressions of r: its variables are schema, the
// nodes and the forEach iterators.
func (e *evaluation) evaluator(r *RGD) *expr.Evaluator {
	ids := []string{"schema"}
	for _, n := range r.Nodes {
		ids = append(ids, n.ID)
	}
	for _, n := range r.Nodes {
		for _, it := range n.Iterators {
			if !slices.Contains(ids, it.Name) {
				ids = append(ids, it.Name)
			}
		}
	}
	return e.p.limits().Evaluator(ids)
}

// evaluateNode evaluates one node into g, unless its includeWhen is false,
// and binds it in vars for the nodes that read it: a collection as the
// list of its objects, an OCM Resource node with its resolved status.
func (e *evaluation) evaluateNode(ctx context.Context, ev *expr.Evaluator, g *evaluated, n *graph.Node, vars map[string]any) error {
	r := g.rgd
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %s: node %s: %v", errdef.ErrLimitExceeded, r.Source, n.ID, err)
	}
	where := fmt.Sprintf("%s: node %s", r.Source, n.ID)
	for _, d := range n.Deps {
		if g.skipped[d] {
			// kro skips the dependents of a node it skips.
			g.skipped[n.ID] = true
			e.note("%s: node %s not included (it reads node %s, which is not)", r.Name, n.ID, d)
			return nil
		}
	}
	include, err := e.included(ctx, ev, n, where, vars)
	if err != nil {
		return err
	}
	if !include {
		g.skipped[n.ID] = true
		e.note("%s: node %s not included (includeWhen is false)", r.Name, n.ID)
		return nil
	}
	if len(n.Iterators) > 0 {
		items, err := e.forEach(ctx, ev, r, n, vars)
		if err != nil {
			return err
		}
		if err := e.budget.spend(where, 0, len(items)); err != nil {
			return err
		}
		g.items[n.ID] = items
		list := make([]any, len(items))
		for i, it := range items {
			list[i] = it
		}
		vars[n.ID] = list // other nodes read a collection as a list
		return nil
	}
	if err := e.budget.spend(where, len(n.Exprs)+len(n.IncludeWhen), 1); err != nil {
		return err
	}
	v, err := ev.Walk(ctx, where+": template", n.Template, vars)
	if err != nil {
		return err
	}
	obj, _ := v.(map[string]any)
	if graph.IsOCMResource(obj) {
		b, err := e.resolveResource(ctx, r, n, obj)
		if err != nil {
			return err
		}
		g.bindings[n.ID] = b
		e.noteStatus(r, b)
	}
	g.objs[n.ID] = obj
	vars[n.ID] = obj
	return nil
}

// included evaluates a node's includeWhen conditions: every one is
// evaluated (and must be a boolean), the node is included when all hold.
func (e *evaluation) included(ctx context.Context, ev *expr.Evaluator, n *graph.Node, where string, vars map[string]any) (bool, error) {
	include := true
	for i, w := range n.IncludeWhen {
		v, err := ev.Template(ctx, fmt.Sprintf("%s: includeWhen[%d]", where, i), w, vars)
		if err != nil {
			return false, err
		}
		b, ok := v.(bool)
		if !ok {
			return false, fmt.Errorf("%w: %s: includeWhen[%d] is %s, want true or false", errdef.ErrInvalidInput, where, i, expr.DescribeValue(v))
		}
		include = include && b
	}
	return include, nil
}

// recordExpressions adds the evaluated expressions to the report, named
// by the RGD rather than its source.
func (e *evaluation) recordExpressions(r *RGD, ev *expr.Evaluator) {
	for _, x := range ev.Evaluations() {
		x.Where = strings.TrimPrefix(x.Where, r.Source+": ")
		if r.Name != "" {
			x.Where = r.Name + ": " + x.Where
		}
		e.report.Expressions = append(e.report.Expressions, x)
	}
}

// steps turns the evaluated nodes into plan steps: the chosen deployer
// blocks rendered, chained RGDs expanded, other objects emitted, OCM
// bootstrap objects dropped.
func (e *evaluation) steps(ctx context.Context, g *evaluated, meta map[string]any, depth, base int, chain []string) ([]step, error) {
	r := g.rgd
	var argo, flux, fluxSources []*graph.Node
	var out []step
	for _, n := range g.order {
		if items, ok := g.items[n.ID]; ok {
			if len(items) > 0 {
				objs := make([]manifests.Object, len(items))
				copy(objs, items)
				out = append(out, step{Step: plan.Step{Resource: r.Resource, Component: r.cv, Objects: objs}, level: base + g.level[n.ID], node: n.ID})
			}
			e.note("%s: node %s: forEach expanded into %d objects", r.Name, n.ID, len(items))
			continue
		}
		obj, ok := g.objs[n.ID]
		if !ok {
			continue
		}
		grp, kind := graph.GVK(obj)
		switch {
		case grp == graph.OCMGroup && kind == "Resource":
			// interpreted: its status feeds the other nodes
		case grp == graph.OCMGroup:
			e.note("%s: node %s (OCM %s) dropped: the Application is the deployer, the component is the one it names", r.Name, n.ID, kind)
		case grp == "argoproj.io" && kind == "Application":
			argo = append(argo, n)
		case grp == "helm.toolkit.fluxcd.io" && kind == "HelmRelease", grp == "kustomize.toolkit.fluxcd.io" && kind == "Kustomization":
			flux = append(flux, n)
		case grp == "source.toolkit.fluxcd.io":
			fluxSources = append(fluxSources, n)
		case grp == "kro.run":
			child := e.rgdOfKind(kind)
			if child == nil {
				return nil, fmt.Errorf("%w: %s: node %s instantiates kind %s, which no ResourceGraphDefinition of the component defines (it has: %s); without kro in the cluster nothing would create its objects",
					errdef.ErrInvalidInput, r.Source, n.ID, kind, names(e.all))
			}
			steps, err := e.chained(ctx, g, n, obj, child, meta, depth, base, chain)
			if err != nil {
				return nil, err
			}
			out = append(out, steps...)
		default:
			out = append(out, step{Step: plan.Step{Resource: r.Resource, Component: r.cv, Objects: []manifests.Object{obj}}, level: base + g.level[n.ID], node: n.ID})
		}
	}
	blocks, err := e.chooseBlocks(r, argo, flux)
	if err != nil {
		return nil, err
	}
	for _, n := range blocks {
		s, err := e.blockStep(g, n, fluxSources)
		if err != nil {
			return nil, err
		}
		s.level = base + g.level[n.ID]
		out = append(out, s)
	}
	for _, n := range fluxSources {
		if !slices.Contains(blocks, n) && !e.sourceUsed(g, n, blocks) {
			e.note("%s: node %s (Flux %s) dropped: no rendered block uses it", r.Name, n.ID, g.objs[n.ID]["kind"])
		}
	}
	slices.SortStableFunc(out, func(a, b step) int { return a.level - b.level })
	return out, nil
}

func (e *evaluation) rgdOfKind(kind string) *RGD {
	for _, r := range e.all {
		if r.Schema.Kind == kind {
			return r
		}
	}
	return nil
}

// chained expands a node of another RGD's kind: its spec is that RGD's
// instance, validated against its schema.
func (e *evaluation) chained(ctx context.Context, g *evaluated, n *graph.Node, obj map[string]any, child *RGD, meta map[string]any, depth, base int, chain []string) ([]step, error) {
	where := fmt.Sprintf("%s: node %s (%s)", g.rgd.Source, n.ID, child.Schema.Kind)
	inst, err := child.Parameters()
	if err != nil {
		return nil, err
	}
	spec, _ := obj["spec"].(map[string]any)
	texts, err := inst.Texts(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: spec: %v", errdef.ErrInvalidInput, where, err)
	}
	params, err := inst.Definition.ResolveParameters(texts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	childMeta := map[string]any{"name": meta["name"], "namespace": meta["namespace"]}
	if m, ok := obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"name", "namespace"} {
			if s, ok := m[k].(string); ok && s != "" {
				childMeta[k] = s
			}
		}
	}
	e.note("%s: node %s expanded: %s (kind %s) with spec %s", g.rgd.Name, n.ID, child.Source, child.Schema.Kind, compact(spec))
	ispec, err := inst.Spec(params, texts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return e.run(ctx, child, ispec, childMeta, depth+1, base+g.level[n.ID], chain)
}

// waves places each step's objects in the sync wave of its node's level
// (ranked), when the graph has more than one level.
func (e *evaluation) waves(steps []step) []step {
	var levels []int
	for _, s := range steps {
		if !slices.Contains(levels, s.level) {
			levels = append(levels, s.level)
		}
	}
	if len(levels) < 2 {
		return steps
	}
	slices.Sort(levels)
	for i := range steps {
		w := slices.Index(levels, steps[i].level)
		steps[i].Ordering = &hooks.Ordering{Placement: hooks.Placement{SyncWave: &w}}
		e.note("sync wave %d: node %s", w, steps[i].node)
	}
	return steps
}

func (e *evaluation) note(format string, args ...any) {
	e.report.Notes = append(e.report.Notes, fmt.Sprintf(format, args...))
}

func (e *evaluation) noteStatus(r *RGD, b *binding) {
	d := b.cv.Descriptor()
	at := fmt.Sprintf("%s:%s", d.Name, d.Version)
	if len(b.path) > 0 {
		at += " (referencePath " + strings.Join(b.path, "/") + ")"
	}
	add := "{}"
	if a, ok := b.status["additional"]; ok {
		add = compact(a)
	}
	e.note("%s: OCM Resource node %s: resource %s of %s, status.additional = %s", r.Name, b.node, b.res.Identity(), at, add)
}

func compact(v any) string {
	bs, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return errdef.Cut(string(bs))
}

// forEach expands a collection node: each iterator's expression makes a
// list (of the instance spec: analyze refuses other nodes), and the
// template is evaluated once per item of their cartesian product, with the
// iterators bound to the item. At most graph.MaxForEachItems objects.
func (e *evaluation) forEach(ctx context.Context, ev *expr.Evaluator, r *RGD, n *graph.Node, vars map[string]any) ([]map[string]any, error) {
	where := fmt.Sprintf("%s: node %s", r.Source, n.ID)
	lists := make([][]any, len(n.Iterators))
	total := 1
	for i, it := range n.Iterators {
		v, err := ev.Template(ctx, fmt.Sprintf("%s: forEach[%d] (%s)", where, i, it.Name), it.Expr, vars)
		if err != nil {
			return nil, err
		}
		l, ok := v.([]any)
		if !ok && v != nil {
			return nil, fmt.Errorf("%w: %s: forEach[%d] (%s) is %s, want a list", errdef.ErrInvalidInput, where, i, it.Name, expr.DescribeValue(v))
		}
		lists[i] = l
		total *= len(l)
		if total > graph.MaxForEachItems {
			return nil, fmt.Errorf("%w: %s: forEach expands into more than %d objects", errdef.ErrLimitExceeded, where, graph.MaxForEachItems)
		}
	}
	var out []map[string]any
	idx := make([]int, len(lists))
	for k := 0; k < total; k++ {
		if err := e.budget.spend(where, len(n.Exprs), 0); err != nil {
			return nil, err
		}
		iv := maps.Clone(vars)
		label := make([]string, len(lists))
		for i, l := range lists {
			iv[n.Iterators[i].Name] = l[idx[i]]
			label[i] = fmt.Sprintf("%s[%d]", n.Iterators[i].Name, idx[i])
		}
		v, err := ev.Walk(ctx, where+" ("+strings.Join(label, ", ")+"): template", n.Template, iv)
		if err != nil {
			return nil, err
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: %s: the template is not an object", errdef.ErrInvalidInput, where)
		}
		out = append(out, obj)
		for i := len(idx) - 1; i >= 0; i-- { // next item, last dimension fastest
			idx[i]++
			if idx[i] < len(lists[i]) {
				break
			}
			idx[i] = 0
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
