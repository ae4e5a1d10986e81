package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// faker stands in for the kubelet and the controllers this run has not:
// Deployments and StatefulSets roll out, Jobs complete, Pods run,
// PodDisruptionBudgets allow disruptions, and the
// foregroundDeletion finalizer (Argo CD prunes and deletes hooks with
// foreground propagation; without a garbage collector nothing removes it)
// is dropped. It also records when objects appear and go, for ordering checks.
type faker struct {
	dyn    dynamic.Interface
	stopCh chan struct{}

	mu       sync.Mutex
	watching map[schema.GroupVersionResource]bool
	events   []event
	errs     []string
}

type event struct {
	at   time.Time
	what string // added, deleted
	key  string // Kind/namespace/name
	uid  types.UID
}

var (
	deploymentsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	statefulsetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	jobsGVR         = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	podsGVR         = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pdbsGVR         = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
)

func newFaker(dyn dynamic.Interface) *faker {
	f := &faker{dyn: dyn, stopCh: make(chan struct{}), watching: map[schema.GroupVersionResource]bool{}}
	for _, gvr := range []schema.GroupVersionResource{
		deploymentsGVR, statefulsetsGVR, jobsGVR, podsGVR,
		{Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "services"},
		{Version: "v1", Resource: "serviceaccounts"},
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
		pdbsGVR,
		{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	} {
		f.watch(gvr)
	}
	return f
}

func (f *faker) stop() { close(f.stopCh) }

// watch adds a resource (e.g. a custom resource once its CRD exists).
func (f *faker) watch(gvr schema.GroupVersionResource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watching[gvr] {
		return
	}
	f.watching[gvr] = true
	inf := dynamicinformer.NewFilteredDynamicInformer(f.dyn, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				f.record("added", u)
				f.handle(gvr, u)
				f.watchCustomResources(u)
			}
		},
		UpdateFunc: func(_, obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				f.handle(gvr, u)
				f.watchCustomResources(u)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				f.record("deleted", u)
			}
		},
	})
	go inf.Run(f.stopCh)
}

// watchCustomResources watches the objects of an established CRD (its
// first served version).
func (f *faker) watchCustomResources(crd *unstructured.Unstructured) {
	if crd.GetKind() != "CustomResourceDefinition" || condition(crd, "Established") != "True" || crd.GetDeletionTimestamp() != nil {
		return
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served {
			name, _ := m["name"].(string)
			go f.watch(schema.GroupVersionResource{Group: group, Version: name, Resource: plural})
			return
		}
	}
}

func key(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

func (f *faker) record(what string, u *unstructured.Unstructured) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, event{at: time.Now(), what: what, key: key(u), uid: u.GetUID()})
}

// eventsSince returns the events recorded at or after t.
func (f *faker) eventsSince(t time.Time) []event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []event
	for _, e := range f.events {
		if !e.at.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

func (f *faker) errors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errs...)
}

// call runs an API call of the faker's until it succeeds, meets a conflict
// (a newer version of the object comes as an event of its own) or the
// object is gone, or 3 minutes have passed: under load a request can
// outlast its 10 s, and an object the faker gives up on (a foregroundDeletion
// finalizer left, a Deployment never Available) would stall its Application
// for good, as nothing sends that event again.
func (f *faker) call(what string, do func(context.Context) error) {
	deadline := time.Now().Add(3 * time.Minute)
	for wait := time.Second; ; wait = min(2*wait, 15*time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := do(ctx)
		cancel()
		if err == nil || conflictOrGone(err) {
			return
		}
		if time.Now().After(deadline) {
			f.fail("%s: %v", what, err)
			return
		}
		select {
		case <-f.stopCh:
			return
		case <-time.After(wait):
		}
	}
}

func (f *faker) handle(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	ri := f.dyn.Resource(gvr).Namespace(u.GetNamespace())
	if u.GetDeletionTimestamp() != nil {
		var keep []string
		drop := false
		for _, fin := range u.GetFinalizers() {
			if fin == metav1.FinalizerDeleteDependents {
				drop = true
			} else {
				keep = append(keep, fin)
			}
		}
		if drop {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": keep, "resourceVersion": u.GetResourceVersion()}})
			f.call("dropping foregroundDeletion of "+key(u), func(ctx context.Context) error {
				_, err := ri.Patch(ctx, u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			})
		}
		return
	}
	u = u.DeepCopy()
	now := metav1.Now().UTC().Format(time.RFC3339)
	gen := u.GetGeneration()
	replicas, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	var status map[string]any
	switch gvr {
	case deploymentsGVR:
		if og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); og == gen {
			return
		}
		status = map[string]any{
			"observedGeneration": gen, "replicas": replicas, "updatedReplicas": replicas,
			"readyReplicas": replicas, "availableReplicas": replicas,
			"conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastUpdateTime": now, "lastTransitionTime": now},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastUpdateTime": now, "lastTransitionTime": now},
			},
		}
	case statefulsetsGVR:
		if og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); og == gen {
			return
		}
		rev := fmt.Sprintf("%s-%d", u.GetName(), gen)
		status = map[string]any{
			"observedGeneration": gen, "replicas": replicas, "readyReplicas": replicas, "currentReplicas": replicas,
			"updatedReplicas": replicas, "availableReplicas": replicas, "currentRevision": rev, "updateRevision": rev,
		}
	case jobsGVR:
		if condition(u, "Complete") == "True" {
			return
		}
		status = map[string]any{
			"startTime": now, "completionTime": now, "succeeded": int64(1), "active": int64(0), "ready": int64(0), "terminating": int64(0),
			"uncountedTerminatedPods": map[string]any{},
			"conditions": []any{
				map[string]any{"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached", "lastProbeTime": now, "lastTransitionTime": now},
				map[string]any{"type": "Complete", "status": "True", "reason": "CompletionsReached", "lastProbeTime": now, "lastTransitionTime": now},
			},
		}
	case podsGVR:
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == "Running" || phase == "Succeeded" {
			return
		}
		policy, _, _ := unstructured.NestedString(u.Object, "spec", "restartPolicy")
		phase := "Running"
		if policy == "Never" || policy == "OnFailure" {
			phase = "Succeeded"
		}
		status = map[string]any{"phase": phase, "startTime": now}
		if phase == "Running" {
			status["conditions"] = []any{map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": now}}
		} else {
			status["conditions"] = []any{map[string]any{"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": now}}
		}
	case pdbsGVR: // the disruption controller's part
		if condition(u, "DisruptionAllowed") == "True" {
			return
		}
		status = map[string]any{
			"observedGeneration": gen, "disruptionsAllowed": int64(1), "currentHealthy": int64(1), "desiredHealthy": int64(0), "expectedPods": int64(1),
			"conditions": []any{map[string]any{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
				"message": "", "observedGeneration": gen, "lastTransitionTime": now}},
		}
	default:
		return
	}
	u.Object["status"] = status
	f.call("status of "+key(u), func(ctx context.Context) error {
		_, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	})
}

func (f *faker) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
