package ordering

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
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

// Fail reports an invalid field of a definition at path.
type Fail func(path, format string, args ...any) error

// CheckDNSLabel accepts a Kubernetes DNS label (a Job's name or namespace).
func CheckDNSLabel(s string) error {
	if len(s) > 63 || !dnsLabelRE().MatchString(s) {
		return fmt.Errorf("%s is not a DNS label (at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit)", errdef.Quote(s))
	}
	return nil
}

func checkDNSSubdomain(s string) error {
	if len(s) > 253 || !dnsSubdomainRE().MatchString(s) {
		return fmt.Errorf("%s is not a valid name (lower-case letters, digits, '-' and '.', at most 253)", errdef.Quote(s))
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
		return fmt.Errorf("the string %s: want an integer (3, not \"3\") or ${…}", errdef.Quote(s))
	}
	return fmt.Errorf("want an integer or a string holding ${…}, got %s", expr.DescribeValue(v))
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

// HookOf is the hook to write: the delete policy defaults to
// BeforeHookCreation (Argo CD's own default, written out).
func HookOf(h *Hook, defaultType string) *hooks.Hook {
	out := hooks.Hook{Type: defaultType, DeletePolicy: hooks.BeforeHookCreation}
	if h != nil {
		out.Type = h.Type
		if h.DeletePolicy != "" {
			out.DeletePolicy = h.DeletePolicy
		}
	}
	return &out
}

// ValidateRender checks the placement fields of a render at where: its
// syncWave, hook and ordering rules (normalising hooks' delete policies).
func ValidateRender(where string, syncWave any, hook *Hook, rules []OrderingRule, fail Fail) error {
	if err := checkWave(syncWave); err != nil {
		return fail(where+".syncWave", "%v", err)
	}
	if err := checkHook(hook); err != nil {
		return fail(where+".hook", "%v", err)
	}
	for j := range rules {
		o := &rules[j]
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

// ValidateJobs checks a definition's spec.jobs; renders are the names of
// its renders.
func ValidateJobs(jobs []Job, renders map[string]bool, fail Fail) error {
	seen := map[string]bool{}
	for i := range jobs {
		j := &jobs[i]
		where := fmt.Sprintf("spec.jobs[%d]", i)
		if j.Name == "" {
			return fail(where+".name", "a job needs a name")
		}
		if !expr.HasExpression(j.Name) {
			if err := CheckDNSLabel(j.Name); err != nil {
				return fail(where+".name", "%v", err)
			}
		}
		if seen[j.Name] {
			return fail(where+".name", "job %s is defined twice", errdef.Quote(j.Name))
		}
		seen[j.Name] = true
		if j.Render != "" && !renders[j.Render] {
			return fail(where+".render", "no render is named %s (renders: %s)", errdef.Quote(j.Render), errdef.Cut(strings.Join(slices.Sorted(maps.Keys(renders)), ", ")))
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
