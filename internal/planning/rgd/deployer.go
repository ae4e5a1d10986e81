package rgd

import (
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/overlay"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/graph"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
)

// chooseBlocks picks the deployer blocks to render: Argo CD's by default
// (what an Argo CD user migrates from), Flux's when asked; the other kind
// is not rendered, so that one instance does not deploy the app twice.
func (e *evaluation) chooseBlocks(r *RGD, argo, flux []*graph.Node) ([]*graph.Node, error) {
	ids := func(ns []*graph.Node) string {
		var s []string
		for _, n := range ns {
			s = append(s, n.ID)
		}
		return strings.Join(s, ", ")
	}
	want := e.deployer
	if want == "" {
		want = DeployerArgoCD
	}
	switch {
	case len(argo) == 0 && len(flux) == 0:
		return nil, nil
	case want == DeployerArgoCD && len(argo) > 0:
		if len(flux) > 0 {
			e.note("%s: deployer: the Argo CD block (%s) is rendered; the Flux block (%s) is not (definition rgd:@flux renders it instead)", r.Name, ids(argo), ids(flux))
		} else {
			e.note("%s: deployer: the Argo CD block (%s) is rendered", r.Name, ids(argo))
		}
		return argo, nil
	case want == DeployerFlux && len(flux) > 0:
		if len(argo) > 0 {
			e.note("%s: deployer: the Flux block (%s) is rendered, as asked; the Argo CD block (%s) is not", r.Name, ids(flux), ids(argo))
		} else {
			e.note("%s: deployer: the Flux block (%s) is rendered", r.Name, ids(flux))
		}
		return flux, nil
	case len(argo) > 0:
		e.note("%s: deployer: %s was asked for, but the RGD has only an Argo CD block (%s): rendered", r.Name, want, ids(argo))
		return argo, nil
	default:
		e.note("%s: deployer: %s was asked for, but the RGD has only a Flux block (%s): rendered", r.Name, want, ids(flux))
		return flux, nil
	}
}

// blockStep interprets one deployer block as a render of an OCM resource.
func (e *evaluation) blockStep(g *evaluated, n *graph.Node, sources []*graph.Node) (step, error) {
	obj := g.objs[n.ID]
	where := fmt.Sprintf("%s: node %s", g.rgd.Source, n.ID)
	_, kind := graph.GVK(obj)
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return step{}, fmt.Errorf("%w: %s: no spec", errdef.ErrInvalidInput, where)
	}
	switch kind {
	case "Application":
		return e.argoStep(g, n, obj, spec, where)
	case "HelmRelease":
		return e.helmReleaseStep(g, n, obj, spec, sources, where)
	default:
		return e.kustomizationStep(g, n, obj, spec, sources, where)
	}
}

// argoStep: an Argo CD Application with one source.
func (e *evaluation) argoStep(g *evaluated, n *graph.Node, obj, spec map[string]any, where string) (step, error) {
	source, field, err := argoSource(spec, where)
	if err != nil {
		return step{}, err
	}
	repoURL, _ := source["repoURL"].(string)
	b, err := e.bindingFor(g, n, field+".repoURL", repoURL, where+": spec.source.repoURL")
	if err != nil {
		return step{}, err
	}
	ns := e.req.Namespace
	e.noteDestination(g, n, spec, ns)
	s := step{Step: plan.Step{Resource: b.res, Namespace: ns}, node: n.ID}
	if b.cv != e.cv {
		s.Component = b.cv
	}
	rr := explain.RenderReport{Name: n.ID + " (Argo CD Application)", Resource: b.res.Identity().String(), Type: b.res.Type, Namespace: ns}
	switch plan.RendersOf(b.res.Type) {
	case plan.RendersChart:
		meta, _ := obj["metadata"].(map[string]any)
		appName, _ := meta["name"].(string)
		h, _ := source["helm"].(map[string]any)
		if err := argoChart(&s, &rr, n, h, appName, where); err != nil {
			return step{}, err
		}
	case plan.RendersTree:
		if err := argoTree(&s, &rr, source, where); err != nil {
			return step{}, err
		}
	default:
		return step{}, notRenderable(where, b)
	}
	e.report.Renders = append(e.report.Renders, rr)
	return s, nil
}

