package hooks

import (
	"strconv"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// Annotations Argo CD and Helm read.
const (
	AnnotationSyncWave         = "argocd.argoproj.io/sync-wave"
	AnnotationHook             = "argocd.argoproj.io/hook"
	AnnotationHookDeletePolicy = "argocd.argoproj.io/hook-delete-policy"

	HelmHook             = "helm.sh/hook"
	HelmHookWeight       = "helm.sh/hook-weight"
	HelmHookDeletePolicy = "helm.sh/hook-delete-policy"
)

// Argo CD hook types. PreSync, Sync, PostSync and SyncFail are sync phases
// (gitops-engine); Skip leaves an object out of the sync; PostDelete (and,
// with Argo CD 3.5, PreDelete) hooks run when the Application is deleted
// (Argo CD's application controller).
const (
	PreSync    = "PreSync"
	Sync       = "Sync"
	PostSync   = "PostSync"
	SyncFail   = "SyncFail"
	Skip       = "Skip"
	PreDelete  = "PreDelete"
	PostDelete = "PostDelete"
)

// Argo CD hook delete policies.
const (
	BeforeHookCreation = "BeforeHookCreation"
	HookSucceeded      = "HookSucceeded"
	HookFailed         = "HookFailed"
)

// syncPhaseOrder orders the sync phases as gitops-engine does.
var syncPhaseOrder = []string{PreSync, Sync, PostSync, SyncFail}

// helmHookTypes are the Helm hooks Argo CD maps to its own
// (gitops-engine pkg/sync/hook/helm/type.go); every other Helm hook (test,
// pre-delete, post-delete, pre-rollback, post-rollback, …) makes the object a
// hook of no sync phase: it is not applied by a sync.
var helmHookTypes = map[string]string{
	"pre-install":  PreSync,
	"pre-upgrade":  PreSync,
	"post-upgrade": PostSync,
	"post-install": PostSync,
}

// helmDeletePolicies map Helm's delete policies to Argo CD's
// (gitops-engine pkg/sync/hook/helm/delete_policy.go).
var helmDeletePolicies = map[string]string{
	"before-hook-creation": BeforeHookCreation,
	"hook-succeeded":       HookSucceeded,
	"hook-failed":          HookFailed,
}

func isArgoHookType(t string) bool {
	switch t {
	case PreSync, Sync, PostSync, SyncFail, Skip:
		return true
	}
	return false
}

func isArgoDeletePolicy(p string) bool {
	return p == BeforeHookCreation || p == HookSucceeded || p == HookFailed
}

// annotationsOf returns an object's annotations as Kubernetes'
// unstructured.GetAnnotations does (apimachinery 0.36, Argo CD 3): nil when
// metadata.annotations is missing, not a map, or holds a value that is
// neither a string nor null (then Argo CD sees no annotations at all); a null
// value reads as "" (apimachinery 0.31, Argo CD 2.14, hides them all then too).
func annotationsOf(o manifests.Object) map[string]string {
	md, _ := o["metadata"].(map[string]any)
	raw, ok := md["annotations"].(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			out[k] = v
		case nil:
			out[k] = ""
		default:
			return nil
		}
	}
	return out
}

