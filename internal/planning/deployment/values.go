package deployment

import (
	"slices"
	"sort"
	"strconv"

	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
)

// Values are layered values with the history of every leaf (scalars, lists
// and empty maps).
type Values struct {
	Map     map[string]any
	history map[string][]explain.Origin
}

// NewValues returns empty values.
func NewValues() *Values {
	return &Values{Map: map[string]any{}, history: map[string][]explain.Origin{}}
}

// Merge layers src over the values; origin describes each leaf of src.
// Its work is linear in src and in what src replaces: the field path is a
// stack (never copied per node) spelled out once per leaf recorded, and
// the history of a replaced subtree is found by walking that subtree, not
// by searching the whole history.
func (v *Values) Merge(src map[string]any, origin func(p fieldpath.Path, value any) explain.Origin) {
	path := make(fieldpath.Path, 0, 16)
	v.merge(v.Map, src, &path, origin)
}

func (v *Values) merge(dst, src map[string]any, path *fieldpath.Path, origin func(fieldpath.Path, any) explain.Origin) {
	for _, k := range sortedKeys(src) {
		sv := src[k]
		*path = append(*path, fieldpath.Elem{Key: k})
		v.mergeKey(dst, k, sv, path, origin)
		*path = (*path)[:len(*path)-1]
	}
}

// mergeKey layers sv over dst[k]; *path ends with k.
func (v *Values) mergeKey(dst map[string]any, k string, sv any, path *fieldpath.Path, origin func(fieldpath.Path, any) explain.Origin) {
	old, had := dst[k]
	if sm, ok := sv.(map[string]any); ok {
		dm, isMap := old.(map[string]any)
		switch {
		case isMap && len(sm) > 0:
			v.merge(dm, sm, path, origin)
			return
		case isMap:
			return // an empty map merges into a map as nothing
		}
		if had {
			v.drop(path.String(), old, false)
		}
		nm := map[string]any{}
		dst[k] = nm
		if len(sm) == 0 {
			v.record(*path, origin(slices.Clone(*path), nm))
			return
		}
		v.merge(nm, sm, path, origin)
		return
	}
	if had {
		v.drop(path.String(), old, true)
	}
	c := manifests.DeepCopy(sv)
	dst[k] = c
	v.record(*path, origin(slices.Clone(*path), c))
}

func (v *Values) record(p fieldpath.Path, o explain.Origin) {
	k := p.String()
	v.history[k] = append(v.history[k], o)
}

// drop forgets the history below the path p, whose value was old (and of
// p itself unless keepSelf). Only what old holds can have history below p
// (every key of the history is the path of a leaf of the values, or one
// Set stored in a list), so it walks old rather than the history.
func (v *Values) drop(p string, old any, keepSelf bool) {
	if !keepSelf {
		delete(v.history, p)
	}
	if len(v.history) == 0 {
		return
	}
	switch old := old.(type) {
	case map[string]any:
		for k, e := range old {
			v.drop(fieldpath.AppendKey(p, k), e, false)
		}
	case []any:
		for i, e := range old {
			v.drop(p+"["+strconv.Itoa(i)+"]", e, false)
		}
		// Set's appends ([-]) are recorded as written.
		delete(v.history, p+"[-]")
	}
}

// Set stores one value at p (creating maps), recording its origin.
func (v *Values) Set(p fieldpath.Path, value any, o explain.Origin) error {
	if old, ok := fieldpath.Get(v.Map, p); ok {
		v.drop(p.String(), old, true)
	}
	if err := fieldpath.Set(v.Map, p, value); err != nil {
		return err
	}
	o.Value = value
	v.record(p, o)
	return nil
}

