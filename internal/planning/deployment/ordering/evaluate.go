package ordering

import (
	"context"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// Fields evaluates the ${…} of a field (config binds the variables the
// expressions see).
type Fields interface {
	Template(ctx context.Context, where, s string) (any, error)
}

// Wave evaluates a syncWave field; nil when absent.
func Wave(ctx context.Context, f Fields, where string, v any) (*int, error) {
	if v == nil {
		return nil, nil
	}
	if n, ok, err := waveInt(v); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, where, err)
	} else if ok {
		return &n, nil
	}
	s, _ := v.(string)
	res, err := f.Template(ctx, where, s)
	if err != nil {
		return nil, err
	}
	n, ok, err := waveInt(res)
	if err != nil || !ok {
		why := "want an integer"
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("%w: %s: %s is %s: %s", errdef.ErrInvalidInput, where, s, expr.DescribeValue(res), why)
	}
	return &n, nil
}

// Text evaluates a string field that must yield text; numbers and booleans
// are written as text (an argument ${parameters.replicas} is "3").
func Text(ctx context.Context, f Fields, where, s string) (string, error) {
	v, err := f.Template(ctx, where, s)
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

// EvalTarget evaluates the fields of a target.
func EvalTarget(ctx context.Context, fs Fields, where string, in Target) (Target, error) {
	var t Target
	for _, f := range []struct {
		name, val string
		out       *string
	}{
		{"apiVersion", in.APIVersion, &t.APIVersion}, {"kind", in.Kind, &t.Kind},
		{"name", in.Name, &t.Name}, {"namespace", in.Namespace, &t.Namespace},
	} {
		v, err := fs.Template(ctx, where+".target."+f.name, f.val)
		if err != nil {
			return Target{}, err
		}
		s, ok := v.(string)
		if !ok {
			return Target{}, fmt.Errorf("%w: %s.target.%s is %s, want a string", errdef.ErrInvalidInput, where, f.name, expr.DescribeValue(v))
		}
		*f.out = s
	}
	return t, nil
}

// Placement evaluates the placement of render (its name): its wave, its
// hook and its per-object rules; nil when it asks for none.
func Placement(ctx context.Context, f Fields, where, render string, syncWave any, hook *Hook, rules []OrderingRule) (*hooks.Ordering, error) {
	if syncWave == nil && hook == nil && len(rules) == 0 {
		return nil, nil
	}
	o := &hooks.Ordering{}
	var err error
	if o.SyncWave, err = Wave(ctx, f, where+".syncWave", syncWave); err != nil {
		return nil, err
	}
	if hook != nil {
		o.Hook = HookOf(hook, "")
	}
	for j, rule := range rules {
		w := fmt.Sprintf("%s.ordering[%d]", where, j)
		t, err := EvalTarget(ctx, f, w, rule.Target)
		if err != nil {
			return nil, err
		}
		hr := hooks.Rule{Selector: hooks.Selector(t), Source: w + " (render " + render + ")"}
		if hr.SyncWave, err = Wave(ctx, f, w+".syncWave", rule.SyncWave); err != nil {
			return nil, err
		}
		if rule.Hook != nil {
			hr.Hook = HookOf(rule.Hook, "")
		}
		o.Rules = append(o.Rules, hr)
	}
	return o, nil
}

// JobObject is the batch/v1 Job of job j named name in namespace ns ("" for
// none), running image ref: one locked-down container, one run.
func JobObject(ctx context.Context, f Fields, j *Job, where, name, ns, ref string) (manifests.Object, error) {
	container, err := jobContainer(ctx, f, j, where, name, ref)
	if err != nil {
		return nil, err
	}
	spec, err := jobSpec(ctx, f, j, where, container)
	if err != nil {
		return nil, err
	}
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	return manifests.Object{"apiVersion": "batch/v1", "kind": "Job", "metadata": md, "spec": spec}, nil
}

// jobContainer is the one container of a job's Job: the image, locked
// down (no privilege escalation, no capabilities), with its command,
// arguments and environment evaluated.
func jobContainer(ctx context.Context, f Fields, j *Job, where, name, ref string) (map[string]any, error) {
	container := map[string]any{
		"name":  name,
		"image": ref,
		"securityContext": map[string]any{
			"allowPrivilegeEscalation": false,
			"capabilities":             map[string]any{"drop": []any{"ALL"}},
		},
	}
	for _, field := range []struct {
		key   string
		items []string
	}{{"command", j.Command}, {"args", j.Args}} {
		if len(field.items) == 0 {
			continue
		}
		list := make([]any, len(field.items))
		for k, s := range field.items {
			var err error
			if list[k], err = Text(ctx, f, fmt.Sprintf("%s.%s[%d]", where, field.key, k), s); err != nil {
				return nil, err
			}
		}
		container[field.key] = list
	}
	if len(j.Env) > 0 {
		env := make([]any, len(j.Env))
		for k, e := range j.Env {
			v, err := envVar(ctx, f, fmt.Sprintf("%s.env[%d]", where, k), e)
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
func envVar(ctx context.Context, f Fields, where string, e EnvVar) (map[string]any, error) {
	if e.SecretKeyRef != nil {
		sn, err := Text(ctx, f, where+".secretKeyRef.name", e.SecretKeyRef.Name)
		if err != nil {
			return nil, err
		}
		sk, err := Text(ctx, f, where+".secretKeyRef.key", e.SecretKeyRef.Key)
		if err != nil {
			return nil, err
		}
		return map[string]any{"name": e.Name, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": sn, "key": sk}}}, nil
	}
	v, err := Text(ctx, f, where+".value", e.Value)
	if err != nil {
		return nil, err
	}
	return map[string]any{"name": e.Name, "value": v}, nil
}

// jobSpec is the spec of a job's Job: one run (restartPolicy Never) as a
// non-root user under the runtime's seccomp profile.
func jobSpec(ctx context.Context, f Fields, j *Job, where string, container map[string]any) (map[string]any, error) {
	podSpec := map[string]any{
		"restartPolicy": "Never",
		"securityContext": map[string]any{
			"runAsNonRoot":   true,
			"seccompProfile": map[string]any{"type": "RuntimeDefault"},
		},
		"containers": []any{container},
	}
	if j.ServiceAccountName != "" {
		sa, err := Text(ctx, f, where+".serviceAccountName", j.ServiceAccountName)
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
