package argocdocm_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// finishFunc is a function as a plan.Finisher.
type finishFunc func(objs []manifests.Object) error

func (f finishFunc) Finish(_ context.Context, objs []manifests.Object) ([]manifests.Object, error) {
	return objs, f(objs)
}

// The finishing work a plan carries runs once, after every step is
// rendered and placed, over the whole output: the steps' in step order,
// then the plan's; the defaults come last.
func TestPlanFinishRunsOnceInOrder(t *testing.T) {
	var ran []string
	var saw []int
	record := func(name string) finishFunc {
		return func(objs []manifests.Object) error {
			ran = append(ran, name)
			saw = append(saw, len(objs))
			for _, o := range objs {
				if o["kind"] == "Job" && annotationsOf(o)[hooks.AnnotationHook] != "PreSync" {
					return fmt.Errorf("%s ran before the Job was placed", name)
				}
			}
			return nil
		}
	}
	job := manifests.Object{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "migrate"}}
	r := plannedRenderer(planFunc(func(d *ocm.Descriptor) *plan.Plan {
		widgets, _ := d.Resource(ocm.Identity{"name": "widgets"})
		image, _ := d.Resource(ocm.Identity{"name": "api-image"})
		return &plan.Plan{
			Steps: []plan.Step{
				{Resource: widgets, Finish: []plan.Finisher{record("step 0 a"), record("step 0 b")}},
				{Resource: image, Objects: []manifests.Object{job}, Finish: []plan.Finisher{record("step 1")},
					Ordering: &hooks.Ordering{Placement: hooks.Placement{Hook: &hooks.Hook{Type: hooks.PreSync, DeletePolicy: hooks.BeforeHookCreation}}}},
			},
			Finish: []plan.Finisher{record("plan")},
		}
	}))
	res, err := r.Render(context.Background(), argocdocm.Request{Repository: hooksRepo(t), Component: examples.Hooks, Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"step 0 a", "step 0 b", "step 1", "plan"}; !reflect.DeepEqual(ran, want) {
		t.Errorf("finishing work ran %q, want %q", ran, want)
	}
	for i, n := range saw {
		if n != len(res.Objects) {
			t.Errorf("%s saw %d objects, want the whole output (%d)", ran[i], n, len(res.Objects))
		}
	}
}

// A failing finisher fails the render: nothing is returned.
func TestPlanFinishError(t *testing.T) {
	r := plannedRenderer(planFunc(func(d *ocm.Descriptor) *plan.Plan {
		widgets, _ := d.Resource(ocm.Identity{"name": "widgets"})
		return &plan.Plan{Steps: []plan.Step{{Resource: widgets}},
			Finish: []plan.Finisher{finishFunc(func([]manifests.Object) error { return fmt.Errorf("no rendered object matches") })}}
	}))
	res, err := r.Render(context.Background(), argocdocm.Request{Repository: hooksRepo(t), Component: examples.Hooks, Version: "1.0.0"})
	if err == nil || res != nil {
		t.Fatalf("got %v, %v; want the finisher's error and no result", res, err)
	}
}

// Nothing is written back into the request: the planner sees the
// constraint as it was given, and the component version and the Result
// carry the version it resolved to.
func TestResolvedVersionIsNotWrittenBack(t *testing.T) {
	var seen plan.Input
	var planned string
	r := plannedRenderer(plannerFunc(func(cv ocm.ComponentVersion, req plan.Input) (*plan.Plan, error) {
		seen, planned = req, cv.Descriptor().Version
		d := cv.Descriptor()
		chart, _ := d.Resource(ocm.Identity{"name": "chart"})
		return &plan.Plan{Steps: []plan.Step{{Resource: chart, ReleaseName: req.ReleaseName, Namespace: req.Namespace}}}, nil
	}))
	req := argocdocm.Request{Repository: fixtures.Path(t, "ctf"), Component: "example.com/fixtures/podinfo-app", Version: ">=1.0.0",
		Resources: []string{"chart"}, ReleaseName: "demo", Namespace: "demo", KubeVersion: "1.31.0"}
	res, err := r.Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version == req.Version || res.Version != planned {
		t.Errorf("Result.Version %q, planned %q: want the resolved version, not the constraint %q", res.Version, planned, req.Version)
	}
	if seen.Version != ">=1.0.0" {
		t.Errorf("the planner saw Version %q, want the request's constraint as given", seen.Version)
	}
}

type planFunc func(d *ocm.Descriptor) *plan.Plan

func (p planFunc) Plan(_ context.Context, cv ocm.ComponentVersion, _ plan.Input) (*plan.Plan, error) {
	return p(cv.Descriptor()), nil
}

type plannerFunc func(cv ocm.ComponentVersion, req plan.Input) (*plan.Plan, error)

func (p plannerFunc) Plan(_ context.Context, cv ocm.ComponentVersion, req plan.Input) (*plan.Plan, error) {
	return p(cv, req)
}

// plannedRenderer is an offline renderer with planner p.
func plannedRenderer(p plan.Planner) *argocdocm.Renderer {
	r := &argocdocm.Renderer{}
	argocdocm.SetPlanner(r, p)
	return r
}
