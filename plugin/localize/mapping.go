package localize

import (
	"encoding/json"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/config/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm"
)

// HintLabel is the resource label a component author puts on an image
// resource to say where its location goes in the chart values, e.g.
// {valuesPath: image} for image.repository and image.tag.
const HintLabel = "localization-hint"

// Mapping names the value paths that receive the parts of an image
// resource's location, as the OCM CLI's image mappings and ocm-controller's
// localization rules do. Empty paths are not set.
type Mapping struct {
	Image      string `json:"image,omitempty"`      // full reference, pinned by digest when known
	Repository string `json:"repository,omitempty"` // registry/repository
	Registry   string `json:"registry,omitempty"`   // registry host[:port]
	Tag        string `json:"tag,omitempty"`        // tag
	Digest     string `json:"digest,omitempty"`     // algorithm:hex
}

// Empty reports whether the mapping sets nothing.
func (m Mapping) Empty() bool { return m == Mapping{} }

// Assignment is one value a mapping sets.
type Assignment struct {
	Path  fieldpath.Path
	Part  string // "image", "repository", "registry", "tag" or "digest"
	Value string
}

// Assign returns what the mapping sets for an image. It fails when a path
// does not parse, or asks for a tag or digest the component does not know.
func (m Mapping) Assign(img Image) ([]Assignment, error) {
	loc := img.Location()
	var out []Assignment
	add := func(part, path, value string) error {
		if path == "" {
			return nil
		}
		p, err := fieldpath.Parse(path)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, part, err)
		}
		if value == "" {
			switch part {
			case "tag":
				return fmt.Errorf("%w: image resource %s (%s) has no tag: map its image or digest instead", errdef.ErrInvalidInput, img.Identity(), img.Ref)
			case "digest":
				return fmt.Errorf("%w: the digest of image resource %s (%s) is not known (neither in the reference nor as resource digest)", errdef.ErrInvalidInput, img.Identity(), img.Ref)
			}
		}
		out = append(out, Assignment{Path: p, Part: part, Value: value})
		return nil
	}
	for _, a := range []struct{ part, path, value string }{
		{"image", m.Image, loc.String()},
		{"repository", m.Repository, loc.Name()},
		{"registry", m.Registry, loc.Registry},
		{"tag", m.Tag, loc.Tag},
		{"digest", m.Digest, loc.Digest},
	} {
		if err := add(a.part, a.path, a.value); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// hint is the value of a HintLabel.
type hint struct {
	ValuesPath string `json:"valuesPath"`
	Mapping
}

// Hint returns the mapping a resource's HintLabel asks for: {valuesPath: p}
// means p.repository and p.tag; explicit image/repository/registry/tag/digest
// paths may be given too.
func Hint(res *ocm.Resource) (Mapping, bool, error) {
	l, ok := res.Label(HintLabel)
	if !ok {
		return Mapping{}, false, nil
	}
	var h hint
	if err := json.Unmarshal(l.Value, &h); err != nil {
		return Mapping{}, false, fmt.Errorf("%w: resource %s: label %s: %v", errdef.ErrInvalidDescriptor, res.Identity(), HintLabel, err)
	}
	m := h.Mapping
	if h.ValuesPath != "" {
		if m.Repository == "" {
			m.Repository = h.ValuesPath + ".repository"
		}
		if m.Tag == "" {
			m.Tag = h.ValuesPath + ".tag"
		}
	}
	if m.Empty() {
		return Mapping{}, false, fmt.Errorf("%w: resource %s: label %s names no value path", errdef.ErrInvalidDescriptor, res.Identity(), HintLabel)
	}
	return m, true, nil
}
