package rgd

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/graph"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/schema"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Convert writes the ComponentDeployment equivalent to the RGD a request
// selects (its chosen deployer blocks), for teams moving to the plugin's
// own format: parameters with "_" for the dots of nested fields, the
// blocks' values and kustomize fields with their expressions rewritten
// (schema.spec.a.b → parameters.a_b, an OCM Resource node's
// status.additional.k → its additionalStatusFields expression over
// resources["name"]). What a ComponentDeployment cannot say (objects
// emitted as they are, chained RGDs, resources of referenced components)
// is listed in comments at the top, to be carried over by hand.
func (p *GraphPlanner) Convert(ctx context.Context, cv ocm.ComponentVersion, req plan.Input) ([]byte, error) {
	sel, err := p.choose(ctx, cv, req)
	if err != nil {
		return nil, err
	}
	if sel == nil {
		return nil, fmt.Errorf("%w: nothing to convert: the component ships no ResourceGraphDefinition, or a deployment definition applies", errdef.ErrNotFound)
	}
	r := sel.rgd
	inst, err := r.Parameters()
	if err != nil {
		return nil, err
	}
	params, err := convertParameters(inst.Definition)
	if err != nil {
		return nil, err
	}
	c := &conversion{e: &evaluation{p: p, cv: cv, req: req, all: sel.all, deployer: sel.deployer, report: &explain.Report{}}}
	if err := c.evaluate(ctx, r, inst, params); err != nil {
		return nil, err
	}
	blocks, err := c.e.chooseBlocks(r, c.argo, c.flux)
	if err != nil {
		return nil, err
	}
	renders, err := c.renders(blocks, params.rename)
	if err != nil {
		return nil, err
	}
	if len(renders) == 0 {
		return nil, fmt.Errorf("%w: %s: no deployer block to convert (%s)", errdef.ErrInvalidInput, r.Source, strings.Join(c.notes, "; "))
	}
	body, err := convertedDefinition(r, params.declared, renders)
	if err != nil {
		return nil, err
	}
	return c.document(r, body), nil
}

// convertedParams are an RGD's parameters as a ComponentDeployment has them.
type convertedParams struct {
	values   []explain.ParamValue // resolved, with placeholders where required
	given    map[string]string    // the placeholders of required parameters without a default
	rename   map[string]string    // RGD parameter name → definition parameter name
	declared map[string]any       // the definition's parameters, by new name
}

// convertParameters renames the parameters ("_" for the dots of nested
// fields) and resolves them. A conversion has no instance, so required
// parameters are evaluated with placeholders of their type.
func convertParameters(def *deployment.Definition) (*convertedParams, error) {
	values, err := def.ResolveParameters(nil)
	if err != nil {
		values = nil // required parameters: resolved below with placeholders
	}
	cp := &convertedParams{given: map[string]string{}, rename: map[string]string{}, declared: map[string]any{}}
	for _, name := range def.ParamNames() {
		pp := def.Spec.Parameters[name]
		cn := strings.ReplaceAll(name, ".", "_")
		cp.rename[name] = cn
		cp.declared[cn] = pp
		if pp.Required && pp.Default == nil {
			cp.given[name] = placeholder(pp.Type)
		}
	}
	if values == nil {
		if values, err = def.ResolveParameters(cp.given); err != nil {
			return nil, err
		}
	}
	cp.values = values
	return cp, nil
}

// conversion is the state of one Convert: the evaluated graph, its nodes
// by role, and the notes on what is not carried over.
type conversion struct {
	e                   *evaluation
	g                   *evaluated
	argo, flux, sources []*graph.Node
	notes               []string
}

