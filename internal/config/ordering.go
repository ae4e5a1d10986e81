package config

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/config/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/pipeline"
)

// Sync waves are written as annotations Argo CD parses as int; the
// definition keeps them to 32 bits so that the defaults below every wave
// (hooks.ApplyDefaults) stay representable.
const (
	minWave = math.MinInt32 + 2
	maxWave = math.MaxInt32
)

var (
	dnsLabelRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) })
	dnsSubdomainRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	})
)

func checkDNSLabel(s string) error {
	if len(s) > 63 || !dnsLabelRE().MatchString(s) {
		return fmt.Errorf("%q is not a DNS label (at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit)", truncate(s, 80))
	}
	return nil
}

func checkDNSSubdomain(s string) error {
	if len(s) > 253 || !dnsSubdomainRE().MatchString(s) {
		return fmt.Errorf("%q is not a valid name (lower-case letters, digits, '-' and '.', at most 253)", truncate(s, 80))
	}
	return nil
}

// waveInt reads a sync wave given literally (an integer in range).
func waveInt(v any) (int, bool, error) {
	var n float64
	switch x := v.(type) {
	case int64:
		n = float64(x)
	case int:
		n = float64(x)
	case float64:
		if x != math.Trunc(x) {
			return 0, false, fmt.Errorf("%v is not an integer", x)
		}
		n = x
	default:
		return 0, false, nil
	}
	if n < minWave || n > maxWave {
		return 0, false, fmt.Errorf("%v is out of range (%d to %d)", n, minWave, maxWave)
	}
	return int(n), true, nil
}

// checkWave validates a syncWave field: absent, an integer, or a string
// holding ${…}.
func checkWave(v any) error {
	if v == nil {
		return nil
	}
	if _, ok, err := waveInt(v); ok || err != nil {
		return err
	}
	if s, ok := v.(string); ok {
		if expr.HasExpression(s) {
			return nil
		}
		return fmt.Errorf("the string %q: want an integer (3, not \"3\") or ${…}", truncate(s, 40))
	}
	return fmt.Errorf("want an integer or a string holding ${…}, got %s", describeValue(v))
}

// checkHook validates a hook and normalises its delete policy.
func checkHook(h *Hook) error {
	if h == nil {
		return nil
	}
	hh, err := hooks.ValidateHook(hooks.Hook{Type: h.Type, DeletePolicy: h.DeletePolicy})
	if err != nil {
		return err
	}
	h.DeletePolicy = hh.DeletePolicy
	return nil
}

// hookOf is the hook to write: the delete policy defaults to
// BeforeHookCreation (Argo CD's own default, written out).
func hookOf(h *Hook, defaultType string) *hooks.Hook {
	out := hooks.Hook{Type: defaultType, DeletePolicy: hooks.BeforeHookCreation}
	if h != nil {
		out.Type = h.Type
		if h.DeletePolicy != "" {
			out.DeletePolicy = h.DeletePolicy
		}
	}
	return &out
}

func (r *Render) validateOrdering(where string, fail func(path, format string, args ...any) error) error {
	if err := checkWave(r.SyncWave); err != nil {
		return fail(where+".syncWave", "%v", err)
	}
	if err := checkHook(r.Hook); err != nil {
		return fail(where+".hook", "%v", err)
	}
	for j := range r.Ordering {
		o := &r.Ordering[j]
		w := fmt.Sprintf("%s.ordering[%d]", where, j)
		if o.Target.Kind == "" {
			return fail(w+".target.kind", "an ordering target needs a kind")
		}
		if o.SyncWave == nil && o.Hook == nil {
			return fail(w, "the rule sets nothing: give a syncWave, a hook or both")
		}
		if err := checkWave(o.SyncWave); err != nil {
			return fail(w+".syncWave", "%v", err)
		}
		if err := checkHook(o.Hook); err != nil {
			return fail(w+".hook", "%v", err)
		}
	}
	return nil
}

