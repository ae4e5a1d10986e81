package config

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/localize"
)

// imageFunctions are the CEL helpers that split image references:
//
//	image.parse(ref)        {registry, host, repository, name, tag, digest, reference}
//	ref.toOCI()             the same map (the spelling of OCM's Kubernetes controllers)
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
	str := func(f func(localize.Ref) string) cel.OverloadOpt {
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
		cel.Function("toOCI", cel.MemberOverload("string_to_oci", []*cel.Type{cel.StringType}, mapType, toMap)),
		cel.Function("image.registry", cel.Overload("image_registry_string", []*cel.Type{cel.StringType}, cel.StringType,
			str(func(r localize.Ref) string { return r.Registry }))),
		cel.Function("image.repository", cel.Overload("image_repository_string", []*cel.Type{cel.StringType}, cel.StringType,
			str(func(r localize.Ref) string { return r.Repository }))),
		cel.Function("image.name", cel.Overload("image_name_string", []*cel.Type{cel.StringType}, cel.StringType,
			str(localize.Ref.Name))),
		cel.Function("image.tag", cel.Overload("image_tag_string", []*cel.Type{cel.StringType}, cel.StringType,
			str(func(r localize.Ref) string { return r.Tag }))),
		cel.Function("image.digest", cel.Overload("image_digest_string", []*cel.Type{cel.StringType}, cel.StringType,
			str(func(r localize.Ref) string { return r.Digest }))),
	}
}

func parseRefVal(v ref.Val) (localize.Ref, ref.Val) {
	s, ok := v.(types.String)
	if !ok {
		return localize.Ref{}, types.NewErr("image reference must be a string, got %s", v.Type().TypeName())
	}
	r, err := localize.ParseRef(string(s))
	if err != nil {
		return localize.Ref{}, types.NewErr("%v", err)
	}
	return r, nil
}

func refMap(r localize.Ref) map[string]string {
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
