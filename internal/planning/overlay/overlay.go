package overlay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strings"
	"unicode"

	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
)

// SecretValueShown is what --explain shows for a value that goes into a
// Secret.
const SecretValueShown = "(secret value, not shown)"

// Spec is a render's kustomize field: the fields of a
// kustomization that the plugin writes as an overlay over the entry, in
// kustomize's own spelling (see docs/kustomize.md). Any string may hold
// ${…}, evaluated as in values before the field is read, so a replica
// count may be "${parameters.replicas}".
type Spec struct {
	Namespace          string                `json:"namespace,omitempty"`
	NamePrefix         string                `json:"namePrefix,omitempty"`
	NameSuffix         string                `json:"nameSuffix,omitempty"`
	Labels             []types.Label         `json:"labels,omitempty"`
	CommonAnnotations  map[string]string     `json:"commonAnnotations,omitempty"`
	Images             []types.Image         `json:"images,omitempty"`
	Replicas           []types.Replica       `json:"replicas,omitempty"`
	Patches            []types.Patch         `json:"patches,omitempty"`
	ConfigMapGenerator []types.ConfigMapArgs `json:"configMapGenerator,omitempty"`
	SecretGenerator    []types.SecretArgs    `json:"secretGenerator,omitempty"`
	Components         []string              `json:"components,omitempty"`
}

// specFields are the json names of Spec's fields.
var specFields, specFieldList = func() (map[string]bool, string) {
	m := map[string]bool{}
	var names []string
	t := reflect.TypeOf(Spec{})
	for i := range t.NumField() {
		n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[n] = true
		names = append(names, n)
	}
	return m, strings.Join(names, ", ")
}()

// CheckFields refuses a field a kustomization does not have (encoding/json
// would match it in any case; kustomize does not).
func CheckFields(where string, fields map[string]any) error {
	for k := range fields {
		if !specFields[k] {
			return fmt.Errorf("%w: %s: unknown field %s (the fields of a kustomization: %s)", errdef.ErrInvalidInput, where, errdef.Quote(k), specFieldList)
		}
	}
	return nil
}

// Decode reads an evaluated kustomize field (v, the field with its ${…}
// evaluated) as the overlay to build.
func Decode(where string, v any) (*kustomize.Overlay, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, where, err)
	}
	var spec Spec
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		// json's messages name fields and types, never values.
		return nil, fmt.Errorf("%w: %s: %s", errdef.ErrInvalidInput, where, strings.TrimPrefix(err.Error(), "json: "))
	}
	return &kustomize.Overlay{
		Namespace:          spec.Namespace,
		NamePrefix:         spec.NamePrefix,
		NameSuffix:         spec.NameSuffix,
		Labels:             spec.Labels,
		CommonAnnotations:  spec.CommonAnnotations,
		Images:             spec.Images,
		Replicas:           spec.Replicas,
		Patches:            spec.Patches,
		ConfigMapGenerator: spec.ConfigMapGenerator,
		SecretGenerator:    spec.SecretGenerator,
		Components:         spec.Components,
	}, nil
}

// Join adds what the planner derived (generator merges from
// patches, images from localisation) to the definition's overlay: the
// definition's fields first, so that a derived merge of the same generator
// comes after them.
func Join(def, derived *kustomize.Overlay) *kustomize.Overlay {
	switch {
	case def == nil:
		return derived
	case derived == nil:
		return def
	}
	out := *def
	out.Images = append(append([]types.Image(nil), def.Images...), derived.Images...)
	out.ConfigMapGenerator = append(append([]types.ConfigMapArgs(nil), def.ConfigMapGenerator...), derived.ConfigMapGenerator...)
	out.SecretGenerator = append(append([]types.SecretArgs(nil), def.SecretGenerator...), derived.SecretGenerator...)
	return &out
}

// Images is the images field of an overlay that localises what
// automatic localisation would rewrite after rendering: every container
// image written in a manifest of the tree that matches an image resource
// (see localize.Match), by the name as written, set to the component's
// location. A name whose references localise to different locations, or
// that does not parse, is left out. Localisation still runs after
// rendering: it finds these images at their location already, and
// rewrites what kustomize could not name before rendering (images set by
// the tree's own transformers, by generators). origins says, per image,
// which image resource it localises and the file that first writes it.
func Images(tree plan.Tree, images []localize.Image) (out []types.Image, origins []string) {
	if len(images) == 0 {
		return nil, nil
	}
	byName := map[string]*types.Image{}
	from := map[string]string{}
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
				ref, err := imageref.Parse(written)
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
				from[n] = fmt.Sprintf("automatic localisation: image resource %s, written in %s", img.Resource.Identity(), errdef.Field(name))
				order = append(order, n)
			}
		}
	}
	for _, n := range order {
		if !conflict[n] {
			out = append(out, *byName[n])
			origins = append(origins, from[n])
		}
	}
	return out, origins
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