func (d *Definition) validateJobs(fail func(path, format string, args ...any) error) error {
	renders := map[string]bool{}
	for _, r := range d.Spec.Renders {
		renders[r.Name] = true
	}
	seen := map[string]bool{}
	for i := range d.Spec.Jobs {
		j := &d.Spec.Jobs[i]
		where := fmt.Sprintf("spec.jobs[%d]", i)
		if j.Name == "" {
			return fail(where+".name", "a job needs a name")
		}
		if !expr.HasExpression(j.Name) {
			if err := checkDNSLabel(j.Name); err != nil {
				return fail(where+".name", "%v", err)
			}
		}
		if seen[j.Name] {
			return fail(where+".name", "job %q is defined twice", j.Name)
		}
		seen[j.Name] = true
		if j.Render != "" && !renders[j.Render] {
			return fail(where+".render", "no render is named %q (renders: %s)", j.Render, strings.Join(sortedKeys(renders), ", "))
		}
		if j.Image.Resource["name"] == "" {
			return fail(where+".image.resource", "the resource identity needs a name")
		}
		for k, e := range j.Env {
			w := fmt.Sprintf("%s.env[%d]", where, k)
			if e.Name == "" {
				return fail(w+".name", "an environment variable needs a name")
			}
			if e.SecretKeyRef != nil {
				if e.Value != "" {
					return fail(w, "give a value or a secretKeyRef, not both")
				}
				if e.SecretKeyRef.Name == "" || e.SecretKeyRef.Key == "" {
					return fail(w+".secretKeyRef", "a secretKeyRef needs a name and a key")
				}
			}
		}
		if err := checkHook(j.Hook); err != nil {
			return fail(where+".hook", "%v", err)
		}
		if err := checkWave(j.SyncWave); err != nil {
			return fail(where+".syncWave", "%v", err)
		}
		if j.BackoffLimit != nil && *j.BackoffLimit < 0 {
			return fail(where+".backoffLimit", "%d is negative", *j.BackoffLimit)
		}
		if j.ActiveDeadlineSeconds != nil && *j.ActiveDeadlineSeconds <= 0 {
			return fail(where+".activeDeadlineSeconds", "%d is not positive", *j.ActiveDeadlineSeconds)
		}
		if j.ServiceAccountName != "" && !expr.HasExpression(j.ServiceAccountName) {
			if err := checkDNSSubdomain(j.ServiceAccountName); err != nil {
				return fail(where+".serviceAccountName", "%v", err)
			}
		}
	}
	return nil
}

// checkOrderingExpressions compiles the expressions of the ordering fields
// and jobs (see checkExpressions).
func (d *Definition) checkOrderingExpressions(e *expr.Evaluator) error {
	check := func(where, s string) error {
		if strings.Contains(s, "${") {
			return e.Check(where, s)
		}
		return nil
	}
	waveExpr := func(v any) string { s, _ := v.(string); return s }
	for i, r := range d.Spec.Renders {
		base := fmt.Sprintf("%s: spec.renders[%d]", d.Source, i)
		if err := check(base+".syncWave", waveExpr(r.SyncWave)); err != nil {
			return err
		}
		for j, o := range r.Ordering {
			w := fmt.Sprintf("%s.ordering[%d]", base, j)
			for _, f := range []struct{ name, val string }{
				{"target.apiVersion", o.Target.APIVersion}, {"target.kind", o.Target.Kind},
				{"target.name", o.Target.Name}, {"target.namespace", o.Target.Namespace},
				{"syncWave", waveExpr(o.SyncWave)},
			} {
				if err := check(w+"."+f.name, f.val); err != nil {
					return err
				}
			}
		}
	}
	for i, j := range d.Spec.Jobs {
		base := fmt.Sprintf("%s: spec.jobs[%d]", d.Source, i)
		fields := []struct{ name, val string }{
			{"name", j.Name}, {"when", j.When}, {"namespace", j.Namespace},
			{"serviceAccountName", j.ServiceAccountName}, {"syncWave", waveExpr(j.SyncWave)},
		}
		for k, c := range j.Command {
			fields = append(fields, struct{ name, val string }{fmt.Sprintf("command[%d]", k), c})
		}
		for k, a := range j.Args {
			fields = append(fields, struct{ name, val string }{fmt.Sprintf("args[%d]", k), a})
		}
		for k, ev := range j.Env {
			fields = append(fields, struct{ name, val string }{fmt.Sprintf("env[%d].value", k), ev.Value})
			if ev.SecretKeyRef != nil {
				fields = append(fields,
					struct{ name, val string }{fmt.Sprintf("env[%d].secretKeyRef.name", k), ev.SecretKeyRef.Name},
					struct{ name, val string }{fmt.Sprintf("env[%d].secretKeyRef.key", k), ev.SecretKeyRef.Key})
			}
		}
		for _, f := range fields {
			if err := check(base+"."+f.name, f.val); err != nil {
				return err
			}
		}
	}
	return nil
}

// wave evaluates a syncWave field; nil when absent.
func (rs *resolver) wave(ctx context.Context, where string, v any) (*int, error) {
	if v == nil {
		return nil, nil
	}
	if n, ok, err := waveInt(v); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, where, err)
	} else if ok {
		return &n, nil
	}
	s, _ := v.(string)
	res, err := rs.eval.Template(ctx, where, s, rs.vars)
	if err != nil {
		return nil, err
	}
	n, ok, err := waveInt(res)
	if err != nil || !ok {
		why := "want an integer"
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("%w: %s: %s is %s: %s", errdef.ErrInvalidInput, where, s, describeValue(res), why)
	}
	return &n, nil
}