// argoSource is the one source of an Application (spec.source, or the
// single entry of spec.sources) and its template field.
func argoSource(spec map[string]any, where string) (map[string]any, string, error) {
	source, _ := spec["source"].(map[string]any)
	field := "template.spec.source"
	if source == nil {
		srcs, _ := spec["sources"].([]any)
		if len(srcs) != 1 {
			return nil, "", fmt.Errorf("%w: %s: spec.sources has %d sources; the plugin renders an Application with one source", errdef.ErrInvalidInput, where, len(srcs))
		}
		source, _ = srcs[0].(map[string]any)
		field = "template.spec.sources[0]"
	}
	if source == nil {
		return nil, "", fmt.Errorf("%w: %s: spec.source is missing", errdef.ErrInvalidInput, where)
	}
	return source, field, nil
}

// noteDestination notes a block destination namespace that is not used:
// the block's destination is the nested Application's; the objects go
// where the Application that renders them sends them (ns).
func (e *evaluation) noteDestination(g *evaluated, n *graph.Node, spec map[string]any, ns string) {
	dest, _ := spec["destination"].(map[string]any)
	if dns, _ := dest["namespace"].(string); dns != "" && dns != ns {
		e.note("%s: node %s: destination.namespace %s is not used: the objects go to the destination namespace of the Application that renders them (%s), which is also the Helm release namespace unless spec.source.helm.namespace sets one; set the Application's destination namespace to %s to deploy there",
			g.rgd.Name, n.ID, dns, orDash(ns), dns)
	}
}

// argoChart fills a chart step (and its report) from the source's helm
// field: values, release name, release namespace.
func argoChart(s *step, rr *explain.RenderReport, n *graph.Node, h map[string]any, appName, where string) error {
	vals, origins, err := argoChartValues(n, h, where)
	if err != nil {
		return err
	}
	release, _ := h["releaseName"].(string)
	if release == "" {
		release = appName // Argo CD's default
	}
	// The release namespace: helm.namespace, else the destination
	// namespace of the Application that renders (Argo CD templates with
	// its destination namespace; objects without one land there).
	if hns, _ := h["namespace"].(string); hns != "" {
		s.Namespace, rr.Namespace = hns, hns
	}
	s.ReleaseName, s.Values = release, jsonCopy(vals).(map[string]any)
	rr.ReleaseName, rr.Values = release, originLeaves(s.Values, origins, n.ID+": spec.source.helm")
	return nil
}

// valueOrigins records, for each leaf path of the values, the block
// fields that set it (lowest first), for --explain.
type valueOrigins map[string][]explain.Origin

func (o valueOrigins) record(m map[string]any, source, exprOf func(string) string) {
	walkLeaves(m, "", func(p string, v any) {
		o[p] = append(o[p], explain.Origin{Layer: explain.LayerDefinition, Source: source(p), Expr: exprOf(p), Value: v})
	})
}

// argoChartValues are the values of an Argo CD helm source, in Argo CD's
// order of precedence: values, then valuesObject, then parameters.
func argoChartValues(n *graph.Node, h map[string]any, where string) (map[string]any, valueOrigins, error) {
	for _, f := range []string{"valueFiles", "fileParameters"} {
		if v, ok := h[f].([]any); ok && len(v) > 0 {
			return nil, nil, fmt.Errorf("%w: %s: spec.source.helm.%s: files of the Argo CD source are not supported; give the values in valuesObject", errdef.ErrInvalidInput, where, f)
		}
	}
	vals := map[string]any{}
	origins := valueOrigins{}
	noExpr := func(string) string { return "" }
	if s, _ := h["values"].(string); strings.TrimSpace(s) != "" {
		if err := yaml.Unmarshal([]byte(s), &vals); err != nil {
			return nil, nil, fmt.Errorf("%w: %s: spec.source.helm.values is not a YAML map: %v", errdef.ErrInvalidInput, where, err)
		}
		vals = jsonCopy(vals).(map[string]any)
		origins.record(vals, func(p string) string { return n.ID + ": spec.source.helm.values: " + p }, noExpr)
	}
	if vo, ok := h["valuesObject"].(map[string]any); ok {
		merge(vals, vo)
		origins.record(vo, func(p string) string { return n.ID + ": spec.source.helm.valuesObject." + p },
			func(p string) string { return exprAt(n, "template.spec.source.helm.valuesObject."+p) })
	}
	if err := setArgoParameters(n, h, vals, origins, where); err != nil {
		return nil, nil, err
	}
	return vals, origins, nil
}

