package expr

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
)

// imageFunctions are the CEL helpers that split image references:
//
//	image.parse(ref)        {registry, host, repository, name, tag, digest, reference}
//	ref.toOCI(), toOCI(ref) the map of OCM's controller CEL library: the same,
//	                        but reference is the version part as OCM has it
//	                        ("tag@digest", "tag" or "digest"); ref may be an
//	                        access too (imageReference, or a localBlob's
//	                        globalAccess.imageReference)
//	image.registry(ref)     "registry.internal.example:5000"
//	image.repository(ref)   "mirror/stefanprodan/podinfo"
//	image.name(ref)         "registry.internal.example:5000/mirror/stefanprodan/podinfo"
//	image.tag(ref)          "6.7.0" ("" when absent)
//	image.digest(ref)       "sha256:…" ("" when absent)
//
// A reference without a registry is a Docker Hub one (docker.io, library/
// for single names), as container runtimes read it. An invalid reference is
// an evaluation error naming it.
func imageFunctions() []cel.EnvOption {
	str := func(f func(imageref.Reference) string) cel.OverloadOpt {
		return cel.UnaryBinding(func(v ref.Val) ref.Val {
			r, err := parseRefVal(v)
			if err != nil {
				return err
			}
			return types.String(f(r))
		})
	}
	toMap := cel.UnaryBinding(func(v ref.Val) ref.Val {
		r, err := parseRefVal(v)
		if err != nil {
			return err
		}
		return types.DefaultTypeAdapter.NativeToValue(refMap(r))
	})
	mapType := cel.MapType(cel.StringType, cel.StringType)
	return []cel.EnvOption{
		cel.Function("image.parse", cel.Overload("image_parse_string", []*cel.Type{cel.StringType}, mapType, toMap)),
		cel.Function("toOCI",
			cel.MemberOverload("to_oci_dyn_member", []*cel.Type{cel.DynType}, mapType),
			cel.Overload("to_oci_dyn", []*cel.Type{cel.DynType}, mapType),
			cel.SingletonUnaryBinding(toOCI)),
		cel.Function("image.registry", cel.Overload("image_registry_string", []*cel.Type{cel.StringType}, cel.StringType,
			str(func(r imageref.Reference) string { return r.Registry }))),
		cel.Function("image.repository", cel.Overload("image_repository_string", []*cel.Type{cel.StringType}, cel.StringType,
			str(func(r imageref.Reference) string { return r.Repository }))),
		cel.Function("image.name", cel.Overload("image_name_string", []*cel.Type{cel.StringType}, cel.StringType,
			str(imageref.Reference.Name))),
		cel.Function("image.tag", cel.Overload("image_tag_string", []*cel.Type{cel.StringType}, cel.StringType,
			str(func(r imageref.Reference) string { return r.Tag }))),
		cel.Function("image.digest", cel.Overload("image_digest_string", []*cel.Type{cel.StringType}, cel.StringType,
			str(func(r imageref.Reference) string { return r.Digest }))),
	}
}

// toOCI is OCM's toOCI(): a reference string, or an access holding one.
func toOCI(v ref.Val) ref.Val {
	s, ok := v.(types.String)
	if !ok {
		imageRef, err := accessImageReference(v)
		if err != nil {
			return err
		}
		s = types.String(imageRef)
	}
	r, err := parseRefVal(s)
	if err != nil {
		return err
	}
	m := refMap(r)
	switch {
	case r.Tag != "" && r.Digest != "":
		m["reference"] = r.Tag + "@" + r.Digest
	case r.Tag != "":
		m["reference"] = r.Tag
	default:
		m["reference"] = r.Digest
	}
	return types.DefaultTypeAdapter.NativeToValue(m)
}

// accessImageReference reads the image reference of an access, as OCM's
// toOCI() does: imageReference (ociArtifact), or a localBlob's
// globalAccess.imageReference.
func accessImageReference(v ref.Val) (string, ref.Val) {
	m, ok := v.(traits.Mapper)
	if !ok {
		return "", types.NewErr("toOCI: want an image reference (string) or an access (map), got %s", v.Type().TypeName())
	}
	str := func(m traits.Mapper, key string) (string, bool) {
		f, found := m.Find(types.String(key))
		if !found {
			return "", false
		}
		s, ok := f.(types.String)
		return string(s), ok && s != ""
	}
	if s, ok := str(m, "imageReference"); ok {
		return s, nil
	}
	if ga, found := m.Find(types.String("globalAccess")); found {
		if gm, ok := ga.(traits.Mapper); ok {
			if s, ok := str(gm, "imageReference"); ok {
				return s, nil
			}
		}
	}
	return "", types.NewErr("toOCI: the access has no imageReference and no globalAccess.imageReference")
}

func parseRefVal(v ref.Val) (imageref.Reference, ref.Val) {
	s, ok := v.(types.String)
	if !ok {
		return imageref.Reference{}, types.NewErr("image reference must be a string, got %s", v.Type().TypeName())
	}
	r, err := imageref.Parse(string(s))
	if err != nil {
		return imageref.Reference{}, types.NewErr("image reference: %v", err)
	}
	return r, nil
}

func refMap(r imageref.Reference) map[string]string {
	return map[string]string{
		"registry":   r.Registry,
		"host":       r.Registry,
		"repository": r.Repository,
		"name":       r.Name(),
		"tag":        r.Tag,
		"digest":     r.Digest,
		"reference":  r.String(),
	}
}
