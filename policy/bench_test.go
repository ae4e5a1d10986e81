package policy_test

import (
	"path/filepath"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// BenchmarkFromEnvironment is what every generation pays for the policy:
// reading and validating the multi-team example and resolving a rule.
func BenchmarkFromEnvironment(b *testing.B) {
	file := filepath.Join("..", "docs", "examples", "sidecar-policy.yaml")
	env := map[string]string{policy.EnvPolicy: file, policy.EnvProject: "team-a-dev"}
	getenv := func(k string) string { return env[k] }
	b.ReportAllocs()
	for b.Loop() {
		r, err := policy.FromEnvironment(getenv)
		if err != nil || r.Name != "team-a" {
			b.Fatal(r, err)
		}
	}
}

// BenchmarkAllowRepository is one gate decision.
func BenchmarkAllowRepository(b *testing.B) {
	p, err := policy.Load(filepath.Join("..", "docs", "examples", "sidecar-policy.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	r := p.Rule("team-a")
	b.ReportAllocs()
	for b.Loop() {
		if err := r.AllowRepository("ghcr.io", "acme/team-a/component-descriptors/acme.org/shop/backend"); err != nil {
			b.Fatal(err)
		}
	}
}
