package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// componentVars describes a component version to expressions:
//
//	{name, version, creationTime, provider: {name, labels}, labels: {name: value}}
func componentVars(d *ocm.Descriptor) map[string]any {
	return map[string]any{
		"name":         d.Name,
		"version":      d.Version,
		"creationTime": d.CreationTime,
		"provider":     map[string]any{"name": d.Provider.Name, "labels": labelVars(d.Provider.Labels)},
		"labels":       labelVars(d.Labels),
	}
}

// resourceVars describes the resources of a component version by name (and by
// identity string, "name[k=v]", when the name alone is ambiguous):
//
//	{name, version, type, relation, extraIdentity, labels, access: {type, imageReference, …}, digest}
//
// digest is "sha256:…" from the resource digest ("" when there is none).
func resourceVars(d *ocm.Descriptor) map[string]any {
	count := map[string]int{}
	for _, r := range d.Resources {
		count[r.Name]++
	}
	out := map[string]any{}
	for i := range d.Resources {
		r := &d.Resources[i]
		extra := map[string]any{}
		for k, v := range r.ExtraIdentity {
			extra[k] = v
		}
		acc := map[string]any{}
		for k, v := range r.Access.Fields {
			acc[k] = jsonValue(v)
		}
		acc["type"] = r.Access.Type
		digest := ""
		if r.Digest != nil && r.Digest.Value != "" {
			alg := strings.ToLower(strings.ReplaceAll(r.Digest.HashAlgorithm, "-", ""))
			if alg == "" {
				alg = "sha256"
			}
			digest = alg + ":" + r.Digest.Value
		}
		m := map[string]any{
			"name": r.Name, "version": r.Version, "type": r.Type, "relation": r.Relation,
			"extraIdentity": extra, "labels": labelVars(r.Labels), "access": acc, "digest": digest,
		}
		out[r.Identity().String()] = m
		if count[r.Name] == 1 {
			out[r.Name] = m
		}
	}
	return out
}

// jsonValue turns decoded JSON (float64 numbers) into the value types used
// everywhere else (int64 for integers).
func jsonValue(v any) any {
	// Most access fields are short ASCII strings (type, localReference,
	// mediaType, imageReference), which the round trip below gives back
	// as they are: skip it for them (TestJSONValueShortcut). It was 1.8 % of
	// a render-server worker's CPU on podinfo.
	switch v := v.(type) {
	case nil:
		return nil
	case bool:
		return v
	case string:
		if len(v) <= maxShortcutString && printableASCII(v) {
			return v
		}
	}
	return jsonValueRoundTrip(v)
}

// maxShortcutString is the longest string jsonValue returns as it is: its
// JSON (at most 6 bytes a character) fits into the YAML parser's limit.
const maxShortcutString = (yamlfile.MaxDocumentSize - 2) / 6

func printableASCII(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// jsonValueRoundTrip is jsonValue through JSON and the YAML parser of
// parameters.
func jsonValueRoundTrip(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	out, err := parseYAMLValue(string(b))
	if err != nil {
		return nil
	}
	return out
}

func labelVars(ls []ocm.Label) map[string]any {
	out := map[string]any{}
	for _, l := range ls {
		var v any
		if len(l.Value) > 0 {
			if pv, err := parseYAMLValue(string(l.Value)); err == nil {
				v = pv
			}
		}
		out[l.Name] = v
	}
	return out
}

// referenceVars describes the component references of a version, each with
// the referenced component and its resources:
//
//	{name, componentName, version, labels, component: {…}, resources: {…}}
//
// The referenced versions are looked up in the same repository.
func referenceVars(ctx context.Context, cv ocm.ComponentVersion) (map[string]any, error) {
	d := cv.Descriptor()
	out := map[string]any{}
	for _, ref := range d.References {
		m := map[string]any{
			"name": ref.Name, "componentName": ref.ComponentName, "version": ref.Version, "labels": labelVars(ref.Labels),
		}
		repo := cv.Repository()
		if repo == nil {
			return nil, fmt.Errorf("component reference %s: the component version has no repository to look %s:%s up in", ref.Name, ref.ComponentName, ref.Version)
		}
		rcv, err := repo.LookupComponentVersion(ctx, ref.ComponentName, ref.Version)
		if err != nil {
			return nil, fmt.Errorf("component reference %s (%s:%s): %w", ref.Name, ref.ComponentName, ref.Version, err)
		}
		rd := rcv.Descriptor()
		m["component"] = componentVars(rd)
		m["resources"] = resourceVars(rd)
		out[ref.Name] = m
	}
	return out, nil
}

// baseVars are the variables every expression sees.
func baseVars(ctx context.Context, cv ocm.ComponentVersion, req plan.Input, params []explain.ParamValue, withRefs bool) (map[string]any, error) {
	d := cv.Descriptor()
	pm := map[string]any{}
	for _, p := range params {
		pm[p.Name] = manifests.DeepCopy(p.Value)
	}
	apis := make([]any, len(req.APIVersions))
	for i, a := range req.APIVersions {
		apis[i] = a
	}
	// The CLI has no Application: its release name stands in for it.
	appName := req.Application
	if appName == "" {
		appName = req.ReleaseName
	}
	vars := map[string]any{
		expr.VarParameters: pm,
		expr.VarComponent:  componentVars(d),
		expr.VarResources:  resourceVars(d),
		expr.VarReferences: map[string]any{},
		expr.VarApp:        map[string]any{"name": appName, "namespace": req.Namespace},
		expr.VarCluster:    map[string]any{"kubeVersion": req.KubeVersion, "apiVersions": apis},
		expr.VarValues:     map[string]any{},
	}
	if withRefs && len(d.References) > 0 {
		refs, err := referenceVars(ctx, cv)
		if err != nil {
			return nil, err
		}
		vars[expr.VarReferences] = refs
	}
	return vars, nil
}