// setArgoParameters sets the helm source's parameters into vals the way
// Helm's --set (or --set-string, forceString) does.
func setArgoParameters(n *graph.Node, h, vals map[string]any, origins valueOrigins, where string) error {
	ps, _ := h["parameters"].([]any)
	for i, x := range ps {
		pm, _ := x.(map[string]any)
		name, _ := pm["name"].(string)
		val, err := expr.Stringify(pm["value"])
		if name == "" || err != nil {
			return fmt.Errorf("%w: %s: spec.source.helm.parameters[%d]: want {name, value}", errdef.ErrInvalidInput, where, i)
		}
		set := strvals.ParseInto
		if fs, _ := pm["forceString"].(bool); fs {
			set = strvals.ParseIntoString
		}
		if err := set(name+"="+val, vals); err != nil {
			return fmt.Errorf("%w: %s: spec.source.helm.parameters[%d] (%s): %v", errdef.ErrInvalidInput, where, i, errdef.Field(name), err)
		}
		// The parameter alone, to name it as the origin of what it sets.
		one := map[string]any{}
		if err := set(name+"="+val, one); err == nil {
			src := fmt.Sprintf("%s: spec.source.helm.parameters[%d] (%s)", n.ID, i, errdef.Field(name))
			x := exprAt(n, fmt.Sprintf("template.spec.source.helm.parameters[%d].value", i))
			origins.record(one, func(string) string { return src }, func(string) string { return x })
		}
	}
	return nil
}

// argoTree fills a tree step (and its report) from the source's path and
// kustomize field.
func argoTree(s *step, rr *explain.RenderReport, source map[string]any, where string) error {
	path, _ := source["path"].(string)
	s.Path = treePath(path)
	k, _ := source["kustomize"].(map[string]any)
	ov, err := argoOverlay(k, where)
	if err != nil {
		return err
	}
	s.Overlay = ov
	rr.Path = s.Path
	if ov != nil {
		rr.Overlay = overlay.Text(ov, "", nil)
	}
	return nil
}

func notRenderable(where string, b *binding) error {
	return fmt.Errorf("%w: %s: OCM Resource node %s is resource %s of type %s; the plugin renders helmChart, directoryTree and (one tar layer) ociArtifact resources of the component",
		errdef.ErrUnsupportedMediaType, where, b.node, b.res.Identity(), b.res.Type)
}

