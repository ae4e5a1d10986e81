package policyopts_test

import (
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/registry/policyopts"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/policy"
)

const (
	head  = "apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\ncredentials:\n- {name: m, host: harbor.example, pathPrefix: ghcr-proxy, env: M}\n- {name: up, host: ghcr.io, env: UP}\n"
	rules = "rules:\n- projects: [a]\n  repositories: [{host: ghcr.io, pathPrefix: acme/a}]\n  credentials: [up]\ndefault:\n  repositories: []\n"
)

func parse(t *testing.T, doc string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(doc), "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Every rule of a policy with mirrors gets one mirror option more than the
// same rule of a policy without.
func TestForAddsThePolicysMirrors(t *testing.T) {
	plain := parse(t, head+rules)
	mirrored := parse(t, head+"mirrors:\n- upstream: ghcr.io\n  endpoints: [{host: harbor.example, pathPrefix: ghcr-proxy, credential: m}]\n"+rules)
	none := func(string) (string, bool) { return "", false }
	for _, project := range []string{"a", "other"} {
		n, m := len(policyopts.For(mirrored.Rule(project), none)), len(policyopts.For(plain.Rule(project), none))
		if n != m+1 {
			t.Errorf("%s: %d registry options, %d without mirrors: the mirror option is missing", project, n, m)
		}
	}
}

// The rule without a policy (any repository, the sidecar's credentials)
// needs no gate: only its plain-HTTP hosts become options.
func TestForLegacyRule(t *testing.T) {
	r := policy.Legacy(func(string) string { return "" }, "")
	if opts := policyopts.For(r, nil); len(opts) != 0 {
		t.Errorf("%d options for the rule without a policy, want none", len(opts))
	}
	r.PlainHTTP = []string{"localhost:5000"}
	if opts := policyopts.For(r, nil); len(opts) != 1 {
		t.Errorf("%d options with one plain-HTTP host, want 1", len(opts))
	}
}
