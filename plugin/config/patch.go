package config

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/render/manifests"
)

// patches evaluates the definition's patches of a render and turns the file
// rules of its ConfigData resources into patches.
func (rs *resolver) patches(ctx context.Context, rp renderPlan, where string, configs []*configResource, final map[string]any) ([]boundPatch, error) {
	var out []boundPatch
	if rp.render != nil && len(rp.render.Patches) > 0 {
		vars := make(map[string]any, len(rs.vars))
		for k, v := range rs.vars {
			vars[k] = v
		}
		vars[VarValues] = final
		for j, p := range rp.render.Patches {
			w := fmt.Sprintf("%s.patches[%d]", where, j)
			t, err := rs.target(ctx, w, p.Target, vars)
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
			out = append(out, boundPatch{source: strings.TrimPrefix(w, rs.def.Source+": "), render: rp.name, targets: []Target{t}, path: fp, value: value})
		}
	}
	var tree *archive.Tree
	fileObjects := func(src, file string) ([]Target, error) {
		if tree == nil {
			var err error
			if tree, err = rs.tree(ctx, rp.res); err != nil {
				return nil, fmt.Errorf("%s: reading resource %s: %w", src, rp.res.Identity(), err)
			}
		}
		name := path.Clean(strings.TrimPrefix(file, "/"))
		data, err := tree.ReadFile(name)
		if err != nil && rp.path != "" {
			data, err = tree.ReadFile(path.Join(rp.path, name))
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: file %s is not in resource %s", errdef.ErrNotFound, src, file, rp.res.Identity())
		}
		objs, err := manifests.Decode(file, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		var ts []Target
		for _, o := range objs {
			kind, _ := o["kind"].(string)
			md, _ := o["metadata"].(map[string]any)
			n, _ := md["name"].(string)
			ts = append(ts, Target{Kind: kind, Name: n})
		}
		if len(ts) == 0 {
			return nil, fmt.Errorf("%w: %s: file %s holds no objects", errdef.ErrInvalidInput, src, file)
		}
		return ts, nil
	}
	for _, c := range configs {
		if c.cd == nil {
			continue
		}
		if c.cd.Configuration != nil {
			for j, r := range c.cd.Configuration.Rules {
				src := fmt.Sprintf("%s configuration.rules[%d]", c.describe(), j)
				ts, err := fileObjects(src, r.File)
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
			ts, err := fileObjects(src, l.File)
			if err != nil {
				return nil, err
			}
			img, err := rs.image(l.Resource)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
			as, err := l.Mapping.AssignAs(img, localize.OCMController)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
			for _, a := range as {
				out = append(out, boundPatch{source: src + " (" + a.Part + " of " + img.Identity() + ")", render: rp.name, targets: ts, path: a.Path, value: a.Value})
			}
		}
	}
	return out, nil
}

func (t Target) String() string {
	s := t.Kind
	if t.APIVersion != "" {
		s = t.APIVersion + " " + s
	}
	if t.Name != "" {
		n := t.Name
		if t.Namespace != "" {
			n = t.Namespace + "/" + n
		}
		s += " " + n
	} else if t.Namespace != "" {
		s += " in namespace " + t.Namespace
	}
	return s
}

func (t Target) matches(o manifests.Object) bool {
	kind, _ := o["kind"].(string)
	if kind != t.Kind {
		return false
	}
	if t.APIVersion != "" {
		if av, _ := o["apiVersion"].(string); av != t.APIVersion {
			return false
		}
	}
	md, _ := o["metadata"].(map[string]any)
	if t.Name != "" {
		if n, _ := md["name"].(string); n != t.Name {
			return false
		}
	}
	if t.Namespace != "" {
		if ns, _ := md["namespace"].(string); ns != t.Namespace {
			return false
		}
	}
	return true
}

// apply sets the patch in every object a target matches; a patch that
// matches nothing is an error (a typo would otherwise go unnoticed).
func (bp boundPatch) apply(objs []manifests.Object) ([]string, error) {
	var hit []string
	for _, o := range objs {
		match := false
		for _, t := range bp.targets {
			if t.matches(o) {
				match = true
				break
			}
		}
		if !match {
			continue
		}
		if err := fieldpath.Set(o, bp.path, manifests.DeepCopy(bp.value)); err != nil {
			return nil, fmt.Errorf("%w: %s: %s: %v", errdef.ErrInvalidInput, bp.source, localize.Describe(o), err)
		}
		hit = append(hit, localize.Describe(o))
	}
	if len(hit) == 0 {
		ts := make([]string, len(bp.targets))
		for i, t := range bp.targets {
			ts[i] = t.String()
		}
		return nil, fmt.Errorf("%w: %s: no rendered object matches %s (render %s)", errdef.ErrNotFound, bp.source, strings.Join(ts, " or "), bp.render)
	}
	return hit, nil
}