// helmReleaseStep: a Flux HelmRelease whose chartRef is an OCIRepository node.
func (e *evaluation) helmReleaseStep(g *evaluated, n *graph.Node, obj, spec map[string]any, sources []*graph.Node, where string) (step, error) {
	for _, f := range []string{"postRenderers", "valuesFrom"} {
		if v, ok := spec[f]; ok && v != nil {
			return step{}, fmt.Errorf("%w: %s: spec.%s is not supported: %s", errdef.ErrInvalidInput, where, f,
				map[string]string{"postRenderers": "Flux post-renderers run in the cluster", "valuesFrom": "values from ConfigMaps and Secrets of the cluster are not known to a static render; put them in spec.values"}[f])
		}
	}
	if _, ok := spec["chart"]; ok {
		return step{}, fmt.Errorf("%w: %s: spec.chart (a chart of a HelmRepository) is not an OCM resource; use chartRef to an OCIRepository node fed by an OCM Resource node", errdef.ErrInvalidInput, where)
	}
	ref, _ := spec["chartRef"].(map[string]any)
	src, err := e.fluxSource(g, ref, sources, where+": spec.chartRef")
	if err != nil {
		return step{}, err
	}
	b, err := e.sourceBinding(g, src, where)
	if err != nil {
		return step{}, err
	}
	if plan.RendersOf(b.res.Type) != plan.RendersChart {
		return step{}, notRenderable(where, b)
	}
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	tns, _ := spec["targetNamespace"].(string)
	release, _ := spec["releaseName"].(string)
	if release == "" {
		release = name
		if tns != "" {
			release = tns + "-" + name // Flux's default
		}
	}
	ns := tns
	if ns == "" {
		ns, _ = meta["namespace"].(string)
	}
	if ns == "" {
		ns = e.req.Namespace
	}
	vals, _ := spec["values"].(map[string]any)
	if vals == nil {
		vals = map[string]any{}
	}
	s := step{Step: plan.Step{Resource: b.res, ReleaseName: release, Namespace: ns, Values: vals}, node: n.ID}
	if b.cv != e.cv {
		s.Component = b.cv
	}
	e.report.Renders = append(e.report.Renders, explain.RenderReport{Name: n.ID + " (Flux HelmRelease, source " + src.ID + ")", Resource: b.res.Identity().String(),
		Type: b.res.Type, ReleaseName: release, Namespace: ns, Values: leavesWithExpr(n, vals, n.ID+": spec.values", "template.spec.values")})
	return s, nil
}

// kustomizationStep: a Flux Kustomization whose sourceRef is an
// OCIRepository or GitRepository node.
func (e *evaluation) kustomizationStep(g *evaluated, n *graph.Node, _ map[string]any, spec map[string]any, sources []*graph.Node, where string) (step, error) {
	for _, f := range []string{"postBuild", "components", "decryption", "kubeConfig"} {
		if v, ok := spec[f]; ok && v != nil {
			return step{}, fmt.Errorf("%w: %s: spec.%s is not supported by the static render", errdef.ErrInvalidInput, where, f)
		}
	}
	ref, _ := spec["sourceRef"].(map[string]any)
	src, err := e.fluxSource(g, ref, sources, where+": spec.sourceRef")
	if err != nil {
		return step{}, err
	}
	b, err := e.sourceBinding(g, src, where)
	if err != nil {
		return step{}, err
	}
	if plan.RendersOf(b.res.Type) != plan.RendersTree {
		return step{}, notRenderable(where, b)
	}
	ov := map[string]any{}
	if t, _ := spec["targetNamespace"].(string); t != "" {
		ov["namespace"] = t
	}
	for _, f := range []string{"namePrefix", "nameSuffix", "patches", "images"} {
		if v, ok := spec[f]; ok && v != nil {
			ov[f] = v
		}
	}
	if cm, ok := spec["commonMetadata"].(map[string]any); ok {
		if l, ok := cm["labels"].(map[string]any); ok {
			ov["labels"] = []any{map[string]any{"pairs": l}}
		}
		if a, ok := cm["annotations"]; ok {
			ov["commonAnnotations"] = a
		}
	}
	var o *kustomize.Overlay
	if len(ov) > 0 {
		if o, err = overlay.Decode(where, ov); err != nil {
			return step{}, err
		}
		o.SetEntryNames = true // Flux sets them in the root kustomization
	}
	path, _ := spec["path"].(string)
	s := step{Step: plan.Step{Resource: b.res, Path: treePath(path), Overlay: o, Namespace: e.req.Namespace}, node: n.ID}
	if b.cv != e.cv {
		s.Component = b.cv
	}
	rr := explain.RenderReport{Name: n.ID + " (Flux Kustomization, source " + src.ID + ")", Resource: b.res.Identity().String(), Type: b.res.Type, Path: s.Path}
	if o != nil {
		rr.Overlay = overlay.Text(o, "", nil)
	}
	e.report.Renders = append(e.report.Renders, rr)
	return s, nil
}

