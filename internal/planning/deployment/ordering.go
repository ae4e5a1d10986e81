package deployment

import (
	"context"
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment/ordering"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// boundFields evaluates fields over the variables vars.
type boundFields struct {
	eval *expr.Evaluator
	vars map[string]any
}

func (b boundFields) Template(ctx context.Context, where, s string) (any, error) {
	return b.eval.Template(ctx, where, s, b.vars)
}

func (rs *resolver) fields(vars map[string]any) ordering.Fields {
	return boundFields{eval: rs.eval, vars: vars}
}

// placement evaluates the sync wave, hook and ordering rules of a render;
// nil when it asks for none.
func (rs *resolver) placement(ctx context.Context, rp renderPlan, where string) (*hooks.Ordering, error) {
	r := rp.render
	if r == nil {
		return nil, nil
	}
	return ordering.Placement(ctx, rs.fields(rs.vars), where, rp.name, r.SyncWave, r.Hook, r.Ordering)
}

// JobImageRef is the image a Job runs for an image resource: the component's
// location of it, pinned by digest when the component knows it — what
// automatic localisation writes for an image of that resource (the tag is
// the reference's, else the resource version).
func JobImageRef(img localize.Image) (string, error) {
	loc := img.Location()
	if loc.Tag == "" {
		loc.Tag = img.Resource.Version
	}
	if loc.Tag == "" && loc.Digest == "" {
		return "", fmt.Errorf("%w: image resource %s (%s) has neither a tag, a digest nor a version", errdef.ErrInvalidInput, img.Identity(), img.Ref)
	}
	return loc.String(), nil
}

// jobs plans the definition's jobs: one step each, after the renders. A job
// of a render is part of the output when the render is (plans are the
// renders that run), a job of no render when every render may run (no
// resource selection).
func (rs *resolver) jobs(ctx context.Context, plans []renderPlan) ([]plan.Step, error) {
	if rs.def == nil {
		return nil, nil
	}
	var steps []plan.Step
	names := map[string]bool{}
	for i := range rs.def.Spec.Jobs {
		j := &rs.def.Spec.Jobs[i]
		where := fmt.Sprintf("%s: spec.jobs[%d]", rs.def.Source, i)
		rep := explain.JobReport{Name: j.Name, Resource: j.Image.Resource.String()}
		ns, skipped, err := rs.jobRuns(ctx, j, where, plans)
		if err != nil {
			return nil, err
		}
		if skipped != "" {
			rep.Skipped = skipped
			rs.report.Jobs = append(rs.report.Jobs, rep)
			continue
		}
		step, err := rs.jobStep(ctx, j, where, ns, names, &rep)
		if err != nil {
			return nil, err
		}
		rs.report.Jobs = append(rs.report.Jobs, rep)
		steps = append(steps, step)
	}
	return steps, nil
}

// jobRuns decides whether a job is part of the output: why not when it is
// not, else the namespace it runs in by default (its render's, or the
// request's).
func (rs *resolver) jobRuns(ctx context.Context, j *ordering.Job, where string, plans []renderPlan) (ns, skipped string, err error) {
	ns = rs.req.Namespace
	if j.Render != "" {
		var rp *renderPlan
		for k := range plans {
			if plans[k].name == j.Render {
				rp = &plans[k]
			}
		}
		if rp == nil {
			return "", "render " + j.Render + " is not part of this output", nil
		}
		ns = rp.ns
	} else if len(rs.req.Resources) > 0 {
		return "", "the request selects resources (" + strings.Join(rs.req.Resources, ", ") + ") and the job belongs to no render", nil
	}
	if j.When != "" {
		ok, err := rs.condition(ctx, where+".when", j.When)
		if err != nil {
			return "", "", err
		}
		if !ok {
			return "", "when " + j.When + " is false", nil
		}
	}
	return ns, "", nil
}

// jobStep builds the Job of a job that runs, as a step placed as a hook
// (PreSync by default); names holds the names of the jobs built so far.
func (rs *resolver) jobStep(ctx context.Context, j *ordering.Job, where, ns string, names map[string]bool, rep *explain.JobReport) (plan.Step, error) {
	name, err := ordering.Text(ctx, rs.fields(rs.vars), where+".name", j.Name)
	if err != nil {
		return plan.Step{}, err
	}
	if err := ordering.CheckDNSLabel(name); err != nil {
		return plan.Step{}, fmt.Errorf("%w: %s.name: %v", errdef.ErrInvalidInput, where, err)
	}
	if names[name] {
		return plan.Step{}, fmt.Errorf("%w: %s.name: another job is named %s too", errdef.ErrInvalidInput, where, errdef.Quote(name))
	}
	names[name] = true
	rep.Name = name
	res, err := rs.cv.Descriptor().Resource(j.Image.Resource)
	if err != nil {
		return plan.Step{}, fmt.Errorf("%s.image.resource: %w", where, err)
	}
	img, err := rs.image(j.Image.Resource)
	if err != nil {
		return plan.Step{}, fmt.Errorf("%s.image.resource: %w", where, err)
	}
	ref, err := JobImageRef(img)
	if err != nil {
		return plan.Step{}, fmt.Errorf("%s.image: %w", where, err)
	}
	rep.Resource, rep.Image = res.Identity().String(), ref
	if j.Namespace != "" {
		if ns, err = ordering.Text(ctx, rs.fields(rs.vars), where+".namespace", j.Namespace); err != nil {
			return plan.Step{}, err
		}
		if err := ordering.CheckDNSLabel(ns); err != nil {
			return plan.Step{}, fmt.Errorf("%w: %s.namespace: %v", errdef.ErrInvalidInput, where, err)
		}
	}
	obj, err := ordering.JobObject(ctx, rs.fields(rs.vars), j, where, name, ns, ref)
	if err != nil {
		return plan.Step{}, err
	}

	h := ordering.HookOf(j.Hook, hooks.PreSync)
	wave, err := ordering.Wave(ctx, rs.fields(rs.vars), where+".syncWave", j.SyncWave)
	if err != nil {
		return plan.Step{}, err
	}
	rep.Hook, rep.Wave = h.Type+", delete policy "+h.DeletePolicy, wave
	return plan.Step{
		Resource: res, ReleaseName: rs.req.ReleaseName, Namespace: ns,
		Objects:  []manifests.Object{obj},
		Ordering: &hooks.Ordering{Placement: hooks.Placement{SyncWave: wave, Hook: h}},
	}, nil
}
