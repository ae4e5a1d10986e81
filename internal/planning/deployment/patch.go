package deployment

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment/ordering"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
)

// patches evaluates the definition's patches of a render and turns the file
// rules of its ConfigData resources into patches.
func (rs *resolver) patches(ctx context.Context, rp renderPlan, where string, configs []*configResource, final map[string]any) ([]boundPatch, error) {
	out, err := rs.definitionPatches(ctx, rp, where, final)
	if err != nil {
		return nil, err
	}
	files := &fileTargets{ctx: ctx, rs: rs, rp: rp}
	for _, c := range configs {
		if c.cd == nil {
			continue
		}
		rules, err := rs.rulePatches(ctx, rp, c, files, final)
		if err != nil {
			return nil, err
		}
		out = append(out, rules...)
	}
	return out, nil
}

// definitionPatches evaluates the patches of a render in the definition;
// their expressions see the render's final values.
func (rs *resolver) definitionPatches(ctx context.Context, rp renderPlan, where string, final map[string]any) ([]boundPatch, error) {
	if rp.render == nil || len(rp.render.Patches) == 0 {
		return nil, nil
	}
	vars := make(map[string]any, len(rs.vars))
	for k, v := range rs.vars {
		vars[k] = v
	}
	vars[expr.VarValues] = final
	var out []boundPatch
	for j, p := range rp.render.Patches {
		w := fmt.Sprintf("%s.patches[%d]", where, j)
		t, err := ordering.EvalTarget(ctx, rs.fields(vars), w, p.Target)
		if err != nil {
			return nil, err
		}
		value, err := rs.eval.Walk(ctx, w+".value", p.Value, vars)
		if err != nil {
			return nil, err
		}
		fp, err := fieldpath.Parse(p.Path)
		if err != nil {
			return nil, fmt.Errorf("%w: %s.path: %v", errdef.ErrInvalidInput, w, err)
		}
		out = append(out, boundPatch{source: strings.TrimPrefix(w, rs.def.Source+": "), render: rp.name, targets: []ordering.Target{t}, path: fp, value: value})
	}
	return out, nil
}

// rulePatches turns the file rules of a ConfigData resource (configuration
// rules and localization rules with a file) into patches of the objects
// those files of the render's tree hold.
func (rs *resolver) rulePatches(_ context.Context, rp renderPlan, c *configResource, files *fileTargets, final map[string]any) ([]boundPatch, error) {
	var out []boundPatch
	if c.cd.Configuration != nil {
		for j, r := range c.cd.Configuration.Rules {
			src := fmt.Sprintf("%s configuration.rules[%d]", c.describe(), j)
			ts, err := files.targets(src, r.File)
			if err != nil {
				return nil, err
			}
			v, _, err := ruleValue(r.Value, final)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, src, err)
			}
			out = append(out, boundPatch{source: src, render: rp.name, targets: ts, path: fieldpath.MustParse(r.Path), value: v})
		}
	}
	for j, l := range c.cd.Localization {
		if l.File == "" {
			continue
		}
		src := fmt.Sprintf("%s localization[%d]", c.describe(), j)
		ts, err := files.targets(src, l.File)
		if err != nil {
			return nil, err
		}
		as, err := rs.assignments(l.Resource, l.Mapping, localize.OCMController, src)
		if err != nil {
			return nil, err
		}
		for _, a := range as {
			out = append(out, boundPatch{source: a.src, render: rp.name, targets: ts, path: a.Path, value: a.Value})
		}
	}
	return out, nil
}

// fileTargets finds the objects of a file of a render's tree (read when a
// rule first needs it).
type fileTargets struct {
	ctx  context.Context
	rs   *resolver
	rp   renderPlan
	tree *plan.Tree
}

// targets are the objects file holds, as patch targets by kind and name.
func (f *fileTargets) targets(src, file string) ([]ordering.Target, error) {
	if f.tree == nil {
		t, err := f.rs.tree(f.ctx, f.rp.res)
		if err != nil {
			return nil, fmt.Errorf("%s: reading resource %s: %w", src, f.rp.res.Identity(), err)
		}
		f.tree = &t
	}
	name := path.Clean(strings.TrimPrefix(file, "/"))
	data, err := f.tree.ReadFile(name)
	if err != nil && f.rp.path != "" {
		data, err = f.tree.ReadFile(path.Join(f.rp.path, name))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: file %s is not in resource %s", errdef.ErrNotFound, src, file, f.rp.res.Identity())
	}
	objs, err := manifests.Decode(file, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	var ts []ordering.Target
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		md, _ := o["metadata"].(map[string]any)
		n, _ := md["name"].(string)
		ts = append(ts, ordering.Target{Kind: kind, Name: n})
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("%w: %s: file %s holds no objects", errdef.ErrInvalidInput, src, file)
	}
	return ts, nil
}
