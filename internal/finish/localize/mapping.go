package localize

import (
	"encoding/json"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// HintLabel is the resource label a component author puts on an image
// resource to say where its location goes in the chart values, e.g.
// {valuesPath: image} for image.repository and image.tag.
const HintLabel = "localization-hint"

// Mapping names the value paths that receive the parts of an image
// resource's location, as the OCM CLI's image mappings and ocm-controller's
// localization rules do. Empty paths are not set.
type Mapping struct {
	// What each part holds depends on the Semantics (AssignAs).
	Image      string `json:"image,omitempty"`      // full reference, pinned by digest when known
	Repository string `json:"repository,omitempty"` // [registry/]repository
	Registry   string `json:"registry,omitempty"`   // registry host[:port]
	Tag        string `json:"tag,omitempty"`        // tag, or the digest
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

// Semantics selects whose rules turn an image reference into the parts a
// mapping sets. The two OCM tools differ, and a component written for one
// must render as that tool renders it.
type Semantics int

const (
	// OCMCLI: the OCM library's image mappings (ocm
	// api/ocm/ocmutils/localize/format.go, ImageMapping.Evaluate), used by
	// the OCM CLI and by deployment definitions and localisation hints here.
	//   - repository: host/path, the reference without tag and digest; when
	//     registry is mapped too, only the path (the library has no registry
	//     field; a chart that joins registry and repository must not get the
	//     host twice);
	//   - tag: what follows the repository: "tag", "tag@digest", or the
	//     digest of a digest-only reference; a reference with neither is an
	//     error unless the component knows the digest (then the digest);
	//   - registry: host[:port] (docker.io for Docker Hub).
	OCMCLI Semantics = iota
	// OCMController: ocm-controller v1 ConfigData localization rules
	// (ocm-controller controllers/mutation_reconcile_looper.go,
	// createSubstitutionRulesForLocalization, parsing with
	// go-containerregistry's name.ParseReference):
	//   - registry: host[:port], index.docker.io for Docker Hub;
	//   - repository: always the path only (library/x on Docker Hub);
	//   - tag: the reference's identifier: its digest when it has one (chart
	//     templates turn "sha256:…" into "@sha256:…"), else its tag, else
	//     the digest the component knows, else "latest".
	OCMController
)

// Both semantics: image is the reference as the component states it
// (name:tag, name@digest, name:tag@digest as written; ocm-controller drops
// the tag of tag@digest), pinned by the resource digest when the reference
// pins none; digest (an extension of ours) is the digest the component
// knows. Pinning is the one deliberate difference from both tools: the
// access is not signed, the resource digest is.

// Assign returns what the mapping sets for an image with the OCM CLI's
// semantics (AssignAs).
func (m Mapping) Assign(img Image) ([]Assignment, error) { return m.AssignAs(img, OCMCLI) }

// AssignAs returns what the mapping sets for an image with the given
// semantics. It fails when a path does not parse, or asks for a tag or
// digest the component does not know.
func (m Mapping) AssignAs(img Image, sem Semantics) ([]Assignment, error) {
	parts := img.parts(sem, m.Registry != "")
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
				return fmt.Errorf("%w: image resource %s (%s) has neither tag nor digest: map its image instead", errdef.ErrInvalidInput, img.Identity(), img.Ref)
			case "digest":
				return fmt.Errorf("%w: the digest of image resource %s (%s) is not known (neither in the reference nor as resource digest)", errdef.ErrInvalidInput, img.Identity(), img.Ref)
			}
		}
		out = append(out, Assignment{Path: p, Part: part, Value: value})
		return nil
	}
	for _, a := range []struct{ part, path, value string }{
		{"image", m.Image, parts.image},
		{"repository", m.Repository, parts.repository},
		{"registry", m.Registry, parts.registry},
		{"tag", m.Tag, parts.tag},
		{"digest", m.Digest, img.Digest},
	} {
		if err := add(a.part, a.path, a.value); err != nil {
			return nil, err
		}
	}
	return out, nil
}

type imageParts struct{ image, repository, registry, tag string }

// parts splits the image's reference by the rules of sem; withRegistry
// says whether the registry is mapped as well.
func (i Image) parts(sem Semantics, withRegistry bool) imageParts {
	r := i.Ref
	registry := r.Registry
	if sem == OCMController && registry == DefaultRegistry {
		registry = "index.docker.io" // go-containerregistry's name for Docker Hub
	}
	name := registry + "/" + r.Repository
	var p imageParts
	p.registry = registry
	p.repository = name
	if sem == OCMController || withRegistry {
		p.repository = r.Repository
	}
	switch {
	case r.Digest != "" && r.Tag != "" && sem == OCMCLI:
		p.tag = r.Tag + "@" + r.Digest
		p.image = name + ":" + r.Tag + "@" + r.Digest
	case r.Digest != "":
		p.tag = r.Digest
		p.image = name + "@" + r.Digest
	case r.Tag != "":
		p.tag = r.Tag
		p.image = name + ":" + r.Tag
		if i.Digest != "" {
			p.image += "@" + i.Digest
		}
	case i.Digest != "":
		p.tag = i.Digest
		p.image = name + "@" + i.Digest
	default:
		p.image = name
		if sem == OCMController {
			p.tag = "latest"
			p.image = name + ":latest"
		}
	}
	return p
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
