package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

const mirrorCred = "credentials:\n- {name: m, host: harbor.example, pathPrefix: ghcr-proxy, env: M}\n- {name: up, host: ghcr.io, env: UP}\n"

// TestMirrorsStrictParse: malformed mirrors are refused by Parse and, where
// a schema can say it, by the schema.
func TestMirrorsStrictParse(t *testing.T) {
	s := schema(t)
	cases := map[string]struct {
		doc, want    string
		schemaAgrees bool
	}{
		"unknown field":           {head + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: m.example, insecure: true}]}\n", "unknown field", true},
		"no endpoints":            {head + "mirrors:\n- {upstream: ghcr.io}\n", "endpoints is required", true},
		"empty endpoints":         {head + "mirrors:\n- {upstream: ghcr.io, endpoints: []}\n", "endpoints is required", true},
		"pattern upstream":        {head + "mirrors:\n- {upstream: '*.io', endpoints: [{host: m.example}]}\n", "exact host", true},
		"scheme in host":          {head + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: 'https://m.example'}]}\n", "exact host", true},
		"path in host":            {head + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: 'm.example/p'}]}\n", "exact host", true},
		"dotdot prefix":           {head + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: m.example, pathPrefix: a/../b}]}\n", "segment", true},
		"upper-case prefix":       {head + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: m.example, pathPrefix: Proxy}]}\n", "repository path", true},
		"pattern prefix":          {head + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: m.example, pathPrefix: 'p*'}]}\n", "patterns", true},
		"upstream twice":          {head + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: a.example}]}\n- {upstream: GHCR.io, endpoints: [{host: b.example}]}\n", "twice", false},
		"mirror is upstream":      {head + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: ghcr.io}]}\n", "upstream itself", false},
		"undefined credential":    {head + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: m.example, credential: nope}]}\n", "not defined", false},
		"upstream's credential":   {head + mirrorCred + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: harbor.example, pathPrefix: ghcr-proxy, credential: up}]}\n", "exactly their host", false},
		"credential outside path": {head + mirrorCred + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: harbor.example, pathPrefix: other, credential: m}]}\n", "does not cover", false},
		"string for plainHTTP":    {head + "mirrors:\n- {upstream: ghcr.io, endpoints: [{host: m.example, plainHTTP: 'yes'}]}\n", "", true},
		"mirrors inside a rule":   {head + "default:\n  mirrors: []\n", "unknown field", true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := policy.Parse([]byte(c.doc), "policy.yaml")
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "sidecar policy policy.yaml") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q: want ErrInvalidInput naming the file and %q", err, c.want)
			}
			if c.schemaAgrees {
				if err := validate(t, s, []byte(c.doc)); err == nil {
					t.Errorf("the schema accepts what Parse refuses")
				}
			}
		})
	}
	ok := head + mirrorCred + "mirrors:\n- upstream: ghcr.io\n  endpoints:\n  - {host: harbor.example, pathPrefix: ghcr-proxy/sub, credential: m, resolveTags: true}\n  - {host: 'cache.svc:5000', plainHTTP: true}\n"
	if _, err := policy.Parse([]byte(ok), "ok"); err != nil {
		t.Errorf("valid mirrors refused: %v", err)
	}
	if err := validate(t, s, []byte(ok)); err != nil {
		t.Errorf("schema refuses valid mirrors: %v", err)
	}
}

// Mirrors are the operator's: every rule gets them, and they do not widen
// what a rule allows (the rules match upstream names).
func TestMirrorsApplyToEveryRuleAndAllowNothing(t *testing.T) {
	rules := `rules:
- projects: [a]
  repositories: [{host: ghcr.io, pathPrefix: acme/a}]
default:
  repositories: []
`
	plain, err := policy.Parse([]byte(head+mirrorCred+rules), "plain")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse([]byte(head+mirrorCred+`mirrors:
- upstream: ghcr.io
  endpoints: [{host: harbor.example, pathPrefix: ghcr-proxy, credential: m}]
rules:
- projects: [a]
  repositories: [{host: ghcr.io, pathPrefix: acme/a}]
default:
  repositories: []
`), "p")
	if err != nil {
		t.Fatal(err)
	}
	for _, project := range []string{"a", "other"} {
		r := p.Rule(project)
		if len(r.Mirrors) != 1 || r.Mirrors[0].Upstream != "ghcr.io" || len(r.MirrorCredentials) != 1 || r.MirrorCredentials["m"].Host != "harbor.example" {
			t.Errorf("%s: mirrors %+v with credentials %+v, want the policy's mirror of ghcr.io and its credential m", project, r.Mirrors, r.MirrorCredentials)
		}
		if len(plain.Rule(project).Mirrors) != 0 {
			t.Errorf("%s: a policy without mirrors gave the rule mirrors", project)
		}
		if err := r.AllowRepository("harbor.example", "ghcr-proxy/acme/a"); !errors.Is(err, errdef.ErrForbidden) {
			t.Errorf("%s: naming the mirror directly: %v, want a refusal", project, err)
		}
	}
	if err := p.Rule("other").AllowRepository("ghcr.io", "acme/a"); !errors.Is(err, errdef.ErrForbidden) {
		t.Errorf("a mirror widened the default rule: %v", err)
	}
}

// The policy of docs/scaling.md parses and matches the schema.
func TestScalingDocPolicy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "scaling.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```yaml\napiVersion: argocd-ocm-plugin.io/v1alpha1\n")
	doc, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/scaling.md has no sidecar policy block")
	}
	doc = "apiVersion: argocd-ocm-plugin.io/v1alpha1\n" + doc
	if _, err := policy.Parse([]byte(doc), "docs/scaling.md"); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, schema(t), []byte(doc)); err != nil {
		t.Errorf("schema: %v", err)
	}
}
