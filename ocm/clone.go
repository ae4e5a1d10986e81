package ocm

import (
	"encoding/json"
	"maps"
	"slices"
)

// Clone is a deep copy of d: nothing the copy holds (slices, maps, access
// fields, raw JSON, Raw) is shared with d, so a caller may change it
// without reaching d. A process that keeps decoded descriptors hands out
// clones (ocimapping.Descriptors): one generation's change then never
// reaches another's.
func (d *Descriptor) Clone() *Descriptor {
	if d == nil {
		return nil
	}
	c := *d
	c.Provider = Provider{Name: d.Provider.Name, Labels: cloneLabels(d.Provider.Labels)}
	c.Labels = cloneLabels(d.Labels)
	c.RepositoryContexts = cloneRaws(d.RepositoryContexts)
	if d.Resources != nil {
		c.Resources = make([]Resource, len(d.Resources))
		for i, r := range d.Resources {
			r.ElementMeta = r.ElementMeta.clone()
			r.SrcRefs = cloneRaw(r.SrcRefs)
			r.Access = r.Access.clone()
			r.Digest = cloneDigest(r.Digest)
			c.Resources[i] = r
		}
	}
	if d.Sources != nil {
		c.Sources = make([]Source, len(d.Sources))
		for i, s := range d.Sources {
			s.ElementMeta = s.ElementMeta.clone()
			s.Access = s.Access.clone()
			c.Sources[i] = s
		}
	}
	if d.References != nil {
		c.References = make([]Reference, len(d.References))
		for i, r := range d.References {
			r.ElementMeta = r.ElementMeta.clone()
			r.Digest = cloneDigest(r.Digest)
			c.References[i] = r
		}
	}
	c.Signatures = slices.Clone(d.Signatures) // of strings only
	c.NestedDigests = cloneRaw(d.NestedDigests)
	c.Raw = slices.Clone(d.Raw)
	return &c
}

func (m ElementMeta) clone() ElementMeta {
	m.ExtraIdentity = maps.Clone(m.ExtraIdentity)
	m.Labels = cloneLabels(m.Labels)
	return m
}

func (a Access) clone() Access {
	if a.Fields != nil {
		a.Fields = cloneJSONValue(a.Fields).(map[string]any)
	}
	return a
}

func cloneLabels(ls []Label) []Label {
	if ls == nil {
		return nil
	}
	out := make([]Label, len(ls))
	for i, l := range ls {
		l.Value = cloneRaw(l.Value)
		out[i] = l
	}
	return out
}

func cloneRaws(rs []json.RawMessage) []json.RawMessage {
	if rs == nil {
		return nil
	}
	out := make([]json.RawMessage, len(rs))
	for i, r := range rs {
		out[i] = cloneRaw(r)
	}
	return out
}

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return slices.Clone(r)
}

func cloneDigest(d *Digest) *Digest {
	if d == nil {
		return nil
	}
	c := *d
	return &c
}

// cloneJSONValue copies a value encoding/json decoded into an any: maps
// and slices are copied, scalars (strings, float64, bool, nil,
// json.Number) are immutable.
func cloneJSONValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = cloneJSONValue(e)
		}
		return m
	case []any:
		if v == nil {
			return v
		}
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = cloneJSONValue(e)
		}
		return s
	default:
		return v
	}
}
