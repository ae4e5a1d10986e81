package hooks

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// Assigned is a wave ApplyDefaults gives an object.
type Assigned struct {
	Object string // "Kind namespace/name"
	Wave   int
}

// explicitWave: the object names its wave, as Argo CD reads it.
func explicitWave(ann map[string]string) bool {
	for _, k := range []string{AnnotationSyncWave, HelmHookWeight} {
		if v, ok := ann[k]; ok {
			if _, err := strconv.Atoi(v); err == nil {
				return true
			}
		}
	}
	return false
}

func inSyncPhase(o manifests.Object) bool {
	return contains(Phases(o), Sync)
}

// Defaults returns what ApplyDefaults would assign, changing nothing.
func Defaults(objs []manifests.Object) []Assigned {
	idx, waves := defaults(objs)
	out := make([]Assigned, len(idx))
	for i, j := range idx {
		out[i] = Assigned{Object: Describe(objs[j]), Wave: waves[i]}
	}
	return out
}

// ApplyDefaults orders Namespaces and CustomResourceDefinitions first when
// the output uses sync waves, and returns what it assigned.
//
// The output uses sync waves when an object applied in the Sync phase names
// its wave (argocd.argoproj.io/sync-wave or helm.sh/hook-weight, as integers).
// Then every Namespace and CustomResourceDefinition of the Sync phase that
// names no wave (neither annotation present) gets one below every wave of
// the other Sync-phase objects (w the lowest of them, objects without a wave
// counting as 0): Namespaces w-2, CustomResourceDefinitions w-1. So a
// custom resource never waits in an earlier wave for its definition, and Argo
// CD waits for the definitions to be healthy (established) before the first
// wave that may use them.
//
// Without sync waves nothing changes, so a plain chart renders exactly as
// `helm template`: Argo CD applies Namespaces and CustomResourceDefinitions
// first within a wave (its kind order), moves one that an object of an
// earlier wave needs into that wave (gitops-engine's syncTasks.adjustDeps),
// and skips the dry run of a custom resource whose definition is part of the
// same sync (hasCRDOfGroupKind).
//
// Hooks keep their own order (their waves order them within their phase), and
// objects Argo CD does not sync (Skip, Helm test and delete hooks, PostDelete)
// are ignored. Applying the defaults twice changes nothing the second time.
func ApplyDefaults(objs []manifests.Object) []Assigned {
	idx, waves := defaults(objs)
	var out []Assigned
	for i, j := range idx {
		ann := rawAnnotations(objs[j], true)
		if ann == nil {
			continue
		}
		ann[AnnotationSyncWave] = strconv.Itoa(waves[i])
		out = append(out, Assigned{Object: Describe(objs[j]), Wave: waves[i]})
	}
	return out
}

// defaults returns the indexes of the objects to place and their waves.
func defaults(objs []manifests.Object) ([]int, []int) {
	usesWaves, haveMin := false, false
	lowest := 0
	var cands []int
	for i, o := range objs {
		if !inSyncPhase(o) {
			continue
		}
		if foundation(o) {
			raw := rawAnnotations(o, false)
			if !has(raw, AnnotationSyncWave) && !has(raw, HelmHookWeight) {
				cands = append(cands, i)
				continue
			}
		}
		ann := annotationsOf(o)
		if explicitWave(ann) {
			usesWaves = true
		}
		if w := waveOf(ann); !haveMin || w < lowest {
			lowest, haveMin = w, true
		}
	}
	if !usesWaves || !haveMin || len(cands) == 0 {
		return nil, nil
	}
	sat := func(d int) int {
		if lowest < math.MinInt+d {
			return math.MinInt
		}
		return lowest - d
	}
	waves := make([]int, len(cands))
	for k, i := range cands {
		if IsNamespace(objs[i]) {
			waves[k] = sat(2)
		} else {
			waves[k] = sat(1)
		}
	}
	return cands, waves
}

// kindOrder is Argo CD's order of kinds within a wave (gitops-engine's
// sync_tasks.go, after Helm's install order); other kinds come after these.
var kindOrder = func() map[string]int {
	kinds := []string{
		"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy", "PodDisruptionBudget",
		"ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass", "PersistentVolume",
		"PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
		"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod",
		"ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job",
		"CronJob", "IngressClass", "Ingress", "APIService",
	}
	m := make(map[string]int, len(kinds))
	for i, k := range kinds {
		m[k] = i - len(kinds)
	}
	return m
}()

// Step is one object in Argo CD's sync order.
type Step struct {
	Phase          string // PreSync, Sync, PostSync or SyncFail
	Wave           int
	Object         string // "Kind namespace/name"
	Hook           bool
	DeletePolicies []string // for hooks
}

// Unsynced is an object a sync does not apply.
type Unsynced struct {
	Object string
	Why    string
}

// SyncOrder lists objs in the order Argo CD's sync applies them (phase, wave,
// kind, name; a hook with several phases appears in each), and the objects a
// sync does not apply with the reason. It reads the objects as they are
// (see ApplyDefaults for what the pipeline adds last) and leaves out
// gitops-engine's own moves of Namespaces and CustomResourceDefinitions into
// the wave of their first user.
func SyncOrder(objs []manifests.Object) ([]Step, []Unsynced) {
	var steps []Step
	var unsynced []Unsynced
	type keyed struct {
		Step
		kind, name string
		phase      int
	}
	var ks []keyed
	for _, o := range objs {
		types, policies, w, hook := ArgoHooks(o)
		phases := Phases(o)
		if len(phases) == 0 {
			why := "Skip"
			if hook {
				why = "a hook of no sync phase"
				if del := DeletionHooks(o); len(del) > 0 {
					why = "runs on deletion of the Application (" + strings.Join(del, ", ") + ")"
				} else if h := annotationsOf(o)[HelmHook]; h != "" && len(types) == 0 {
					why = "Helm hook " + h + ", which Argo CD does not run"
				}
			}
			unsynced = append(unsynced, Unsynced{Object: Describe(o), Why: why})
			continue
		}
		kind, _ := o["kind"].(string)
		md, _ := o["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		for _, p := range phases {
			s := Step{Phase: p, Wave: w, Object: Describe(o), Hook: hook}
			if hook {
				s.DeletePolicies = policies
			}
			ks = append(ks, keyed{Step: s, kind: kind, name: name, phase: indexOf(syncPhaseOrder, p)})
		}
	}
	sort.SliceStable(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.phase != b.phase {
			return a.phase < b.phase
		}
		if a.Wave != b.Wave {
			return a.Wave < b.Wave
		}
		if d := kindOrder[a.kind] - kindOrder[b.kind]; d != 0 {
			return d < 0
		}
		return a.name < b.name
	})
	for _, k := range ks {
		steps = append(steps, k.Step)
	}
	return steps, unsynced
}

func indexOf(l []string, s string) int {
	for i, e := range l {
		if e == s {
			return i
		}
	}
	return len(l)
}
