package hooks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// HookTypes are the hook types a deployment definition may ask for.
var HookTypes = []string{PreSync, Sync, PostSync, SyncFail, PostDelete}

// DeletePolicies are the delete policies a deployment definition may ask for.
var DeletePolicies = []string{BeforeHookCreation, HookSucceeded, HookFailed}

// Hook makes objects Argo CD resource hooks.
type Hook struct {
	Type string // one of HookTypes
	// DeletePolicy is one or more of DeletePolicies, comma-separated; ""
	// writes no delete policy annotation.
	DeletePolicy string
}

// Placement is a sync wave and/or a hook; nil fields change nothing.
type Placement struct {
	SyncWave *int
	Hook     *Hook
}

// Selector selects objects by kind and, when set, API version, name and
// namespace.
type Selector struct {
	APIVersion, Kind, Name, Namespace string
}

// Rule places the objects its selector matches, overwriting what they carry.
type Rule struct {
	Selector Selector
	Placement
	// Source says where the rule was declared, for messages.
	Source string
}

// Ordering is the placement of one render's objects: Placement for all of
// them (never overwriting an annotation they carry), then the rules in order
// (overwriting; a later rule wins).
type Ordering struct {
	Placement
	Rules []Rule
}

// ValidateHook checks a hook type and normalises a delete policy list
// (trimmed, duplicates refused).
func ValidateHook(h Hook) (Hook, error) {
	if !contains(HookTypes, h.Type) {
		return h, fmt.Errorf("hook type %s is not one of %s", errdef.Quote(h.Type), strings.Join(HookTypes, ", "))
	}
	if h.DeletePolicy == "" {
		return h, nil
	}
	var ps []string
	for _, p := range strings.Split(h.DeletePolicy, ",") {
		p = strings.TrimSpace(p)
		if !contains(DeletePolicies, p) {
			return h, fmt.Errorf("delete policy %s is not one of %s (several are separated by commas)", errdef.Quote(p), strings.Join(DeletePolicies, ", "))
		}
		if contains(ps, p) {
			return h, fmt.Errorf("delete policy %s is given twice", p)
		}
		ps = append(ps, p)
	}
	h.DeletePolicy = strings.Join(ps, ",")
	return h, nil
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// IsNamespace reports whether an object is a core Namespace.
func IsNamespace(o manifests.Object) bool {
	kind, _ := o["kind"].(string)
	av, _ := o["apiVersion"].(string)
	return kind == "Namespace" && !strings.Contains(av, "/")
}

// IsCRD reports whether an object is a CustomResourceDefinition.
func IsCRD(o manifests.Object) bool {
	kind, _ := o["kind"].(string)
	av, _ := o["apiVersion"].(string)
	return kind == "CustomResourceDefinition" && strings.HasPrefix(av, "apiextensions.k8s.io/")
}

// foundation: Namespaces and CRDs, which everything else may need; a
// render's placement leaves them to the defaults (see ApplyDefaults).
func foundation(o manifests.Object) bool { return IsNamespace(o) || IsCRD(o) }

// Matches reports whether the selector selects the object.
func (s Selector) Matches(o manifests.Object) bool {
	if kind, _ := o["kind"].(string); kind != s.Kind {
		return false
	}
	if s.APIVersion != "" {
		if av, _ := o["apiVersion"].(string); av != s.APIVersion {
			return false
		}
	}
	md, _ := o["metadata"].(map[string]any)
	if s.Name != "" {
		if n, _ := md["name"].(string); n != s.Name {
			return false
		}
	}
	if s.Namespace != "" {
		if ns, _ := md["namespace"].(string); ns != s.Namespace {
			return false
		}
	}
	return true
}

func (s Selector) String() string {
	out := s.Kind
	if s.APIVersion != "" {
		out = s.APIVersion + " " + out
	}
	switch {
	case s.Name != "" && s.Namespace != "":
		out += " " + s.Namespace + "/" + s.Name
	case s.Name != "":
		out += " " + s.Name
	case s.Namespace != "":
		out += " in namespace " + s.Namespace
	}
	return out
}

// Describe names an object as "Kind namespace/name".
func Describe(o manifests.Object) string {
	kind, _ := o["kind"].(string)
	md, _ := o["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return kind + " " + name
}

// rawAnnotations returns the object's annotation map, creating it when
// create is set; nil when metadata (or the annotations) is not a map.
func rawAnnotations(o manifests.Object, create bool) map[string]any {
	md, ok := o["metadata"].(map[string]any)
	if !ok {
		if _, exists := o["metadata"]; exists || !create {
			return nil
		}
		md = map[string]any{}
		o["metadata"] = md
	}
	ann, ok := md["annotations"].(map[string]any)
	if !ok {
		if v, exists := md["annotations"]; (exists && v != nil) || !create {
			return nil
		}
		ann = map[string]any{}
		md["annotations"] = ann
	}
	return ann
}

func has(ann map[string]any, key string) bool {
	_, ok := ann[key]
	return ok
}

// Apply places objs, the output of one render, as o asks: first o's own
// wave and hook for every object, then the rules.
//
// The render's wave goes to every object that has no wave of its own (no
// argocd.argoproj.io/sync-wave and no helm.sh/hook-weight, which Argo CD reads
// as the wave), and its hook to every object that is no hook yet (no
// argocd.argoproj.io/hook and no helm.sh/hook: a Helm hook keeps its own
// meaning, Helm test and delete hooks included). Namespaces and
// CustomResourceDefinitions take neither: they get the defaults of
// ApplyDefaults (before every wave), and as hooks Argo CD would delete and
// recreate them, with everything in them.
//
// A rule sets its wave and hook on every object it matches, replacing the
// Argo CD annotations the object had (Helm's stay: Argo CD ignores helm.sh/hook
// once argocd.argoproj.io/hook is set, but still adds Helm's delete policies to
// its own). A rule that matches nothing, or that makes a Namespace or a
// CustomResourceDefinition a hook, is an error.
func Apply(objs []manifests.Object, o Ordering) error {
	if o.SyncWave != nil || o.Hook != nil {
		for _, obj := range objs {
			if foundation(obj) {
				continue
			}
			ann := rawAnnotations(obj, false)
			if o.SyncWave != nil && !has(ann, AnnotationSyncWave) && !has(ann, HelmHookWeight) {
				if ann = rawAnnotations(obj, true); ann != nil {
					ann[AnnotationSyncWave] = strconv.Itoa(*o.SyncWave)
				}
			}
			if o.Hook != nil && !has(ann, AnnotationHook) && !has(ann, HelmHook) {
				if ann = rawAnnotations(obj, true); ann != nil {
					ann[AnnotationHook] = o.Hook.Type
					if o.Hook.DeletePolicy != "" && !has(ann, AnnotationHookDeletePolicy) {
						ann[AnnotationHookDeletePolicy] = o.Hook.DeletePolicy
					}
				}
			}
		}
	}
	for _, r := range o.Rules {
		n := 0
		for _, obj := range objs {
			if !r.Selector.Matches(obj) {
				continue
			}
			n++
			if r.Hook != nil && foundation(obj) {
				return fmt.Errorf("%w: %s: %s cannot be a hook: Argo CD deletes and recreates hooks, and everything in or of it with them",
					errdef.ErrInvalidInput, r.Source, Describe(obj))
			}
			ann := rawAnnotations(obj, true)
			if ann == nil {
				return fmt.Errorf("%w: %s: %s: metadata.annotations is not a map", errdef.ErrInvalidInput, r.Source, Describe(obj))
			}
			if r.SyncWave != nil {
				ann[AnnotationSyncWave] = strconv.Itoa(*r.SyncWave)
			}
			if r.Hook != nil {
				ann[AnnotationHook] = r.Hook.Type
				if r.Hook.DeletePolicy != "" {
					ann[AnnotationHookDeletePolicy] = r.Hook.DeletePolicy
				}
			}
		}
		if n == 0 {
			return fmt.Errorf("%w: %s: no object of the render matches %s", errdef.ErrNotFound, r.Source, r.Selector)
		}
	}
	return nil
}