// fluxSource finds the source node a Flux reference names (by kind and
// evaluated metadata.name).
func (e *evaluation) fluxSource(g *evaluated, ref map[string]any, sources []*graph.Node, where string) (*graph.Node, error) {
	kind, _ := ref["kind"].(string)
	name, _ := ref["name"].(string)
	for _, s := range sources {
		obj := g.objs[s.ID]
		_, k := graph.GVK(obj)
		m, _ := obj["metadata"].(map[string]any)
		if k == kind && m["name"] == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: %s: %s %s is no Flux source node of the RGD; the plugin renders only sources fed by OCM Resource nodes", errdef.ErrInvalidInput, where, errdef.Field(kind), errdef.Quote(name))
}

// sourceBinding is the OCM Resource node a Flux source's url was computed from.
func (e *evaluation) sourceBinding(g *evaluated, src *graph.Node, where string) (*binding, error) {
	obj := g.objs[src.ID]
	spec, _ := obj["spec"].(map[string]any)
	url, _ := spec["url"].(string)
	return e.bindingFor(g, src, "template.spec.url", url, fmt.Sprintf("%s: source node %s: spec.url", where, src.ID))
}

func (e *evaluation) sourceUsed(g *evaluated, src *graph.Node, blocks []*graph.Node) bool {
	for _, b := range blocks {
		if slices.Contains(b.Deps, src.ID) {
			return true
		}
	}
	return false
}

// bindingFor is the OCM Resource node a block's URL names: the one its
// expression reads, else the one whose computed status spells the URL.
// The resource is rendered from what the plugin holds, never pulled from
// the URL.
func (e *evaluation) bindingFor(g *evaluated, n *graph.Node, field, url, where string) (*binding, error) {
	found := map[string]bool{}
	for _, x := range n.Exprs {
		if x.Path != field {
			continue
		}
		refs, _ := expr.References(x.Expr)
		for _, r := range refs {
			if _, ok := g.bindings[r.Var]; ok {
				found[r.Var] = true
			}
		}
	}
	if len(found) == 0 {
		u := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(url, "oci://"), "https://"), "/")
		for id, b := range g.bindings {
			if add, ok := b.status["additional"].(map[string]any); ok && spells(add, u, 0) {
				found[id] = true
			}
		}
	}
	ids := sortedKeys(found)
	switch len(ids) {
	case 1:
		return g.bindings[ids[0]], nil
	case 0:
		return nil, fmt.Errorf("%w: %s: %s is computed from no OCM Resource node; the plugin renders only resources of the component, never what a URL names",
			errdef.ErrInvalidInput, where, errdef.Field(url))
	default:
		return nil, fmt.Errorf("%w: %s: computed from several OCM Resource nodes (%s): ambiguous", errdef.ErrInvalidInput, where, errdef.Cut(strings.Join(ids, ", ")))
	}
}

// spells reports whether a computed status (or a map inside it) has a
// registry and repository that make url.
func spells(m map[string]any, url string, depth int) bool {
	reg, _ := m["registry"].(string)
	repo, _ := m["repository"].(string)
	if reg != "" && repo != "" && reg+"/"+repo == url {
		return true
	}
	if depth > 3 {
		return false
	}
	for _, v := range m {
		if mm, ok := v.(map[string]any); ok && spells(mm, url, depth+1) {
			return true
		}
	}
	return false
}

// argoOverlay maps an Argo CD source's kustomize field onto the overlay
// the kustomize renderer builds.
func argoOverlay(k map[string]any, where string) (*kustomize.Overlay, error) {
	if len(k) == 0 {
		return nil, nil
	}
	ov, err := argoKustomization(k, where)
	if err != nil {
		return nil, err
	}
	o, err := overlay.Decode(where+": spec.source.kustomize", ov)
	if err != nil {
		return nil, err
	}
	o.SetEntryNames = true // kustomize edit set nameprefix/namesuffix
	return o, nil
}

