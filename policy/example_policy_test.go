package policy_test

import (
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// A program that serves many Argo CD projects parses the sidecar policy once
// and asks it for the rule of each Application's project: the first rule
// whose project patterns match, else the default rule.
func ExamplePolicy_Rule() {
	p, err := policy.Parse([]byte(`
apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
rules:
- name: team-a
  projects: ["team-a-*"]
  repositories:
  - {host: ghcr.io, pathPrefix: acme/team-a}
default:
  repositories: []
`), "policy.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, project := range []string{"team-a-prod", "team-b"} {
		rule := p.Rule(project)
		fmt.Printf("%s: rule %q, ghcr.io/acme/team-a allowed: %v\n", project, rule.Name, rule.AllowRepository("ghcr.io", "acme/team-a/podinfo") == nil)
	}
	// Output:
	// team-a-prod: rule "team-a", ghcr.io/acme/team-a allowed: true
	// team-b: rule "default", ghcr.io/acme/team-a allowed: false
}