// text evaluates a string field that must yield text; numbers and booleans
// are written as text (an argument ${parameters.replicas} is "3").
func (rs *resolver) text(ctx context.Context, where, s string) (string, error) {
	v, err := rs.eval.Template(ctx, where, s, rs.vars)
	if err != nil {
		return "", err
	}
	if str, ok := v.(string); ok {
		return str, nil
	}
	str, err := expr.Stringify(v)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %s: %v", errdef.ErrInvalidInput, where, s, err)
	}
	return str, nil
}

// target evaluates the fields of a target.
func (rs *resolver) target(ctx context.Context, where string, in Target, vars map[string]any) (Target, error) {
	var t Target
	for _, f := range []struct {
		name, val string
		out       *string
	}{
		{"apiVersion", in.APIVersion, &t.APIVersion}, {"kind", in.Kind, &t.Kind},
		{"name", in.Name, &t.Name}, {"namespace", in.Namespace, &t.Namespace},
	} {
		v, err := rs.eval.Template(ctx, where+".target."+f.name, f.val, vars)
		if err != nil {
			return Target{}, err
		}
		s, ok := v.(string)
		if !ok {
			return Target{}, fmt.Errorf("%w: %s.target.%s is %s, want a string", errdef.ErrInvalidInput, where, f.name, describeValue(v))
		}
		*f.out = s
	}
	return t, nil
}

