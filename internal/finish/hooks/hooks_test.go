package hooks_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

const srcRoot = "../../../testdata/src"

func obj(kind, name string, ann map[string]any) manifests.Object {
	av := "v1"
	switch kind {
	case "Job":
		av = "batch/v1"
	case "Deployment":
		av = "apps/v1"
	case "CustomResourceDefinition":
		av = "apiextensions.k8s.io/v1"
	case "Widget":
		av = "platform.example.com/v1"
	}
	md := map[string]any{"name": name}
	if ann != nil {
		md["annotations"] = ann
	}
	return manifests.Object{"apiVersion": av, "kind": kind, "metadata": md}
}

func annotation(o manifests.Object, key string) (string, bool) {
	md, _ := o["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	v, ok := ann[key].(string)
	return v, ok
}

// ArgoHooks reads objects as gitops-engine does: Argo CD annotations first,
// Helm's mapped otherwise, weights as waves, unknown values ignored.
func TestArgoHooksTable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ann      map[string]any
		types    []string
		policies []string
		wave     int
		isHook   bool
		phases   []string
		deletion []string
	}{
		{"plain", nil, nil, []string{"BeforeHookCreation"}, 0, false, []string{"Sync"}, nil},
		{"wave", map[string]any{"argocd.argoproj.io/sync-wave": "-3"}, nil, []string{"BeforeHookCreation"}, -3, false, []string{"Sync"}, nil},
		{"invalid wave falls back to the Helm weight", map[string]any{"argocd.argoproj.io/sync-wave": "x", "helm.sh/hook-weight": "4"}, nil, []string{"BeforeHookCreation"}, 4, false, []string{"Sync"}, nil},
		{"sync-wave wins over the Helm weight", map[string]any{"argocd.argoproj.io/sync-wave": "+2", "helm.sh/hook-weight": "4"}, nil, []string{"BeforeHookCreation"}, 2, false, []string{"Sync"}, nil},
		{"argo PreSync", map[string]any{"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"},
			[]string{"PreSync"}, []string{"HookSucceeded"}, 0, true, []string{"PreSync"}, nil},
		{"argo several, trimmed, duplicates dropped", map[string]any{"argocd.argoproj.io/hook": " PostSync , PreSync,PostSync,Bogus"},
			[]string{"PostSync", "PreSync"}, []string{"BeforeHookCreation"}, 0, true, []string{"PreSync", "PostSync"}, nil},
		{"Skip alone", map[string]any{"argocd.argoproj.io/hook": "Skip"}, []string{"Skip"}, []string{"BeforeHookCreation"}, 0, false, nil, nil},
		{"Skip with another type is a hook", map[string]any{"argocd.argoproj.io/hook": "Skip,PostSync"}, []string{"Skip", "PostSync"}, []string{"BeforeHookCreation"}, 0, true, []string{"PostSync"}, nil},
		{"empty argo hook annotation: a hook of no phase", map[string]any{"argocd.argoproj.io/hook": ""}, nil, []string{"BeforeHookCreation"}, 0, true, nil, nil},
		{"argo hook wins over helm's", map[string]any{"argocd.argoproj.io/hook": "SyncFail", "helm.sh/hook": "pre-install", "helm.sh/hook-delete-policy": "hook-failed"},
			[]string{"SyncFail"}, []string{"HookFailed"}, 0, true, []string{"SyncFail"}, nil},
		{"both delete policies, not deduplicated", map[string]any{"argocd.argoproj.io/hook": "PreSync", "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation", "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"},
			[]string{"PreSync"}, []string{"BeforeHookCreation", "BeforeHookCreation", "HookSucceeded"}, 0, true, []string{"PreSync"}, nil},
		// Helm hooks, as Argo CD maps them for native Helm sources.
		{"helm pre-install", map[string]any{"helm.sh/hook": "pre-install"}, []string{"PreSync"}, []string{"BeforeHookCreation"}, 0, true, []string{"PreSync"}, nil},
		{"helm pre-install,pre-upgrade", map[string]any{"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": "-5", "helm.sh/hook-delete-policy": "before-hook-creation"},
			[]string{"PreSync", "PreSync"}, []string{"BeforeHookCreation"}, -5, true, []string{"PreSync"}, nil},
		{"helm post-install", map[string]any{"helm.sh/hook": "post-install", "helm.sh/hook-delete-policy": "hook-succeeded"}, []string{"PostSync"}, []string{"HookSucceeded"}, 0, true, []string{"PostSync"}, nil},
		{"helm post-upgrade", map[string]any{"helm.sh/hook": "post-upgrade"}, []string{"PostSync"}, []string{"BeforeHookCreation"}, 0, true, []string{"PostSync"}, nil},
		{"helm test: not synced", map[string]any{"helm.sh/hook": "test", "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"},
			nil, []string{"BeforeHookCreation", "HookSucceeded"}, 0, true, nil, nil},
		{"helm pre-delete: not synced, run on deletion", map[string]any{"helm.sh/hook": "pre-delete"}, nil, []string{"BeforeHookCreation"}, 0, true, nil, []string{"PreDelete"}},
		{"helm post-delete: not synced, run on deletion", map[string]any{"helm.sh/hook": "post-delete"}, nil, []string{"BeforeHookCreation"}, 0, true, nil, []string{"PostDelete"}},
		{"helm pre-rollback: not synced", map[string]any{"helm.sh/hook": "pre-rollback"}, nil, []string{"BeforeHookCreation"}, 0, true, nil, nil},
		{"helm crd-install: not a hook", map[string]any{"helm.sh/hook": "crd-install"}, nil, []string{"BeforeHookCreation"}, 0, false, []string{"Sync"}, nil},
		{"argo PostDelete", map[string]any{"argocd.argoproj.io/hook": "PostDelete", "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"},
			nil, []string{"HookSucceeded"}, 0, true, nil, []string{"PostDelete"}},
		{"a null annotation reads as empty (unstructured.GetAnnotations of apimachinery 0.36)", map[string]any{"argocd.argoproj.io/hook": nil, "helm.sh/hook": "pre-install"},
			[]string{"PreSync"}, []string{"BeforeHookCreation"}, 0, true, []string{"PreSync"}, nil},
		{"a non-string annotation hides them all (unstructured.GetAnnotations)", map[string]any{"argocd.argoproj.io/hook": "PreSync", "helm.sh/hook-weight": int64(3)},
			nil, []string{"BeforeHookCreation"}, 0, false, []string{"Sync"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := obj("Job", "j", tc.ann)
			types, policies, wave, isHook := hooks.ArgoHooks(o)
			if !reflect.DeepEqual(types, tc.types) || !reflect.DeepEqual(policies, tc.policies) || wave != tc.wave || isHook != tc.isHook {
				t.Errorf("ArgoHooks = %q, %q, %d, %v; want %q, %q, %d, %v", types, policies, wave, isHook, tc.types, tc.policies, tc.wave, tc.isHook)
			}
			if p := hooks.Phases(o); !reflect.DeepEqual(p, tc.phases) {
				t.Errorf("Phases = %q, want %q", p, tc.phases)
			}
			if d := hooks.DeletionHooks(o); !reflect.DeepEqual(d, tc.deletion) {
				t.Errorf("DeletionHooks = %q, want %q", d, tc.deletion)
			}
		})
	}
}