// evaluate evaluates the RGD's nodes for an instance named by the
// definition's app expressions, binds its OCM Resource nodes and sorts the
// others into deployer blocks, Flux sources and what is not converted.
func (c *conversion) evaluate(ctx context.Context, r *RGD, inst *schema.Instance, params *convertedParams) error {
	order, level, err := r.Analyze()
	if err != nil {
		return err
	}
	meta := map[string]any{"name": "${app.name}", "namespace": "${app.namespace}"}
	c.g = &evaluated{rgd: r, order: order, level: level, objs: map[string]map[string]any{}, items: map[string][]map[string]any{}, bindings: map[string]*binding{}}
	ispec, err := inst.Spec(params.values, params.given)
	if err != nil {
		return err
	}
	vars := map[string]any{"schema": map[string]any{"metadata": meta, "spec": ispec}}
	ids := []string{"schema"}
	for _, n := range r.Nodes {
		ids = append(ids, n.ID)
	}
	ev := c.e.p.limits().Evaluator(ids)
	for _, n := range order {
		if len(n.Iterators) > 0 {
			c.notes = append(c.notes, fmt.Sprintf("node %s (forEach) is not converted: a ComponentDeployment renders resources of the component, not objects of its own", n.ID))
			continue
		}
		v, err := ev.Walk(ctx, fmt.Sprintf("%s: node %s: template", r.Source, n.ID), n.Template, vars)
		if err != nil {
			return err
		}
		obj, _ := v.(map[string]any)
		if err := c.classify(ctx, r, n, obj); err != nil {
			return err
		}
		c.g.objs[n.ID] = obj
		vars[n.ID] = obj
	}
	return nil
}

// classify files an evaluated node under its role in the conversion.
func (c *conversion) classify(ctx context.Context, r *RGD, n *graph.Node, obj map[string]any) error {
	grp, kind := graph.GVK(obj)
	switch {
	case grp == graph.OCMGroup && kind == "Resource":
		b, err := c.e.resolveResource(ctx, r, n, obj)
		if err != nil {
			return err
		}
		c.g.bindings[n.ID] = b
	case grp == graph.OCMGroup:
	case grp == "argoproj.io" && kind == "Application":
		c.argo = append(c.argo, n)
	case grp == "helm.toolkit.fluxcd.io" && kind == "HelmRelease", grp == "kustomize.toolkit.fluxcd.io" && kind == "Kustomization":
		c.flux = append(c.flux, n)
	case grp == "source.toolkit.fluxcd.io":
		c.sources = append(c.sources, n)
	default:
		c.notes = append(c.notes, fmt.Sprintf("node %s (%s) is not converted: a ComponentDeployment renders resources of the component, not objects of its own", n.ID, graph.GroupKind(grp, kind)))
	}
	return nil
}

// renders turns the chosen deployer blocks into the definition's renders;
// a block rendering a resource of a referenced component is only noted.
func (c *conversion) renders(blocks []*graph.Node, rename map[string]string) ([]any, error) {
	r := c.g.rgd
	rw := &rewriter{rename: rename, g: c.g, cv: c.e.cv}
	var renders []any
	for _, n := range blocks {
		s, err := c.e.blockStep(c.g, n, c.sources)
		if err != nil {
			return nil, err
		}
		if s.Component != nil {
			c.notes = append(c.notes, fmt.Sprintf("node %s renders resource %s of a referenced component: a ComponentDeployment renders the component's own resources", n.ID, s.Resource.Identity()))
			continue
		}
		render := map[string]any{"name": n.ID, "resource": identityMap(s.Resource.Identity())}
		raw, err := rw.tree(blockFields(n))
		if err != nil {
			return nil, fmt.Errorf("%s: node %s: %w", r.Source, n.ID, err)
		}
		for k, v := range raw {
			render[k] = v
		}
		if s.Path != "" {
			render["path"] = s.Path
		}
		if len(levels(c.g.level, blocks)) > 1 {
			render["syncWave"] = c.g.level[n.ID]
		}
		renders = append(renders, render)
	}
	return renders, nil
}

// convertedDefinition is the ComponentDeployment's YAML, checked to read
// back as a valid definition.
func convertedDefinition(r *RGD, parameters map[string]any, renders []any) ([]byte, error) {
	doc := map[string]any{"apiVersion": deployment.APIVersion, "kind": deployment.Kind,
		"metadata": map[string]any{"name": r.Name, "description": "converted from " + r.Source + " by argocd-ocm-plugin convert"},
		"spec":     map[string]any{"parameters": parameters, "renders": renders}}
	body, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if _, err := deployment.Decode("converted definition", body); err != nil {
		return nil, fmt.Errorf("%s: the converted definition does not validate: %w", r.Source, err)
	}
	return body, nil
}