// ordering evaluates the placement of a render: its wave, its hook and its
// per-object rules; nil when it asks for none.
func (rs *resolver) ordering(ctx context.Context, rp renderPlan, where string) (*hooks.Ordering, error) {
	r := rp.render
	if r == nil || (r.SyncWave == nil && r.Hook == nil && len(r.Ordering) == 0) {
		return nil, nil
	}
	o := &hooks.Ordering{}
	var err error
	if o.SyncWave, err = rs.wave(ctx, where+".syncWave", r.SyncWave); err != nil {
		return nil, err
	}
	if r.Hook != nil {
		o.Hook = hookOf(r.Hook, "")
	}
	for j, rule := range r.Ordering {
		w := fmt.Sprintf("%s.ordering[%d]", where, j)
		t, err := rs.target(ctx, w, rule.Target, rs.vars)
		if err != nil {
			return nil, err
		}
		hr := hooks.Rule{Selector: hooks.Selector(t), Source: w + " (render " + rp.name + ")"}
		if hr.SyncWave, err = rs.wave(ctx, w+".syncWave", rule.SyncWave); err != nil {
			return nil, err
		}
		if rule.Hook != nil {
			hr.Hook = hookOf(rule.Hook, "")
		}
		o.Rules = append(o.Rules, hr)
	}
	return o, nil
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
func (rs *resolver) jobs(ctx context.Context, plans []renderPlan) ([]pipeline.Step, error) {
	if rs.def == nil {
		return nil, nil
	}
	var steps []pipeline.Step
	names := map[string]bool{}
	for i := range rs.def.Spec.Jobs {
		j := &rs.def.Spec.Jobs[i]
		where := fmt.Sprintf("%s: spec.jobs[%d]", rs.def.Source, i)
		rep := JobReport{Name: j.Name, Resource: j.Image.Resource.String()}
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
func (rs *resolver) jobRuns(ctx context.Context, j *Job, where string, plans []renderPlan) (ns, skipped string, err error) {
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
func (rs *resolver) jobStep(ctx context.Context, j *Job, where, ns string, names map[string]bool, rep *JobReport) (pipeline.Step, error) {
	name, err := rs.text(ctx, where+".name", j.Name)
	if err != nil {
		return pipeline.Step{}, err
	}
	if err := checkDNSLabel(name); err != nil {
		return pipeline.Step{}, fmt.Errorf("%w: %s.name: %v", errdef.ErrInvalidInput, where, err)
	}
	if names[name] {
		return pipeline.Step{}, fmt.Errorf("%w: %s.name: another job is named %q too", errdef.ErrInvalidInput, where, name)
	}
	names[name] = true
	rep.Name = name
	res, err := rs.cv.Descriptor().Resource(j.Image.Resource)
	if err != nil {
		return pipeline.Step{}, fmt.Errorf("%s.image.resource: %w", where, err)
	}
	img, err := rs.image(j.Image.Resource)
	if err != nil {
		return pipeline.Step{}, fmt.Errorf("%s.image.resource: %w", where, err)
	}
	ref, err := JobImageRef(img)
	if err != nil {
		return pipeline.Step{}, fmt.Errorf("%s.image: %w", where, err)
	}
	rep.Resource, rep.Image = res.Identity().String(), ref
	if j.Namespace != "" {
		if ns, err = rs.text(ctx, where+".namespace", j.Namespace); err != nil {
			return pipeline.Step{}, err
		}
		if err := checkDNSLabel(ns); err != nil {
			return pipeline.Step{}, fmt.Errorf("%w: %s.namespace: %v", errdef.ErrInvalidInput, where, err)
		}
	}
	container, err := rs.jobContainer(ctx, j, where, name, ref)
	if err != nil {
		return pipeline.Step{}, err
	}
	spec, err := rs.jobSpec(ctx, j, where, container)
	if err != nil {
		return pipeline.Step{}, err
	}
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	obj := manifests.Object{"apiVersion": "batch/v1", "kind": "Job", "metadata": md, "spec": spec}

	h := hookOf(j.Hook, hooks.PreSync)
	wave, err := rs.wave(ctx, where+".syncWave", j.SyncWave)
	if err != nil {
		return pipeline.Step{}, err
	}
	rep.Hook, rep.Wave = h.Type+", delete policy "+h.DeletePolicy, wave
	return pipeline.Step{
		Resource: res, ReleaseName: rs.req.ReleaseName, Namespace: ns,
		Objects:  []manifests.Object{obj},
		Ordering: &hooks.Ordering{Placement: hooks.Placement{SyncWave: wave, Hook: h}},
	}, nil
}

// jobContainer is the one container of a job's Job: the image, locked
// down (no privilege escalation, no capabilities), with its command,
// arguments and environment evaluated.
func (rs *resolver) jobContainer(ctx context.Context, j *Job, where, name, ref string) (map[string]any, error) {
	container := map[string]any{
		"name":  name,
		"image": ref,
		"securityContext": map[string]any{
			"allowPrivilegeEscalation": false,
			"capabilities":             map[string]any{"drop": []any{"ALL"}},
		},
	}
	for _, f := range []struct {
		key   string
		items []string
	}{{"command", j.Command}, {"args", j.Args}} {
		if len(f.items) == 0 {
			continue
		}
		list := make([]any, len(f.items))
		for k, s := range f.items {
			var err error
			if list[k], err = rs.text(ctx, fmt.Sprintf("%s.%s[%d]", where, f.key, k), s); err != nil {
				return nil, err
			}
		}
		container[f.key] = list
	}
	if len(j.Env) > 0 {
		env := make([]any, len(j.Env))
		for k, e := range j.Env {
			v, err := rs.envVar(ctx, fmt.Sprintf("%s.env[%d]", where, k), e)
			if err != nil {
				return nil, err
			}
			env[k] = v
		}
		container["env"] = env
	}
	return container, nil
}

// envVar is an environment variable of a job: a value, or a reference to a
// key of a Secret (never the secret's value).
func (rs *resolver) envVar(ctx context.Context, where string, e EnvVar) (map[string]any, error) {
	if e.SecretKeyRef != nil {
		sn, err := rs.text(ctx, where+".secretKeyRef.name", e.SecretKeyRef.Name)
		if err != nil {
			return nil, err
		}
		sk, err := rs.text(ctx, where+".secretKeyRef.key", e.SecretKeyRef.Key)
		if err != nil {
			return nil, err
		}
		return map[string]any{"name": e.Name, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": sn, "key": sk}}}, nil
	}
	v, err := rs.text(ctx, where+".value", e.Value)
	if err != nil {
		return nil, err
	}
	return map[string]any{"name": e.Name, "value": v}, nil
}

// jobSpec is the spec of a job's Job: one run (restartPolicy Never) as a
// non-root user under the runtime's seccomp profile.
func (rs *resolver) jobSpec(ctx context.Context, j *Job, where string, container map[string]any) (map[string]any, error) {
	podSpec := map[string]any{
		"restartPolicy": "Never",
		"securityContext": map[string]any{
			"runAsNonRoot":   true,
			"seccompProfile": map[string]any{"type": "RuntimeDefault"},
		},
		"containers": []any{container},
	}
	if j.ServiceAccountName != "" {
		sa, err := rs.text(ctx, where+".serviceAccountName", j.ServiceAccountName)
		if err != nil {
			return nil, err
		}
		if err := checkDNSSubdomain(sa); err != nil {
			return nil, fmt.Errorf("%w: %s.serviceAccountName: %v", errdef.ErrInvalidInput, where, err)
		}
		podSpec["serviceAccountName"] = sa
	}
	spec := map[string]any{"template": map[string]any{"spec": podSpec}}
	if j.BackoffLimit != nil {
		spec["backoffLimit"] = *j.BackoffLimit
	}
	if j.ActiveDeadlineSeconds != nil {
		spec["activeDeadlineSeconds"] = *j.ActiveDeadlineSeconds
	}
	return spec, nil
}