// Leaves lists every leaf of the values with its history, sorted by path.
func (v *Values) Leaves() []explain.Leaf {
	var out []explain.Leaf
	var walk func(m map[string]any, prefix fieldpath.Path)
	walk = func(m map[string]any, prefix fieldpath.Path) {
		for _, k := range sortedKeys(m) {
			p := prefix.Child(k)
			if sm, ok := m[k].(map[string]any); ok && len(sm) > 0 {
				walk(sm, p)
				continue
			}
			key := p.String()
			out = append(out, explain.Leaf{Path: key, Value: m[k], History: append([]explain.Origin(nil), v.history[key]...)})
		}
	}
	walk(v.Map, nil)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Copy returns a deep copy of the values map.
func (v *Values) Copy() map[string]any {
	return manifests.DeepCopy(v.Map)
}

// layerFrom is an origin function for a whole layer from one source.
func layerFrom(layer, source string) func(fieldpath.Path, any) explain.Origin {
	return func(_ fieldpath.Path, value any) explain.Origin {
		return explain.Origin{Layer: layer, Source: source, Value: value}
	}
}

// instanceValues computes the request's values exactly as the pipeline does
// (values files < inline values < --set-json < --set < --set-string <
// --set-file), reading each values file once,
// and says, per leaf, which of them set it.
func instanceValues(req plan.Input) (map[string]any, func(fieldpath.Path, any) explain.Origin, error) {
	var files [][]byte // as read, in order
	final, err := plan.HelmValues(req, func(name string) ([]byte, error) {
		b, err := req.ReadFile(param.ValueFiles, name)
		files = append(files, b)
		return b, err
	})
	if err != nil {
		return nil, nil, err
	}
	type piece struct {
		source string
		m      map[string]any
	}
	var pieces []piece // highest priority first (Helm's order reversed)
	// Only the keys matter here: a --set-file value is not read again.
	noRead := func([]rune) (any, error) { return "", nil }
	for _, l := range []struct {
		flag   string
		values []string
		parse  func(string, map[string]any) error
	}{
		{"--set-file", req.SetFile, func(s string, m map[string]any) error { return strvals.ParseIntoFile(s, m, noRead) }},
		{"--set-string", req.SetString, strvals.ParseIntoString},
		{"--set", req.Set, strvals.ParseInto},
		{"--set-json", req.SetJSON, strvals.ParseJSON},
	} {
		for i := len(l.values) - 1; i >= 0; i-- {
			m := map[string]any{}
			if err := l.parse(l.values[i], m); err == nil {
				pieces = append(pieces, piece{l.flag + " " + l.values[i], m})
			}
		}
	}
	if req.Values != nil {
		pieces = append(pieces, piece{"values", req.Values})
	}
	for i := len(req.ValueFiles) - 1; i >= 0; i-- {
		m := map[string]any{}
		if err := yaml.Unmarshal(files[i], &m); err == nil {
			pieces = append(pieces, piece{"values file " + req.ValueFiles[i], m})
		}
	}
	origin := func(p fieldpath.Path, value any) explain.Origin {
		for _, pc := range pieces {
			if sets(pc.m, p) {
				return explain.Origin{Layer: explain.LayerInstance, Source: pc.source, Value: value}
			}
		}
		return explain.Origin{Layer: explain.LayerInstance, Source: "values", Value: value}
	}
	return NormalizeNumbers(final).(map[string]any), origin, nil
}

// sets reports whether the values m set the leaf at p: they hold p, or a
// value that is no map on the way to it (which replaced what was below).
// A map above the leaf only passes through (--set image.tag did not set
// image.repository). One walk down p.
func sets(m map[string]any, p fieldpath.Path) bool {
	var cur any = m
	for i, e := range p {
		var next any
		switch c := cur.(type) {
		case map[string]any:
			if e.IsList {
				return false
			}
			v, ok := c[e.Key]
			if !ok {
				return false
			}
			next = v
		case []any:
			if !e.IsList || e.Append || e.Index >= len(c) {
				return false
			}
			next = c[e.Index]
		default:
			return false
		}
		if _, passes := next.(map[string]any); !passes || i == len(p)-1 {
			return true
		}
		cur = next
	}
	return false
}
