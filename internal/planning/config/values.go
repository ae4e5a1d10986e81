package config

import (
	"sort"

	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/config/explain"
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
func (v *Values) Merge(src map[string]any, origin func(p fieldpath.Path, value any) explain.Origin) {
	v.merge(v.Map, src, nil, origin)
}

func (v *Values) merge(dst, src map[string]any, prefix fieldpath.Path, origin func(fieldpath.Path, any) explain.Origin) {
	for _, k := range sortedKeys(src) {
		sv := src[k]
		p := prefix.Child(k)
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok && len(sm) > 0 {
				v.merge(dm, sm, p, origin)
				continue
			}
			if _, ok := dst[k].(map[string]any); ok && len(sm) == 0 {
				continue // an empty map merges into a map as nothing
			}
			v.drop(p, false)
			nm := map[string]any{}
			dst[k] = nm
			if len(sm) == 0 {
				v.record(p, origin(p, nm))
				continue
			}
			v.merge(nm, sm, p, origin)
			continue
		}
		v.drop(p, true)
		c := manifests.DeepCopy(sv)
		dst[k] = c
		v.record(p, origin(p, c))
	}
}

func (v *Values) record(p fieldpath.Path, o explain.Origin) {
	k := p.String()
	v.history[k] = append(v.history[k], o)
}

// drop forgets the history below p (and of p itself unless keepSelf).
func (v *Values) drop(p fieldpath.Path, keepSelf bool) {
	self := p.String()
	for k := range v.history {
		if k == self {
			if !keepSelf {
				delete(v.history, k)
			}
			continue
		}
		if kp, err := fieldpath.Parse(k); err == nil && kp.HasPrefix(p) {
			delete(v.history, k)
		}
	}
}

// Set stores one value at p (creating maps), recording its origin.
func (v *Values) Set(p fieldpath.Path, value any, o explain.Origin) error {
	if err := fieldpath.Set(v.Map, p, value); err != nil {
		return err
	}
	v.drop(p, true)
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
			for q := p; len(q) > 0; q = q[:len(q)-1] {
				// A map above the leaf only passes through (--set image.tag
				// did not set image.repository); anything else replaced it.
				if v, ok := fieldpath.Get(pc.m, q); ok {
					if _, passes := v.(map[string]any); !passes || len(q) == len(p) {
						return explain.Origin{Layer: explain.LayerInstance, Source: pc.source, Value: value}
					}
				}
			}
		}
		return explain.Origin{Layer: explain.LayerInstance, Source: "values", Value: value}
	}
	return NormalizeNumbers(final).(map[string]any), origin, nil
}