// document is body behind a comment header: the source, then the notes of
// the evaluation and of the conversion, to be carried over by hand.
func (c *conversion) document(r *RGD, body []byte) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Converted from %s (kind %s). Review before use.\n", r.Source, r.Schema.Kind)
	for _, x := range c.e.report.Notes {
		fmt.Fprintf(&buf, "# %s\n", x)
	}
	for _, x := range c.notes {
		fmt.Fprintf(&buf, "# %s\n", x)
	}
	buf.Write(body)
	return buf.Bytes()
}

func placeholder(t string) string {
	switch t {
	case deployment.TypeInteger, deployment.TypeNumber:
		return "0"
	case deployment.TypeBoolean:
		return "false"
	case deployment.TypeObject:
		return "{}"
	case deployment.TypeArray:
		return "[]"
	}
	return "x"
}

func levels(level map[string]int, ns []*graph.Node) map[int]bool {
	out := map[int]bool{}
	for _, n := range ns {
		out[level[n.ID]] = true
	}
	return out
}

func identityMap(id ocm.Identity) map[string]any {
	m := map[string]any{}
	for k, v := range id {
		m[k] = v
	}
	return m
}

// blockFields are the raw (unevaluated) fields of a block that become the
// render's: releaseName, namespace, values, kustomize.
func blockFields(n *graph.Node) map[string]any {
	spec, _ := n.Template["spec"].(map[string]any)
	_, kind := graph.GVK(n.Template)
	switch kind {
	case "Application":
		return applicationFields(spec)
	case "HelmRelease":
		return helmReleaseFields(spec)
	case "Kustomization":
		return kustomizationFields(spec)
	}
	return map[string]any{}
}

// applicationFields are the render fields of an Argo CD Application's
// single source.
func applicationFields(spec map[string]any) map[string]any {
	out := map[string]any{}
	src, _ := spec["source"].(map[string]any)
	if src == nil {
		if l, _ := spec["sources"].([]any); len(l) == 1 {
			src, _ = l[0].(map[string]any)
		}
	}
	h, _ := src["helm"].(map[string]any)
	if vals := argoHelmValues(h); len(vals) > 0 {
		out["values"] = vals
	}
	if v, ok := h["releaseName"]; ok {
		out["releaseName"] = v
	}
	if d, ok := spec["destination"].(map[string]any); ok && d["namespace"] != nil {
		out["namespace"] = d["namespace"]
	}
	if k, ok := src["kustomize"].(map[string]any); ok {
		out["kustomize"], _ = argoKustomization(k, "") // checked when the block is interpreted
	}
	return out
}

// argoHelmValues merges an Argo CD helm source's values, valuesObject and
// parameters (dotted names only) into one values tree.
func argoHelmValues(h map[string]any) map[string]any {
	vals := map[string]any{}
	if s, _ := h["values"].(string); strings.TrimSpace(s) != "" {
		_ = yaml.Unmarshal([]byte(s), &vals) // checked when the block is interpreted
	}
	if v, ok := h["valuesObject"].(map[string]any); ok {
		merge(vals, jsonCopy(v).(map[string]any))
	}
	ps, _ := h["parameters"].([]any)
	for _, x := range ps {
		pm, _ := x.(map[string]any)
		name, _ := pm["name"].(string)
		if name == "" || strings.ContainsAny(name, "[]\\") {
			continue // listed by the caller's check: interpreted like Helm's --set
		}
		setDotted(vals, strings.Split(name, "."), pm["value"])
	}
	return vals
}

// setDotted sets the value at a path of keys, making the maps on the way.
func setDotted(m map[string]any, keys []string, v any) {
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

// helmReleaseFields are the render fields of a Flux HelmRelease.
func helmReleaseFields(spec map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"values", "releaseName"} {
		if v, ok := spec[k]; ok {
			out[k] = v
		}
	}
	if v, ok := spec["targetNamespace"]; ok {
		out["namespace"] = v
	}
	return out
}