func renderChart(t *testing.T, name string, opts helm.Options) []manifests.Object {
	t.Helper()
	files, err := ocmbuild.ReadDir(filepath.Join(srcRoot, "charts", name))
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := ocmbuild.PackageChart(files)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helm.Render(context.Background(), tgz, opts)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func find(t *testing.T, objs []manifests.Object, kind, name string) manifests.Object {
	t.Helper()
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		if o["kind"] == kind && md["name"] == name {
			return o
		}
	}
	t.Fatalf("no %s %s in %d objects", kind, name, len(objs))
	return nil
}

// The Helm hooks of real charts, rendered, read as Argo CD reads them.
func TestArgoHooksOnRenderedCharts(t *testing.T) {
	catalog := renderChart(t, "catalog", helm.Options{ReleaseName: "shop", Namespace: "shop"})
	types, policies, wave, isHook := hooks.ArgoHooks(find(t, catalog, "Job", "shop-migrate"))
	if !isHook || !reflect.DeepEqual(types, []string{"PreSync", "PreSync"}) || wave != -5 || !reflect.DeepEqual(policies, []string{"BeforeHookCreation"}) {
		t.Errorf("catalog migration Job: %q %q %d %v; want PreSync (pre-install, pre-upgrade), wave -5, BeforeHookCreation", types, policies, wave, isHook)
	}
	if p := hooks.Phases(find(t, catalog, "Job", "shop-migrate")); !reflect.DeepEqual(p, []string{"PreSync"}) {
		t.Errorf("migration Job phases %q", p)
	}
	for _, o := range catalog {
		if o["kind"] == "Job" {
			continue
		}
		if _, _, _, isHook := hooks.ArgoHooks(o); isHook {
			t.Errorf("%s is no hook", hooks.Describe(o))
		}
	}
	podinfo := renderChart(t, "podinfo", helm.Options{ReleaseName: "demo", Namespace: "demo"})
	test := find(t, podinfo, "Pod", "demo-podinfo-test")
	if types, _, _, isHook := hooks.ArgoHooks(test); !isHook || len(types) != 0 || hooks.Phases(test) != nil {
		t.Errorf("helm test hook: types %q, hook %v, phases %q; want a hook of no sync phase", types, isHook, hooks.Phases(test))
	}
	_, unsynced := hooks.SyncOrder(podinfo)
	if len(unsynced) != 1 || !strings.Contains(unsynced[0].Why, "Helm hook test") {
		t.Errorf("unsynced %+v", unsynced)
	}
}