// Origins says where entries of an overlay come from, for Text: a short
// text ("definition line 14, column 9") by the entry's path in the
// kustomization, in fieldpath syntax: a field ("namespace"), an item of a
// list field ("images[0]", "resources[0]") or a key of a map field
// (commonAnnotations["example.com/team"]); see Entries.
type Origins map[string]string

// Entries are the paths of ov's entries as Origins names them: the list
// fields by item, the map fields by key, the others by field; in the
// order of Spec's fields.
func Entries(ov *kustomize.Overlay) []fieldpath.Path {
	if ov == nil {
		return nil
	}
	var out []fieldpath.Path
	field := func(name string, set bool) {
		if set {
			out = append(out, fieldpath.Key(name))
		}
	}
	items := func(name string, n int) {
		for i := range n {
			out = append(out, fieldpath.Key(name).Index(i))
		}
	}
	field("namespace", ov.Namespace != "")
	field("namePrefix", ov.NamePrefix != "")
	field("nameSuffix", ov.NameSuffix != "")
	items("labels", len(ov.Labels))
	for _, k := range slices.Sorted(maps.Keys(ov.CommonAnnotations)) {
		out = append(out, fieldpath.Key("commonAnnotations").Child(k))
	}
	items("images", len(ov.Images))
	items("replicas", len(ov.Replicas))
	items("patches", len(ov.Patches))
	items("configMapGenerator", len(ov.ConfigMapGenerator))
	items("secretGenerator", len(ov.SecretGenerator))
	items("components", len(ov.Components))
	return out
}

// Text is ov as the kustomization the renderer builds over base,
// for --explain, each entry that origins names with a comment saying
// where it comes from; secret literals show their keys only.
func Text(ov *kustomize.Overlay, base string, origins Origins) string {
	var secrets []types.SecretArgs
	for _, g := range ov.SecretGenerator {
		g.LiteralSources = slices.Clone(g.LiteralSources)
		for i, l := range g.LiteralSources {
			k, _, _ := strings.Cut(l, "=")
			g.LiteralSources[i] = k + "=" + SecretValueShown
		}
		secrets = append(secrets, g)
	}
	k := ov.Kustomization(base, func(c string) string { return "<resource>/" + c })
	k.SecretGenerator = secrets
	b, err := yaml.Marshal(k)
	if err == nil && len(origins) > 0 {
		b, err = annotate(b, origins)
	}
	if err != nil {
		return "(the overlay cannot be shown: " + err.Error() + ")"
	}
	return string(b)
}

// annotate adds the origins to a kustomization's YAML as comments: after
// a scalar, above a list item that is a map.
func annotate(doc []byte, origins Origins) ([]byte, error) {
	var n yaml3.Node
	if err := yaml3.Unmarshal(doc, &n); err != nil {
		return nil, err
	}
	if n.Kind != yaml3.DocumentNode || len(n.Content) != 1 || n.Content[0].Kind != yaml3.MappingNode {
		return doc, nil
	}
	comment := func(n *yaml3.Node, text string) {
		// one comment line, whatever a file name of the tree holds
		text = "# " + strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, text)
		if n.Kind == yaml3.ScalarNode {
			n.LineComment = text
		} else {
			n.HeadComment = text
		}
	}
	root := n.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		p := fieldpath.Key(k.Value)
		if o, ok := origins[p.String()]; ok {
			if v.Kind == yaml3.ScalarNode {
				comment(v, o)
			} else {
				comment(k, o) // the key's line: "images: # ..."
			}
		}
		switch v.Kind {
		case yaml3.SequenceNode:
			for j, e := range v.Content {
				if o, ok := origins[p.Index(j).String()]; ok {
					comment(e, o)
				}
			}
		case yaml3.MappingNode:
			for j := 0; j+1 < len(v.Content); j += 2 {
				if o, ok := origins[p.Child(v.Content[j].Value).String()]; ok {
					comment(v.Content[j+1], o)
				}
			}
		}
	}
	var out bytes.Buffer
	enc := yaml3.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
