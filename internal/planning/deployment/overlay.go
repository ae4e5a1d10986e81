package deployment

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/overlay"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
)

// configMapKeyRE is what Kubernetes accepts as a ConfigMap data key.
var configMapKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-._a-zA-Z0-9]+$`) })

// generatedKey is a patch that sets one key of a ConfigMap's data or a
// Secret's stringData by name.
type generatedKey struct {
	secret           bool
	name, key, value string
}

// asGeneratedKey reports whether bp sets one data key of one ConfigMap (or
// one stringData key of one Secret) by name to a string that a generator
// literal carries unchanged.
func asGeneratedKey(bp boundPatch) (generatedKey, bool) {
	if len(bp.targets) != 1 || len(bp.path) != 2 {
		return generatedKey{}, false
	}
	t := bp.targets[0]
	secret := t.Kind == "Secret"
	if (t.Kind != "ConfigMap" && !secret) || t.Name == "" || t.Namespace != "" || (t.APIVersion != "" && t.APIVersion != "v1") {
		return generatedKey{}, false
	}
	field := "data"
	if secret {
		field = "stringData" // data holds base64, which a literal would encode again
	}
	if e := bp.path[0]; e.IsList || e.Key != field {
		return generatedKey{}, false
	}
	e := bp.path[1]
	if e.IsList || !configMapKeyRE().MatchString(e.Key) {
		return generatedKey{}, false
	}
	v, ok := bp.value.(string)
	if !ok {
		return generatedKey{}, false
	}
	// kustomize strips one pair of surrounding quotes from a literal's value.
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return generatedKey{}, false
	}
	return generatedKey{secret: secret, name: t.Name, key: e.Key, value: v}, true
}

// overlay moves the patches of a directory render that kustomize can apply
// itself into a kustomize overlay over the render's entry, when the entry is
// a kustomization: a patch of a data key of a ConfigMap the tree's
// configMapGenerator generates becomes a configMapGenerator literal with
// behavior merge, so the ConfigMap gets a new hash suffix and the objects
// that reference it follow (a post-render patch could not: the rendered
// name carries the old suffix). With automatic localisation, the images
// it would rewrite become the overlay's images (see overlay.Images). The
// other patches are returned, to be applied after rendering as before. The
// tree is read at plan time only when something could move.
//
// The render's kustomize field (see overlay.Spec) is the overlay's start.
func (rs *resolver) overlay(ctx context.Context, rp renderPlan, patches []boundPatch) ([]boundPatch, *kustomize.Overlay, error) {
	defined, err := rs.definitionOverlay(ctx, rp)
	if err != nil {
		return nil, nil, err
	}
	if rp.res.Type == plan.TypeHelmChart {
		return patches, nil, nil
	}
	appOverlay := rs.applicationOverlay(rp)
	rest, derived, from, entry := rs.derivedOverlay(ctx, rp, patches, appOverlay)
	ov := overlay.Join(defined, derived)
	if ov == nil {
		return rest, nil, nil
	}
	if rs.p.Explain != nil {
		rs.explainOverlay(rp, ov, defined, derived, from, entry, appOverlay)
	}
	return rest, ov, nil
}

// explainOverlay records ov for --explain: the kustomization over the
// entry (entry, "" when the planner did not read it) or over the
// Application's overlay, each entry with its origin.
func (rs *resolver) explainOverlay(rp renderPlan, ov, defined, derived *kustomize.Overlay, from derivedFrom, entry string, appOverlay bool) {
	if entry == "" && !appOverlay {
		// an entry that cannot be read is the render's to report
		entry, _ = plan.EntryPath(rp.path, *rp.res)
	}
	if entry == "" {
		entry = "."
	}
	base := "<resource>/" + entry
	if appOverlay {
		base = "<the Application's kustomization.yaml>"
	}
	origins := rs.overlayOrigins(rp, defined, from)
	if !appOverlay {
		if o := rs.entryOrigin(rp); o != "" {
			origins["resources[0]"] = o
		}
	}
	text := overlay.Text(ov, base, origins)
	if defined != nil {
		text = fmt.Sprintf("# from %s: spec.renders[%d].%s", rs.def.Source, rp.index, kustomizeField) + derivedNote(derived) + "\n" + text
	}
	rr := &rs.report.Renders[len(rs.report.Renders)-1]
	rr.Overlay = text
	rr.OverlayNamespace, rr.OverlayNamespaceAt = ov.Namespace, origins["namespace"]
}

// overlayOrigins says where each entry of the overlay comes from: the
// definition's line for the kustomize field's (for a value an expression
// made whole, the line of the nearest field above it), the patches and the
// image resources for what the planner derived (from, in the order
// overlay.Join appends it).
func (rs *resolver) overlayOrigins(rp renderPlan, defined *kustomize.Overlay, from derivedFrom) overlay.Origins {
	origins := overlay.Origins{}
	if defined != nil {
		field := fieldpath.Key("spec", "renders").Index(rp.index).Child(kustomizeField)
		for _, e := range overlay.Entries(defined) {
			if at := rs.definitionAt(append(field[:len(field):len(field)], e...), len(field)); at != "" {
				origins[e.String()] = at
			}
		}
	}
	var defCM, defSecret, defImages int
	if defined != nil {
		defCM, defSecret, defImages = len(defined.ConfigMapGenerator), len(defined.SecretGenerator), len(defined.Images)
	}
	for i, srcs := range from.configMaps {
		origins[fieldpath.Key("configMapGenerator").Index(defCM+i).String()] = rs.patchesAt(srcs)
	}
	for i, srcs := range from.secrets {
		origins[fieldpath.Key("secretGenerator").Index(defSecret+i).String()] = rs.patchesAt(srcs)
	}
	for i, o := range from.images {
		origins[fieldpath.Key("images").Index(defImages+i).String()] = o
	}
	return origins
}

// definitionAt says where p is written in the definition ("definition
// line 14, column 9"), or, for a value that an expression made, the
// nearest field above it written there, down to floor elements of p; ""
// when none is known.
func (rs *resolver) definitionAt(p fieldpath.Path, floor int) string {
	if rs.def == nil {
		return ""
	}
	for q := p; len(q) >= max(floor, 1); q = q[:len(q)-1] {
		if pos, ok := rs.def.Positions.At(q); ok {
			at := "definition " + pos.String()
			if len(q) < len(p) {
				at += " (" + q.String() + ")"
			}
			return at
		}
	}
	return ""
}

// patchesAt names the patches a generator merge comes from, with their
// lines when the definition declares them.
func (rs *resolver) patchesAt(sources []string) string {
	parts := make([]string, len(sources))
	for i, src := range sources {
		parts[i] = src
		if rs.def != nil {
			if pos, ok := rs.def.Positions.Of(src); ok {
				parts[i] += " (definition " + pos.String() + ")"
			}
		}
	}
	return "from " + strings.Join(parts, "; ")
}

// entryOrigin says where the entry path of rp comes from, "" for the root.
func (rs *resolver) entryOrigin(rp renderPlan) string {
	switch {
	case rp.render != nil && rp.render.Path != "":
		if at := rs.definitionAt(fieldpath.Key("spec", "renders").Index(rp.index).Child("path"), 3); at != "" {
			return "entry path: " + at
		}
		return "entry path: the definition's path"
	case rp.path != "":
		return "entry path: the Application's path"
	}
	if _, ok := rp.res.Label(plan.EntryPathLabel); ok {
		return "entry path: the resource's label " + plan.EntryPathLabel
	}
	return ""
}

// derivedNote says what the planner added to a definition's overlay.
func derivedNote(derived *kustomize.Overlay) string {
	if derived == nil {
		return ""
	}
	return ", with generator merges from patches and images from localisation (see patches and automatic localization)"
}

// derivedFrom says where the entries of a derived overlay come from: per
// generator merge the sources of its patches, per image its origin (see
// overlay.Images).
type derivedFrom struct {
	configMaps, secrets [][]string
	images              []string
}

// derivedOverlay is the part of overlay that the planner derives from
// patches and localisation; it returns the patches left, where the
// overlay's entries come from, and the entry.
func (rs *resolver) derivedOverlay(ctx context.Context, rp renderPlan, patches []boundPatch, appOverlay bool) ([]boundPatch, *kustomize.Overlay, derivedFrom, string) {
	d := rs.cv.Descriptor()
	auto := rs.req.Localize || (rs.def != nil && rs.def.Spec.Localization != nil && rs.def.Spec.Localization.Automatic)
	candidate := auto
	for _, bp := range patches {
		if _, ok := asGeneratedKey(bp); ok {
			candidate = true
			break
		}
	}
	if !candidate {
		return patches, nil, derivedFrom{}, ""
	}
	// An entry or a tree that cannot be read here cannot be rendered either:
	// the render reports it, with its own context (the entry path hint, the
	// resource), so the overlay is then left out rather than failing first.
	entry, err := plan.EntryPath(rp.path, *rp.res)
	if err != nil {
		return patches, nil, derivedFrom{}, ""
	}
	tree, err := rs.tree(ctx, rp.res)
	if err != nil {
		return patches, nil, derivedFrom{}, ""
	}
	var isKustomization bool
	var gen kustomize.Generated
	if appOverlay {
		// The Application's kustomization chooses the tree's directories:
		// any generator of the tree may be the one it builds.
		isKustomization, gen, err = true, tree.TreeGenerators(), nil
	} else {
		isKustomization, gen, err = tree.Generators(entry)
	}
	if err != nil {
		return patches, nil, derivedFrom{}, ""
	}
	if !isKustomization {
		return patches, nil, derivedFrom{}, ""
	}
	rest, ov, from := rs.generatorMerges(patches, gen)
	if auto {
		images, _ := localize.Images(d)
		ov.Images, from.images = overlay.Images(tree, images)
	}
	if len(ov.ConfigMapGenerator) == 0 && len(ov.SecretGenerator) == 0 && len(ov.Images) == 0 {
		return patches, nil, derivedFrom{}, entry
	}
	return rest, ov, from, entry
}

// generatorMerges moves the patches that set a key of what gen's
// generators generate into generator merges of an overlay (reporting each
// moved patch, a Secret's value hidden), and returns the other patches
// and, per merge, the sources of its patches.
func (rs *resolver) generatorMerges(patches []boundPatch, gen kustomize.Generated) ([]boundPatch, *kustomize.Overlay, derivedFrom) {
	generated := map[generatedKind]bool{}
	for _, n := range gen.ConfigMaps {
		generated[generatedKind{false, n}] = true
	}
	for _, n := range gen.Secrets {
		generated[generatedKind{true, n}] = true
	}
	var rest []boundPatch
	var order []generatedKind                       // generators, first use first
	keys := map[generatedKind][]string{}            // generator -> keys, first set first
	values := map[generatedKind]map[string]string{} // the last patch of a key wins, as after rendering
	sources := map[generatedKind][]string{}         // generator -> its patches
	for _, bp := range patches {
		g, ok := asGeneratedKey(bp)
		gk := generatedKind{g.secret, g.name}
		if !ok || !generated[gk] {
			rest = append(rest, bp)
			continue
		}
		if values[gk] == nil {
			values[gk] = map[string]string{}
			order = append(order, gk)
		}
		if _, seen := values[gk][g.key]; !seen {
			keys[gk] = append(keys[gk], g.key)
		}
		values[gk][g.key] = g.value
		sources[gk] = append(sources[gk], bp.source)
		pr := explain.PatchReport{Render: bp.render, Source: bp.source, Path: bp.path.String(), Value: bp.value,
			Objects: []string{"kustomize overlay: configMapGenerator " + g.name + " (behavior merge)"}}
		if g.secret {
			pr.Value, pr.Secret = overlay.SecretValueShown, true
			pr.Objects = []string{"kustomize overlay: secretGenerator " + g.name + " (behavior merge)"}
		}
		rs.report.Patches = append(rs.report.Patches, pr)
	}
	ov := &kustomize.Overlay{}
	var from derivedFrom
	for _, gk := range order {
		var lits []string
		for _, k := range keys[gk] {
			lits = append(lits, k+"="+values[gk][k])
		}
		args := types.GeneratorArgs{Name: gk.name, Behavior: "merge", KvPairSources: types.KvPairSources{LiteralSources: lits}}
		if gk.secret {
			ov.SecretGenerator = append(ov.SecretGenerator, types.SecretArgs{GeneratorArgs: args})
			from.secrets = append(from.secrets, sources[gk])
		} else {
			ov.ConfigMapGenerator = append(ov.ConfigMapGenerator, types.ConfigMapArgs{GeneratorArgs: args})
			from.configMaps = append(from.configMaps, sources[gk])
		}
	}
	return rest, ov, from
}

// generatedKind is a generator of the tree: a Secret's or a ConfigMap's.
type generatedKind struct {
	secret bool
	name   string
}

// applicationOverlay records, for --explain, that the render builds the
// Application's own kustomization over the resource (see
// application.Request.ApplicationOverlay), and reports it.
func (rs *resolver) applicationOverlay(rp renderPlan) bool {
	ok, named, err := rs.req.ApplicationOverlay()
	if err != nil || !ok || !slices.Contains(named, rp.res.Name) {
		return false
	}
	text := fmt.Sprintf("kustomization.yaml of the Application's directory, with this resource shown as %s/%s; it names the directories it builds, the entry path is not used",
		kustomize.MountDir, rp.res.Name)
	if rs.p.Explain != nil {
		if at := rs.req.ApplicationOverlayNamedAt(rp.res.Name); at != "" {
			text += "; named first at " + at
		}
	}
	rs.report.Renders[len(rs.report.Renders)-1].ApplicationOverlay = text
	return true
}

// redactSecretExpressions hides the results of the expressions of patches
// that went into a Secret (their values are in the output, as kustomize
// encodes them, and nowhere else).
func redactSecretExpressions(r *explain.Report) {
	for _, p := range r.Patches {
		if !p.Secret {
			continue
		}
		for i := range r.Expressions {
			if w := r.Expressions[i].Where; w == p.Source+".value" || strings.HasPrefix(w, p.Source+".value.") || strings.HasPrefix(w, p.Source+".value[") {
				r.Expressions[i].Result = overlay.SecretValueShown
			}
		}
	}
}