// kustomizationFields are the render fields of a Flux Kustomization.
func kustomizationFields(spec map[string]any) map[string]any {
	kz := map[string]any{}
	if v, ok := spec["targetNamespace"]; ok {
		kz["namespace"] = v
	}
	for _, k := range []string{"namePrefix", "nameSuffix", "patches", "images"} {
		if v, ok := spec[k]; ok {
			kz[k] = v
		}
	}
	return map[string]any{"kustomize": kz}
}

// rewriter turns RGD expressions into deployment definition expressions.
type rewriter struct {
	rename map[string]string
	g      *evaluated
	cv     ocm.ComponentVersion
}

var refRE = regexp.MustCompile(`(^|[^\w.])([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)*)`)

func (rw *rewriter) tree(v map[string]any) (map[string]any, error) {
	out, err := rw.walk(v)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	return m, nil
}

func (rw *rewriter) walk(v any) (any, error) {
	switch v := v.(type) {
	case string:
		return rw.template(v)
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			r, err := rw.walk(x)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			r, err := rw.walk(x)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func (rw *rewriter) template(s string) (string, error) {
	es, err := expr.Expressions(s)
	if err != nil || len(es) == 0 {
		return s, err
	}
	out := s
	for _, x := range es {
		nx, err := rw.expression(x)
		if err != nil {
			return "", err
		}
		out = strings.Replace(out, "${"+x+"}", "${"+nx+"}", 1)
	}
	return out, nil
}

// expression rewrites the references of one expression.
func (rw *rewriter) expression(x string) (string, error) {
	var failed error
	out := refRE.ReplaceAllStringFunc(x, func(m string) string {
		sub := refRE.FindStringSubmatch(m)
		lead, root, chain := sub[1], sub[2], sub[3]
		fields := strings.Split(strings.TrimPrefix(chain, "."), ".")
		if chain == "" {
			fields = nil
		}
		switch {
		case root == "schema" && len(fields) >= 2 && fields[0] == "spec":
			// the longest declared parameter the chain starts with
			for i := len(fields); i >= 2; i-- {
				name := strings.Join(fields[1:i], ".")
				if cn, ok := rw.rename[name]; ok {
					return lead + "parameters." + cn + joinRest(fields[i:])
				}
			}
			failed = fmt.Errorf("${%s}: schema.spec.%s is no parameter", x, strings.Join(fields[1:], "."))
		case root == "schema" && len(fields) >= 2 && fields[0] == "metadata" && (fields[1] == "name" || fields[1] == "namespace"):
			return lead + "app." + fields[1] + joinRest(fields[2:])
		case rw.g.bindings[root] != nil && len(fields) >= 3 && fields[0] == "status" && fields[1] == "additional":
			b := rw.g.bindings[root]
			spec, _ := rw.g.objs[root]["spec"].(map[string]any)
			asf, _ := spec["additionalStatusFields"].(map[string]any)
			src, _ := asf[fields[2]].(string)
			if src == "" {
				failed = fmt.Errorf("${%s}: node %s has no additionalStatusFields.%s", x, root, fields[2])
				return m
			}
			res := "resources[" + strconv.Quote(b.res.Identity().String()) + "]"
			if b.cv != rw.cv {
				failed = fmt.Errorf("${%s}: node %s names a resource of a referenced component", x, root)
				return m
			}
			inner := regexp.MustCompile(`(^|[^\w.])resource\b`).ReplaceAllString(src, "${1}"+res)
			return lead + "(" + inner + ")" + joinRest(fields[3:])
		case rw.g.objs[root] != nil:
			// another node's field, known statically: its value
			var v any = rw.g.objs[root]
			for _, f := range fields {
				mm, _ := v.(map[string]any)
				v = mm[f]
			}
			if s, ok := v.(string); ok {
				return lead + strconv.Quote(s)
			}
			failed = fmt.Errorf("${%s}: reads node %s, which the definition does not have", x, root)
		}
		return m
	})
	return out, failed
}

func joinRest(fs []string) string {
	if len(fs) == 0 {
		return ""
	}
	return "." + strings.Join(fs, ".")
}