// csv splits a comma-separated annotation as gitops-engine's
// GetAnnotationCSVs does: trimmed, empty items dropped, duplicates dropped
// (first occurrence kept; gitops-engine before the Argo CD 3 line returns
// them in map order).
func csv(ann map[string]string, key string) []string {
	var out []string
	seen := map[string]bool{}
	for _, item := range strings.Split(ann[key], ",") {
		v := strings.TrimSpace(item)
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	return out
}

// typesOf is gitops-engine's hook.Types: the Argo CD hook types of the
// annotation, else the Helm hooks mapped (one entry per Helm hook, so
// "pre-install,pre-upgrade" gives PreSync twice, as gitops-engine does).
func typesOf(ann map[string]string) []string {
	var types []string
	for _, t := range csv(ann, AnnotationHook) {
		if isArgoHookType(t) {
			types = append(types, t)
		}
	}
	if len(types) == 0 {
		for _, t := range csv(ann, HelmHook) {
			if at, ok := helmHookTypes[t]; ok {
				types = append(types, at)
			}
		}
	}
	return types
}

// skipAnn is gitops-engine's hook.Skip: Skip is the only hook type.
func skipAnn(ann map[string]string) bool {
	types := typesOf(ann)
	for _, t := range types {
		if t == Skip {
			return len(types) == 1
		}
	}
	return false
}

// isHookAnn is gitops-engine's hook.IsHook: an Argo CD hook annotation (any
// value but a lone Skip), else any Helm hook annotation but crd-install.
func isHookAnn(ann map[string]string) bool {
	if _, ok := ann[AnnotationHook]; ok {
		return !skipAnn(ann)
	}
	v, ok := ann[HelmHook]
	return ok && v != "crd-install"
}

// deletePoliciesOf is gitops-engine's hook.DeletePolicies: Argo CD's, then
// Helm's mapped (not deduplicated across the two), BeforeHookCreation when
// there are none. It does not look at whether the object is a hook.
func deletePoliciesOf(ann map[string]string) []string {
	var out []string
	for _, p := range csv(ann, AnnotationHookDeletePolicy) {
		if isArgoDeletePolicy(p) {
			out = append(out, p)
		}
	}
	for _, p := range csv(ann, HelmHookDeletePolicy) {
		if ap, ok := helmDeletePolicies[p]; ok {
			out = append(out, ap)
		}
	}
	if len(out) == 0 {
		out = []string{BeforeHookCreation}
	}
	return out
}

// waveOf is gitops-engine's syncwaves.Wave: the sync-wave annotation when it is
// an integer, else helm.sh/hook-weight when it is one, else 0.
func waveOf(ann map[string]string) int {
	if text, ok := ann[AnnotationSyncWave]; ok {
		if v, err := strconv.Atoi(text); err == nil {
			return v
		}
	}
	if text, ok := ann[HelmHookWeight]; ok {
		if v, err := strconv.Atoi(text); err == nil {
			return v
		}
	}
	return 0
}

// ArgoHooks reads an object as Argo CD's sync does (gitops-engine, both the
// v0.7 line of Argo CD 2.14 and the Argo CD 3 line, which agree):
//
//   - types is hook.Types: the hook types of argocd.argoproj.io/hook
//     (PreSync, Sync, PostSync, SyncFail, Skip; others ignored), else the
//     Helm hooks Argo CD maps (pre-install, pre-upgrade → PreSync;
//     post-install, post-upgrade → PostSync), one entry per Helm hook;
//   - deletePolicies is hook.DeletePolicies: argocd.argoproj.io/hook-delete-policy,
//     then helm.sh/hook-delete-policy mapped (before-hook-creation →
//     BeforeHookCreation, hook-succeeded → HookSucceeded, hook-failed →
//     HookFailed), BeforeHookCreation when neither names one;
//   - wave is syncwaves.Wave: argocd.argoproj.io/sync-wave, else
//     helm.sh/hook-weight, else 0 (for hooks, the order within their phase);
//   - isHook is hook.IsHook: an argocd.argoproj.io/hook annotation that is not
//     a lone Skip, or any helm.sh/hook but crd-install. A hook whose types
//     name no sync phase (Helm test, pre-delete, post-delete, pre-rollback, …;
//     Argo CD's PostDelete) is not applied by a sync at all.
//
// Comma-separated annotations are read as gitops-engine does (trimmed,
// duplicates dropped); types and deletePolicies keep the annotation's order
// (gitops-engine of Argo CD 2.x returns them in map order: compare as sets).
// Annotations with a value that is neither a string nor null are invisible to
// Argo CD (unstructured.GetAnnotations), and so to ArgoHooks.
func ArgoHooks(obj manifests.Object) (types []string, deletePolicies []string, wave int, isHook bool) {
	ann := annotationsOf(obj)
	return typesOf(ann), deletePoliciesOf(ann), waveOf(ann), isHookAnn(ann)
}

// Phases returns the sync phases in which Argo CD applies the object
// (gitops-engine's syncPhases), in phase order: none for a lone Skip hook,
// the hook's sync phases for a hook (none for a Helm test or delete hook),
// Sync for everything else.
func Phases(obj manifests.Object) []string {
	ann := annotationsOf(obj)
	if skipAnn(ann) {
		return nil
	}
	if !isHookAnn(ann) {
		return []string{Sync}
	}
	has := map[string]bool{}
	for _, t := range typesOf(ann) {
		has[t] = true
	}
	var out []string
	for _, p := range syncPhaseOrder {
		if has[p] {
			out = append(out, p)
		}
	}
	return out
}

// DeletionHooks returns PreDelete and/or PostDelete when Argo CD's
// application controller runs the object as a hook on deletion of the
// Application: argocd.argoproj.io/hook naming PreDelete or PostDelete, or
// helm.sh/hook naming pre-delete or post-delete (controller/hook.go of Argo
// CD 3.5, comma-separated values allowed; Argo CD 2.14 knows PostDelete only,
// and only as the whole annotation value).
func DeletionHooks(obj manifests.Object) []string {
	ann := annotationsOf(obj)
	var out []string
	for _, h := range []struct{ argo, helm string }{{PreDelete, "pre-delete"}, {PostDelete, "post-delete"}} {
		if listHas(ann, AnnotationHook, h.argo) || listHas(ann, HelmHook, h.helm) {
			out = append(out, h.argo)
		}
	}
	return out
}

// listHas is Argo CD's isHookOfType test: the annotation exists and one of
// its comma-separated items is v.
func listHas(ann map[string]string, key, v string) bool {
	val, ok := ann[key]
	if !ok {
		return false
	}
	for _, item := range strings.Split(val, ",") {
		if strings.TrimSpace(item) == v {
			return true
		}
	}
	return false
}