func wave(n int) *int { return &n }

// A render's wave and hook never overwrite what the objects carry; rules do.
func TestApply(t *testing.T) {
	objs := []manifests.Object{
		obj("Deployment", "api", nil),
		obj("ConfigMap", "own-wave", map[string]any{"argocd.argoproj.io/sync-wave": "7"}),
		obj("Job", "helm-hook", map[string]any{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "-5"}),
		obj("Job", "helm-test", map[string]any{"helm.sh/hook": "test"}),
		obj("CustomResourceDefinition", "widgets.platform.example.com", nil),
		obj("Namespace", "shop", nil),
		obj("Widget", "w", nil),
	}
	err := hooks.Apply(objs, hooks.Ordering{
		Placement: hooks.Placement{SyncWave: wave(3)},
		Rules: []hooks.Rule{
			{Selector: hooks.Selector{Kind: "Widget"}, Placement: hooks.Placement{SyncWave: wave(4)}, Source: "rule 0"},
			{Selector: hooks.Selector{Kind: "Job", Name: "helm-hook"}, Placement: hooks.Placement{SyncWave: wave(-1), Hook: &hooks.Hook{Type: "Sync", DeletePolicy: "HookSucceeded"}}, Source: "rule 1"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		obj, key, want string // want "" = absent
	}{
		{"api", "argocd.argoproj.io/sync-wave", "3"},
		{"own-wave", "argocd.argoproj.io/sync-wave", "7"},
		{"helm-test", "argocd.argoproj.io/sync-wave", "3"},
		{"helm-test", "argocd.argoproj.io/hook", ""},
		{"widgets.platform.example.com", "argocd.argoproj.io/sync-wave", ""},
		{"shop", "argocd.argoproj.io/sync-wave", ""},
		{"w", "argocd.argoproj.io/sync-wave", "4"},
		{"helm-hook", "argocd.argoproj.io/sync-wave", "-1"},
		{"helm-hook", "argocd.argoproj.io/hook", "Sync"},
		{"helm-hook", "argocd.argoproj.io/hook-delete-policy", "HookSucceeded"},
		{"helm-hook", "helm.sh/hook", "pre-install"},
	} {
		var o manifests.Object
		for _, x := range objs {
			if x["metadata"].(map[string]any)["name"] == c.obj {
				o = x
			}
		}
		got, ok := annotation(o, c.key)
		if (c.want == "" && ok) || got != c.want {
			t.Errorf("%s %s = %q (present %v), want %q", c.obj, c.key, got, ok, c.want)
		}
	}
	if types, _, w, _ := hooks.ArgoHooks(objs[2]); !reflect.DeepEqual(types, []string{"Sync"}) || w != -1 {
		t.Errorf("the rule did not take over the Helm hook: %q, wave %d", types, w)
	}

	// A render's hook: objects that are hooks already keep theirs.
	objs = []manifests.Object{obj("ServiceAccount", "sa", nil), obj("Job", "helm-test", map[string]any{"helm.sh/hook": "test"}),
		obj("Job", "argo", map[string]any{"argocd.argoproj.io/hook": "PostSync"}), obj("Namespace", "ns", nil)}
	if err := hooks.Apply(objs, hooks.Ordering{Placement: hooks.Placement{Hook: &hooks.Hook{Type: "PreSync", DeletePolicy: "BeforeHookCreation"}}}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"PreSync", "", "PostSync", ""} {
		if got, _ := annotation(objs[i], "argocd.argoproj.io/hook"); got != want {
			t.Errorf("%s: hook %q, want %q", hooks.Describe(objs[i]), got, want)
		}
	}
	if got, _ := annotation(objs[0], "argocd.argoproj.io/hook-delete-policy"); got != "BeforeHookCreation" {
		t.Errorf("delete policy %q", got)
	}
}

func TestApplyErrors(t *testing.T) {
	objs := []manifests.Object{obj("Deployment", "api", nil), obj("CustomResourceDefinition", "widgets.platform.example.com", nil)}
	err := hooks.Apply(objs, hooks.Ordering{Rules: []hooks.Rule{{Selector: hooks.Selector{Kind: "Deployment", Name: "apl"}, Placement: hooks.Placement{SyncWave: wave(1)}, Source: "spec.renders[0].ordering[0]"}}})
	if !errors.Is(err, errdef.ErrNotFound) || !strings.Contains(err.Error(), "spec.renders[0].ordering[0]: no object of the render matches Deployment apl") {
		t.Errorf("rule matching nothing: %v", err)
	}
	err = hooks.Apply(objs, hooks.Ordering{Rules: []hooks.Rule{{Selector: hooks.Selector{Kind: "CustomResourceDefinition"}, Placement: hooks.Placement{Hook: &hooks.Hook{Type: "PreSync"}}, Source: "r"}}})
	if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "cannot be a hook") {
		t.Errorf("CRD as hook: %v", err)
	}
	for _, h := range []hooks.Hook{{Type: "Presync"}, {Type: "Skip"}, {Type: "PreSync", DeletePolicy: "HookSucceeded,HookSucceeded"}, {Type: "PreSync", DeletePolicy: "hook-succeeded"}} {
		if _, err := hooks.ValidateHook(h); err == nil {
			t.Errorf("%+v accepted", h)
		}
	}
	if h, err := hooks.ValidateHook(hooks.Hook{Type: "PostSync", DeletePolicy: " HookSucceeded , HookFailed"}); err != nil || h.DeletePolicy != "HookSucceeded,HookFailed" {
		t.Errorf("%+v %v", h, err)
	}
}

// With sync waves in the output, CRDs and Namespaces without a wave go
// before every wave; without any, nothing changes.
func TestApplyDefaults(t *testing.T) {
	crd := obj("CustomResourceDefinition", "widgets.platform.example.com", nil)
	cr := obj("Widget", "w", map[string]any{"argocd.argoproj.io/sync-wave": "3"})
	ns := obj("Namespace", "shop", nil)
	cm := obj("ConfigMap", "c", map[string]any{"argocd.argoproj.io/sync-wave": "5"})
	hook := obj("Job", "early", map[string]any{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "-50"})
	objs := []manifests.Object{cr, crd, ns, cm, hook}
	got := hooks.ApplyDefaults(objs)
	want := []hooks.Assigned{{Object: "CustomResourceDefinition widgets.platform.example.com", Wave: 2}, {Object: "Namespace shop", Wave: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	if w, _ := annotation(crd, "argocd.argoproj.io/sync-wave"); w != "2" {
		t.Errorf("CRD wave %q", w)
	}
	if w, _ := annotation(cr, "argocd.argoproj.io/sync-wave"); w != "3" {
		t.Errorf("CR wave %q", w)
	}
	if _, ok := annotation(hook, "argocd.argoproj.io/sync-wave"); ok {
		t.Error("a PreSync hook got a wave")
	}
	if again := hooks.ApplyDefaults(objs); len(again) != 0 {
		t.Errorf("not idempotent: %+v", again)
	}

	// An unannotated object is in wave 0: CRDs go to -1.
	objs = []manifests.Object{obj("CustomResourceDefinition", "a.b", nil), obj("Deployment", "d", nil), obj("Deployment", "e", map[string]any{"argocd.argoproj.io/sync-wave": "2"})}
	if got := hooks.ApplyDefaults(objs); len(got) != 1 || got[0].Wave != -1 {
		t.Errorf("defaults %+v", got)
	}

	// No waves (a hook's weight orders its phase only): untouched.
	objs = []manifests.Object{obj("CustomResourceDefinition", "a.b", nil), obj("Namespace", "n", nil), obj("Widget", "w", nil), hook}
	if got := hooks.ApplyDefaults(objs); got != nil {
		t.Errorf("defaults without waves: %+v", got)
	}
	for _, o := range objs[:3] {
		if _, ok := o["metadata"].(map[string]any)["annotations"]; ok {
			t.Errorf("%s was annotated", hooks.Describe(o))
		}
	}
}

func TestSyncOrder(t *testing.T) {
	objs := []manifests.Object{
		obj("Widget", "w", map[string]any{"argocd.argoproj.io/sync-wave": "3"}),
		obj("Job", "post", map[string]any{"argocd.argoproj.io/hook": "PostSync"}),
		obj("Deployment", "d", map[string]any{"argocd.argoproj.io/sync-wave": "3"}),
		obj("CustomResourceDefinition", "widgets.platform.example.com", map[string]any{"argocd.argoproj.io/sync-wave": "2"}),
		obj("Job", "pre", map[string]any{"helm.sh/hook": "pre-upgrade", "helm.sh/hook-weight": "-5"}),
		obj("Pod", "test", map[string]any{"helm.sh/hook": "test"}),
		obj("ConfigMap", "skipped", map[string]any{"argocd.argoproj.io/hook": "Skip"}),
	}
	steps, unsynced := hooks.SyncOrder(objs)
	var got []string
	for _, s := range steps {
		got = append(got, s.Phase+" "+s.Object)
	}
	want := []string{"PreSync Job pre", "Sync CustomResourceDefinition widgets.platform.example.com", "Sync Deployment d", "Sync Widget w", "PostSync Job post"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
	if len(unsynced) != 2 || unsynced[0].Object != "Pod test" || unsynced[1].Why != "Skip" {
		t.Errorf("unsynced %+v", unsynced)
	}
}
