package config

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/pipeline"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/render/manifests"
)

// configMapKeyRE is what Kubernetes accepts as a ConfigMap data key.
var configMapKeyRE = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// generatedKey is a patch that sets one data key of a ConfigMap by name.
type generatedKey struct {
	name, key, value string
}

// asGeneratedKey reports whether bp sets one data key of one ConfigMap by
// name to a string that a configMapGenerator literal carries unchanged.
func asGeneratedKey(bp boundPatch) (generatedKey, bool) {
	if len(bp.targets) != 1 || len(bp.path) != 2 {
		return generatedKey{}, false
	}
	t := bp.targets[0]
	if t.Kind != "ConfigMap" || t.Name == "" || t.Namespace != "" || (t.APIVersion != "" && t.APIVersion != "v1") {
		return generatedKey{}, false
	}
	if e := bp.path[0]; e.IsList || e.Key != "data" {
		return generatedKey{}, false
	}
	e := bp.path[1]
	if e.IsList || !configMapKeyRE.MatchString(e.Key) {
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
	return generatedKey{name: t.Name, key: e.Key, value: v}, true
}

// overlay moves the patches of a directory render that kustomize can apply
// itself into a kustomize overlay over the render's entry, when the entry is
// a kustomization: a patch of a data key of a ConfigMap the tree's
// configMapGenerator generates becomes a configMapGenerator literal with
// behavior merge, so the ConfigMap gets a new hash suffix and the objects
// that reference it follow (a post-render patch could not: the rendered
// name carries the old suffix). With automatic localisation, the images
// it would rewrite become the overlay's images (see overlayImages). The
// other patches are returned, to be applied after rendering as before. The
// tree is read at plan time only when something could move.
func (rs *resolver) overlay(ctx context.Context, rp renderPlan, patches []boundPatch) ([]boundPatch, *kustomize.Overlay, error) {
	if rp.res.Type == pipeline.TypeHelmChart {
		return patches, nil, nil
	}
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
		return patches, nil, nil
	}
	// An entry or a tree that cannot be read here cannot be rendered either:
	// the render reports it, with its own context (the entry path hint, the
	// resource), so the overlay is then left out rather than failing first.
	entry, err := pipeline.EntryPath(pipeline.Step{Path: rp.path}, *rp.res)
	if err != nil {
		return patches, nil, nil
	}
	tree, err := rs.tree(ctx, rp.res)
	if err != nil {
		return patches, nil, nil
	}
	isKustomization, names, err := kustomize.GeneratedConfigMaps(tree, entry)
	if err != nil {
		return patches, nil, nil
	}
	if !isKustomization {
		return patches, nil, nil
	}
	generated := map[string]bool{}
	for _, n := range names {
		generated[n] = true
	}
	var rest []boundPatch
	var order []string                       // generator names, first use first
	keys := map[string][]string{}            // generator name -> keys, first set first
	values := map[string]map[string]string{} // the last patch of a key wins, as after rendering
	for _, bp := range patches {
		g, ok := asGeneratedKey(bp)
		if !ok || !generated[g.name] {
			rest = append(rest, bp)
			continue
		}
		if values[g.name] == nil {
			values[g.name] = map[string]string{}
			order = append(order, g.name)
		}
		if _, seen := values[g.name][g.key]; !seen {
			keys[g.name] = append(keys[g.name], g.key)
		}
		values[g.name][g.key] = g.value
		rs.report.Patches = append(rs.report.Patches, PatchReport{Render: bp.render, Source: bp.source, Path: bp.path.String(), Value: bp.value,
			Objects: []string{"kustomize overlay: configMapGenerator " + g.name + " (behavior merge)"}})
	}
	ov := &kustomize.Overlay{}
	if auto {
		images, _ := localize.Images(d)
		ov.Images = overlayImages(tree, images)
	}
	for _, n := range order {
		var lits []string
		for _, k := range keys[n] {
			lits = append(lits, k+"="+values[n][k])
		}
		ov.ConfigMapGenerator = append(ov.ConfigMapGenerator, types.ConfigMapArgs{GeneratorArgs: types.GeneratorArgs{
			Name: n, Behavior: "merge", KvPairSources: types.KvPairSources{LiteralSources: lits}}})
	}
	if len(ov.ConfigMapGenerator) == 0 && len(ov.Images) == 0 {
		return patches, nil, nil
	}
	if entry == "" {
		entry = "."
	}
	rs.report.Renders[len(rs.report.Renders)-1].Overlay = overlayText(ov, entry)
	return rest, ov, nil
}

// overlayImages is the images field of an overlay that localises what
// automatic localisation would rewrite after rendering: every container
// image written in a manifest of the tree that matches an image resource
// (see localize.Match), by the name as written, set to the component's
// location. A name whose references localise to different locations, or
// that does not parse, is left out. Localisation still runs after
// rendering: it finds these images at their location already, and
// rewrites what kustomize could not name before rendering (images set by
// the tree's own transformers, by generators).
func overlayImages(tree *archive.Tree, images []localize.Image) []types.Image {
	if len(images) == 0 {
		return nil
	}
	byName := map[string]*types.Image{}
	conflict := map[string]bool{}
	var order []string
	for _, name := range tree.Files() {
		switch path.Ext(name) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		data, err := tree.ReadFile(name)
		if err != nil {
			continue
		}
		objs, err := manifests.Decode(name, data)
		if err != nil {
			continue // kustomize reports it, or never reads the file
		}
		for _, o := range objs {
			for _, written := range containerImages(o) {
				ref, err := registry.ParseReference(written)
				if err != nil {
					continue
				}
				img, err := localize.Match(images, ref)
				if err != nil || img == nil {
					continue
				}
				to := img.Location()
				if to == ref {
					continue
				}
				n := writtenName(written)
				want := types.Image{Name: n, NewName: to.Name(), NewTag: to.Tag, Digest: to.Digest}
				if have, ok := byName[n]; ok {
					if *have != want {
						conflict[n] = true
					}
					continue
				}
				byName[n] = &want
				order = append(order, n)
			}
		}
	}
	var out []types.Image
	for _, n := range order {
		if !conflict[n] {
			out = append(out, *byName[n])
		}
	}
	return out
}

// containerImages returns the container images of a workload object.
func containerImages(o manifests.Object) []string {
	specPath, ok := localize.PodSpecPath(o)
	if !ok {
		return nil
	}
	spec, _ := fieldpath.Get(o, specPath)
	sm, _ := spec.(map[string]any)
	var out []string
	for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
		list, _ := sm[field].([]any)
		for _, c := range list {
			cm, _ := c.(map[string]any)
			if s, ok := cm["image"].(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// writtenName is an image reference without its tag and digest, as
// kustomize's images field names it.
func writtenName(ref string) string {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	return ref
}

// overlayText is ov as the kustomization the renderer builds over the
// entry, for --explain.
func overlayText(ov *kustomize.Overlay, entry string) string {
	k := types.Kustomization{
		TypeMeta:           types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources:          []string{"<resource>/" + entry},
		ConfigMapGenerator: ov.ConfigMapGenerator,
		Images:             ov.Images,
		Patches:            ov.Patches,
	}
	b, err := yaml.Marshal(k)
	if err != nil {
		return fmt.Sprintf("%+v", *ov)
	}
	return string(b)
}