// argoKustomization maps an Argo CD source's kustomize field onto the
// fields of a kustomization (the overlay, or convert's ComponentDeployment).
func argoKustomization(k map[string]any, where string) (map[string]any, error) {
	ov := map[string]any{}
	for key, v := range k {
		switch key {
		case "namePrefix", "nameSuffix", "namespace", "commonAnnotations", "patches", "replicas", "components":
			ov[key] = v
		case "commonLabels":
			ov["labels"] = []any{map[string]any{"pairs": v, "includeSelectors": true}}
		case "images":
			list, _ := v.([]any)
			var imgs []any
			for _, x := range list {
				s, _ := x.(string)
				imgs = append(imgs, argoImage(s))
			}
			ov["images"] = imgs
		case "version", "forceCommonLabels", "forceCommonAnnotations", "commonAnnotationsEnvsubst":
			// kustomize version and label forcing: the plugin's kustomize decides
		default:
			return nil, fmt.Errorf("%w: %s: spec.source.kustomize.%s is not supported", errdef.ErrInvalidInput, where, errdef.Field(key))
		}
	}
	return ov, nil
}

// argoImage reads Argo CD's image override "name=newName:tag",
// "name:tag", "name@digest".
func argoImage(s string) map[string]any {
	name, ref, hasEq := strings.Cut(s, "=")
	if !hasEq {
		ref = s
		name = imageName(s)
	}
	m := map[string]any{"name": name}
	newName := ref
	if i := strings.Index(ref, "@"); i >= 0 {
		m["digest"], newName = ref[i+1:], ref[:i]
	} else if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		m["newTag"], newName = ref[i+1:], ref[:i]
	}
	if newName != name {
		m["newName"] = newName
	}
	return m
}

func imageName(s string) string {
	if i := strings.Index(s, "@"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
		s = s[:i]
	}
	return s
}

// treePath turns "./", "." and "./x" into the entry path of a tree.
func treePath(p string) string {
	p = strings.TrimSpace(p)
	for strings.HasPrefix(p, "./") {
		p = strings.TrimPrefix(p, "./")
	}
	p = strings.TrimSuffix(p, "/")
	if p == "." {
		return ""
	}
	return p
}

// merge merges src into dst: maps deeply, the rest replaces.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// leaves lists the values of a render for --explain.
func leaves(v map[string]any, source string) []explain.Leaf {
	var out []explain.Leaf
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for _, k := range sortedKeys(m) {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if mm, ok := m[k].(map[string]any); ok && len(mm) > 0 {
				walk(p, mm)
				continue
			}
			out = append(out, explain.Leaf{Path: p, Value: m[k], History: []explain.Origin{{Layer: explain.LayerDefinition, Source: source + "." + p, Value: m[k]}}})
		}
	}
	walk("", v)
	return out
}

func orDash(s string) string {
	if s == "" {
		return "none given"
	}
	return s
}

// walkLeaves calls f for every leaf of m (a non-empty map is no leaf).
func walkLeaves(m map[string]any, prefix string, f func(path string, v any)) {
	for _, k := range sortedKeys(m) {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if mm, ok := m[k].(map[string]any); ok && len(mm) > 0 {
			walkLeaves(mm, p, f)
			continue
		}
		f(p, m[k])
	}
}

// exprAt is the ${…} expressions of a node's template field, for --explain.
func exprAt(n *graph.Node, path string) string {
	var out []string
	for _, x := range n.Exprs {
		if x.Path == path {
			out = append(out, "${"+x.Expr+"}")
		}
	}
	return strings.Join(out, " ")
}

// originLeaves lists the values of a render with the fields that set them
// (lowest first); a leaf no field set alone (under a map replaced later)
// names the block.
func originLeaves(v map[string]any, origins map[string][]explain.Origin, block string) []explain.Leaf {
	var out []explain.Leaf
	walkLeaves(v, "", func(p string, val any) {
		h := origins[p]
		if len(h) == 0 {
			h = []explain.Origin{{Layer: explain.LayerDefinition, Source: block + ": " + p, Value: val}}
		}
		out = append(out, explain.Leaf{Path: p, Value: val, History: h})
	})
	return out
}

// leavesWithExpr is leaves with the expression of each value, for --explain.
func leavesWithExpr(n *graph.Node, v map[string]any, source, field string) []explain.Leaf {
	out := leaves(v, source)
	for i := range out {
		for j := range out[i].History {
			out[i].History[j].Expr = exprAt(n, field+"."+out[i].Path)
		}
	}
	return out
}
