package ordering

import (
	"fmt"
	"strings"
)

// Check compiles the expression of a field at where.
type Check func(where, s string) error

// CheckRenderExpressions compiles the ${…} of a render's placement fields;
// base names the render (e.g. "def.yaml: spec.renders[0]").
func CheckRenderExpressions(check Check, base string, syncWave any, rules []OrderingRule) error {
	check = onlyTemplates(check)
	if err := check(base+".syncWave", waveExpr(syncWave)); err != nil {
		return err
	}
	for j, o := range rules {
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
	return nil
}

// CheckJobExpressions compiles the ${…} of a definition's jobs; source
// names the definition.
func CheckJobExpressions(check Check, source string, jobs []Job) error {
	check = onlyTemplates(check)
	for i, j := range jobs {
		base := fmt.Sprintf("%s: spec.jobs[%d]", source, i)
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

// onlyTemplates skips fields without ${…}: they are literal.
func onlyTemplates(check Check) Check {
	return func(where, s string) error {
		if strings.Contains(s, "${") {
			return check(where, s)
		}
		return nil
	}
}

func waveExpr(v any) string { s, _ := v.(string); return s }
