package ordering_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment/ordering"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// fields evaluates "${name}" to vars[name] and leaves other text alone:
// the package's boundary, without the CEL of the definitions' planner.
type fields map[string]any

func (f fields) Template(_ context.Context, where, s string) (any, error) {
	if name, ok := strings.CutPrefix(s, "${"); ok && strings.HasSuffix(name, "}") {
		v, ok := f[strings.TrimSuffix(name, "}")]
		if !ok {
			return nil, fmt.Errorf("%w: %s: no variable %s", errdef.ErrInvalidInput, where, s)
		}
		return v, nil
	}
	return s, nil
}

var vars = fields{"wave": int64(4), "name": "shop", "text": true, "ns": "apps"}

func TestWaveAndText(t *testing.T) {
	ctx := context.Background()
	for in, want := range map[any]int{3: 3, int64(-2): -2, "${wave}": 4} {
		got, err := ordering.Wave(ctx, vars, "w", in)
		if err != nil || got == nil || *got != want {
			t.Errorf("Wave(%v) = %v, %v; want %d", in, got, err, want)
		}
	}
	if got, err := ordering.Wave(ctx, vars, "w", nil); got != nil || err != nil {
		t.Errorf("no wave: %v, %v", got, err)
	}
	if _, err := ordering.Wave(ctx, vars, "spec.renders[0].syncWave", "${name}"); !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "spec.renders[0].syncWave") {
		t.Errorf("a wave that is text: %v", err)
	}
	if got, err := ordering.Text(ctx, vars, "t", "${wave}"); got != "4" || err != nil {
		t.Errorf("a number as text: %q, %v", got, err)
	}
	if got, err := ordering.Text(ctx, vars, "t", "${text}"); got != "true" || err != nil {
		t.Errorf("a boolean as text: %q, %v", got, err)
	}
}

// Placement: the render's wave and hook, each rule's target evaluated and
// named by its source; nothing asked, nothing placed.
func TestPlacement(t *testing.T) {
	ctx := context.Background()
	if o, err := ordering.Placement(ctx, vars, "spec.renders[0]", "api", nil, nil, nil); o != nil || err != nil {
		t.Fatalf("nothing asked: %v, %v", o, err)
	}
	o, err := ordering.Placement(ctx, vars, "spec.renders[0]", "api", "${wave}", &ordering.Hook{Type: "PreSync"},
		[]ordering.OrderingRule{{Target: ordering.Target{Kind: "Job", Name: "${name}-migrate"}, SyncWave: 5}})
	if err != nil {
		t.Fatal(err)
	}
	four, five := 4, 5
	want := &hooks.Ordering{Placement: hooks.Placement{SyncWave: &four, Hook: &hooks.Hook{Type: "PreSync", DeletePolicy: hooks.BeforeHookCreation}},
		Rules: []hooks.Rule{{Selector: hooks.Selector{Kind: "Job", Name: "${name}-migrate"}, Source: "spec.renders[0].ordering[0] (render api)",
			Placement: hooks.Placement{SyncWave: &five}}}}
	// A target's fields are text, not ${…}: the fake evaluates whole fields only.
	if !reflect.DeepEqual(o, want) {
		t.Errorf("placement\n got %+v\nwant %+v", o, want)
	}
}

