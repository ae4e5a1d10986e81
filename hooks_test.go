package argocdocm_test

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

func hooksRepo(t *testing.T) string {
	t.Helper()
	comps, err := examples.HooksComponents("testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, comps...); err != nil {
		t.Fatal(err)
	}
	return dir
}

type stepsPlanner func(d *ocm.Descriptor) []plan.Step

func (p stepsPlanner) Plan(_ context.Context, cv ocm.ComponentVersion, _ plan.Input) (*plan.Plan, error) {
	return &plan.Plan{Steps: p(cv.Descriptor())}, nil
}

// planFinisher plans steps and finishes the plan with finish.
type planFinisher struct {
	steps  func(d *ocm.Descriptor) []plan.Step
	finish finishFunc
}

func (p planFinisher) Plan(_ context.Context, cv ocm.ComponentVersion, _ plan.Input) (*plan.Plan, error) {
	return &plan.Plan{Steps: p.steps(cv.Descriptor()), Finish: []plan.Finisher{p.finish}}, nil
}

func annotationsOf(o manifests.Object) map[string]any {
	md, _ := o["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	return ann
}

func byName(t *testing.T, objs []manifests.Object, kind, name string) manifests.Object {
	t.Helper()
	for _, o := range objs {
		if o["kind"] == kind && o["metadata"].(map[string]any)["name"] == name {
			return o
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

// The render loop places each step's objects as its Ordering says, takes a
// step's prebuilt objects as they are (copied), and applies the defaults
// last, after the plan's finishing work.
func TestRenderLoopOrdering(t *testing.T) {
	three := 3
	job := manifests.Object{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "migrate"}}
	r := plannedRenderer(planFinisher{
		steps: func(d *ocm.Descriptor) []plan.Step {
			widgets, _ := d.Resource(ocm.Identity{"name": "widgets"})
			image, _ := d.Resource(ocm.Identity{"name": "api-image"})
			return []plan.Step{
				{Resource: widgets, Ordering: &hooks.Ordering{Placement: hooks.Placement{SyncWave: &three}}},
				{Resource: image, Objects: []manifests.Object{job},
					Ordering: &hooks.Ordering{Placement: hooks.Placement{Hook: &hooks.Hook{Type: hooks.PreSync, DeletePolicy: hooks.BeforeHookCreation}}}},
			}
		},
		finish: func(objs []manifests.Object) error {
			for _, o := range objs {
				if o["kind"] == "ConfigMap" {
					annotationsOf(o)[hooks.AnnotationSyncWave] = "-4"
				}
			}
			return nil
		},
	})
	res, err := r.Render(context.Background(), argocdocm.Request{Repository: hooksRepo(t), Component: examples.Hooks, Version: "1.0.0", Provenance: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := annotationsOf(byName(t, res.Objects, "Widget", "default-widget"))[hooks.AnnotationSyncWave]; w != "3" {
		t.Errorf("Widget wave %v", w)
	}
	// The finisher's wave -4 is the lowest: the CRD goes to -5.
	if w := annotationsOf(byName(t, res.Objects, "CustomResourceDefinition", "widgets.platform.example.com"))[hooks.AnnotationSyncWave]; w != "-5" {
		t.Errorf("CRD wave %v, want -5", w)
	}
	got := annotationsOf(byName(t, res.Objects, "Job", "migrate"))
	for k, want := range map[string]string{hooks.AnnotationHook: "PreSync", hooks.AnnotationHookDeletePolicy: "BeforeHookCreation", argocdocm.AnnotationResource: "api-image"} {
		if got[k] != want {
			t.Errorf("Job %s = %v, want %s", k, got[k], want)
		}
	}
	if !reflect.DeepEqual(job, manifests.Object{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "migrate"}}) {
		t.Errorf("the step's object was changed: %v", job)
	}
}

// Without a definition and without waves, a chart renders exactly as helm
// template does: the defaults add nothing, Helm hooks stay as they are.
func TestNoWavesLeavesHelmTemplateAlone(t *testing.T) {
	res, err := (&argocdocm.Renderer{}).Render(context.Background(), argocdocm.Request{Repository: hooksRepo(t), Component: examples.Hooks, Version: "1.0.0",
		Resources: []string{"chart"}, ReleaseName: "shop", Namespace: "shop", KubeVersion: "1.31.0"})
	if err != nil {
		t.Fatal(err)
	}
	files, err := ocmbuild.ReadDir("testdata/src/charts/catalog")
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := ocmbuild.PackageChart(files)
	if err != nil {
		t.Fatal(err)
	}
	want, err := helm.Render(context.Background(), tgz, helm.Options{ReleaseName: "shop", Namespace: "shop", KubeVersion: "1.31.0"})
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := manifests.Encode(&a, res.Objects); err != nil {
		t.Fatal(err)
	}
	if err := manifests.Encode(&b, want); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("differs from helm template:\n%s\n---- want ----\n%s", a.String(), b.String())
	}
}