// A job's Job: the image, locked down, one run; arguments and environment
// evaluated, a secret by reference only.
func TestJobObject(t *testing.T) {
	backoff := int64(2)
	j := &ordering.Job{Name: "${name}-migrate", Image: ordering.JobImage{Resource: ocm.Identity{"name": "api-image"}},
		Args: []string{"migrate", "${wave}"}, Env: []ordering.EnvVar{{Name: "A", Value: "${name}"}, {Name: "P", SecretKeyRef: &ordering.SecretKeyRef{Name: "db", Key: "password"}}},
		BackoffLimit: &backoff, ServiceAccountName: "${ns}"}
	got, err := ordering.JobObject(context.Background(), vars, j, "spec.jobs[0]", "shop-migrate", "apps", "ghcr.io/x/api:1@sha256:"+strings.Repeat("a", 64))
	if err != nil {
		t.Fatal(err)
	}
	want := manifests.Object{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "shop-migrate", "namespace": "apps"},
		"spec": map[string]any{"backoffLimit": int64(2), "template": map[string]any{"spec": map[string]any{
			"restartPolicy": "Never", "serviceAccountName": "apps",
			"securityContext": map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			"containers": []any{map[string]any{"name": "shop-migrate", "image": "ghcr.io/x/api:1@sha256:" + strings.Repeat("a", 64),
				"args": []any{"migrate", "4"},
				"env": []any{map[string]any{"name": "A", "value": "shop"},
					map[string]any{"name": "P", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}}},
				"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}}}},
		}}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Job\n got %v\nwant %v", got, want)
	}
	j.ServiceAccountName = "${name}/x"
	vars["name"] = "Not_A_Name"
	defer func() { vars["name"] = "shop" }()
	if _, err := ordering.JobObject(context.Background(), vars, j, "spec.jobs[0]", "x", "", "img"); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("a service account that is no DNS subdomain: %v", err)
	}
}

// Validation names the field at fault, through the caller's fail.
func TestValidate(t *testing.T) {
	fail := func(path, format string, args ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	for _, tc := range []struct {
		rules []ordering.OrderingRule
		hook  *ordering.Hook
		want  string
	}{
		{rules: []ordering.OrderingRule{{SyncWave: 1}}, want: "r.ordering[0].target.kind"},
		{rules: []ordering.OrderingRule{{Target: ordering.Target{Kind: "Job"}}}, want: "r.ordering[0]: the rule sets nothing"},
		{hook: &ordering.Hook{Type: "Never"}, want: "r.hook"},
		{hook: &ordering.Hook{Type: "PreSync", DeletePolicy: "HookFailed,HookFailed"}, want: "r.hook"},
	} {
		if err := ordering.ValidateRender("r", nil, tc.hook, tc.rules, fail); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %s", tc, err, tc.want)
		}
	}
	if err := ordering.ValidateRender("r", 3, &ordering.Hook{Type: "PostSync"}, []ordering.OrderingRule{{Target: ordering.Target{Kind: "Job"}, SyncWave: "${x}"}}, fail); err != nil {
		t.Errorf("a valid render: %v", err)
	}
	img := ordering.JobImage{Resource: ocm.Identity{"name": "img"}}
	neg := int64(-1)
	for _, tc := range []struct {
		jobs []ordering.Job
		want string
	}{
		{[]ordering.Job{{Name: "a", Image: img}, {Name: "a", Image: img}}, "spec.jobs[1].name: job \"a\" is defined twice"},
		{[]ordering.Job{{Name: "a", Render: "nope", Image: img}}, "spec.jobs[0].render: no render is named \"nope\" (renders: api)"},
		{[]ordering.Job{{Name: "Bad_Name", Image: img}}, "spec.jobs[0].name"},
		{[]ordering.Job{{Name: "a"}}, "spec.jobs[0].image.resource"},
		{[]ordering.Job{{Name: "a", Image: img, BackoffLimit: &neg}}, "spec.jobs[0].backoffLimit"},
		{[]ordering.Job{{Name: "a", Image: img, Env: []ordering.EnvVar{{Name: "E", Value: "v", SecretKeyRef: &ordering.SecretKeyRef{Name: "s", Key: "k"}}}}}, "spec.jobs[0].env[0]: give a value or a secretKeyRef"},
	} {
		if err := ordering.ValidateJobs(tc.jobs, map[string]bool{"api": true}, fail); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %s", tc.jobs, err, tc.want)
		}
	}
	if err := ordering.ValidateJobs([]ordering.Job{{Name: "${app.name}-x", Render: "api", Image: img}}, map[string]bool{"api": true}, fail); err != nil {
		t.Errorf("valid jobs: %v", err)
	}
}
