package policy_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	p := filepath.Join(repoRoot(t), "docs", "schema", "sidecarpolicy-v1alpha1.schema.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("policy.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("policy.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, y []byte) error {
	t.Helper()
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// examples are every policy the repository ships: the docs example and the
// one in the ConfigMap of manifests/examples.
func examples(t *testing.T) map[string][]byte {
	root := repoRoot(t)
	out := map[string][]byte{}
	b, err := os.ReadFile(filepath.Join(root, "docs", "examples", "sidecar-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out["docs/examples/sidecar-policy.yaml"] = b
	cmb, err := os.ReadFile(filepath.Join(root, "manifests", "examples", "sidecar-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Kind string            `json:"kind"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(cmb, &cm); err != nil || cm.Kind != "ConfigMap" || cm.Data["policy.yaml"] == "" {
		t.Fatalf("manifests/examples/sidecar-policy.yaml: want a ConfigMap with data policy.yaml (%v)", err)
	}
	out["manifests/examples/sidecar-policy.yaml"] = []byte(cm.Data["policy.yaml"])
	return out
}

func TestExamplesParseAndMatchTheSchema(t *testing.T) {
	s := schema(t)
	for name, b := range examples(t) {
		if _, err := policy.Parse(b, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := validate(t, s, b); err != nil {
			t.Errorf("%s: schema: %v", name, err)
		}
	}
}

const head = "apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\n"

// TestStrictParse: every malformed policy is refused by Parse, and by the
// schema, so that the schema says what the code enforces.
func TestStrictParse(t *testing.T) {
	s := schema(t)
	cases := map[string]struct {
		doc, want    string
		schemaAgrees bool
	}{
		"unknown top-level field": {head + "rule: []\n", "unknown field", true},
		"unknown rule field":      {head + "rules:\n- projects: [a]\n  repositorys: []\n", "unknown field", true},
		"unknown default field":   {head + "default:\n  allowAll: true\n", "unknown field", true},
		"wrong kind":              {"apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: Policy\n", "kind SidecarPolicy", true},
		"no apiVersion":           {"kind: SidecarPolicy\n", "apiVersion", true},
		"duplicate key":           {head + "kind: SidecarPolicy\n", "", false},
		"rule without projects":   {head + "rules:\n- name: a\n", "projects is required", true},
		"bad project glob":        {head + "rules:\n- projects: ['[a']\n", "not a glob", false},
		"projects in default":     {head + "default:\n  projects: [a]\n", "no meaning", true},
		"undefined credential":    {head + "rules:\n- projects: [a]\n  credentials: [nope]\n", "not defined", false},
		"credential pattern host": {head + "credentials:\n- {name: c, host: '*.io', env: C}\n", "exact host", true},
		"credential with scheme":  {head + "credentials:\n- {name: c, host: 'https://ghcr.io', env: C}\n", "exact host", true},
		"credential two sources":  {head + "credentials:\n- {name: c, host: ghcr.io, env: C, tokenFile: /t}\n", "exactly one", true},
		"credential no source":    {head + "credentials:\n- {name: c, host: ghcr.io}\n", "exactly one", true},
		"credential twice":        {head + "credentials:\n- {name: c, host: ghcr.io, env: C}\n- {name: c, host: quay.io, env: D}\n", "twice", false},
		"credential lower env":    {head + "credentials:\n- {name: c, host: ghcr.io, env: c}\n", "upper-case", true},
		"credential dotdot":       {head + "credentials:\n- {name: c, host: ghcr.io, pathPrefix: a/../b, env: C}\n", "segment", true},
		"repository with scheme":  {head + "default:\n  repositories: [{host: 'http://ghcr.io'}]\n", "without scheme", true},
		"repository with path":    {head + "default:\n  repositories: [{host: 'ghcr.io/acme'}]\n", "without scheme", true},
		"repository dotdot":       {head + "default:\n  repositories: [{host: ghcr.io, pathPrefix: acme/..}]\n", "segment", true},
		"plainHTTP pattern":       {head + "default:\n  plainHTTP: ['*']\n", "exact host", true},
		"signature without key":   {head + "default:\n  signatures: [{name: acme}]\n", "publicKey, rootCA or trustedRoot is required", true},
		"signature without name":  {head + "default:\n  signatures: [{rootCA: /ca.crt}]\n", "name is required", true},
		"signature empty rootCA":  {head + "default:\n  signatures: [{name: acme, rootCA: ''}]\n", "publicKey, rootCA or trustedRoot is required", true},
		"keyless without issuer":  {head + "default:\n  signatures: [{name: acme, trustedRoot: /r.json, certificateIdentity: a@example.com}]\n", "an OIDC issuer", true},
		"keyless without root":    {head + "default:\n  signatures: [{name: acme, publicKey: /k.pem, certificateIdentity: a@example.com}]\n", "need a trustedRoot", true},
		"keyless bad regexp":      {head + "default:\n  signatures: [{name: acme, trustedRoot: /r.json, certificateIdentityRegexp: '(', certificateOIDCIssuer: https://i}]\n", "certificate identity regexp", false},
		"signature unknown field": {head + "default:\n  signatures: [{name: acme, caFile: /ca.crt}]\n", "unknown field", true},
		"string for bool":         {head + "default:\n  requireComponentImages: 'yes'\n", "", true},
		"unknown platform switch": {head + "default:\n  platform: {allowAnything: true}\n", "unknown field", true},
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
}

const multi = head + `
credentials:
- {name: a, host: ghcr.io, pathPrefix: acme/team-a, env: A}
- {name: shared, host: ghcr.io, pathPrefix: acme/shared, env: SHARED}
rules:
- name: team-a-prod
  projects: [team-a-prod]
  repositories: [{host: ghcr.io, pathPrefix: acme/team-a/prod}]
- name: team-a
  projects: ["team-a", "team-a-*"]
  repositories:
  - {host: ghcr.io, pathPrefix: acme/team-a}
  - {host: ghcr.io, pathPrefix: acme/shared}
  - {host: "*.charts.example", pathPrefix: "teams/*/stable"}
  credentials: [a, shared]
  plainHTTP: ["registry.local:5000"]
  requireComponentImages: true
  platform: {allowOtherProjects: true}
  signatures: [{name: acme, publicKey: /keys/acme.pem}]
- name: shadowed
  projects: [team-a]
  repositories: [{host: "*"}]
default:
  repositories: [{host: public.example, pathPrefix: open}]
  localArchives: false
`

// A signature may name a root CA instead of, or beside, a public key.
func TestSignatureRootCA(t *testing.T) {
	doc := head + `default:
  signatures:
  - {name: pem, rootCA: /keys/ca.crt}
  - {name: both, publicKey: /keys/k.pem, rootCA: /keys/ca.crt}
  - {name: gpg, publicKey: /keys/gpg.pub.asc}
`
	p, err := policy.Parse([]byte(doc), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(t, schema(t), []byte(doc)); err != nil {
		t.Errorf("schema: %v", err)
	}
	names, keys, roots := p.Rule("").SignatureFlags()
	if strings.Join(names, ",") != "pem,both,gpg" || strings.Join(keys, ",") != ",/keys/k.pem,/keys/gpg.pub.asc" || strings.Join(roots, ",") != "/keys/ca.crt,/keys/ca.crt," {
		t.Errorf("flags %q %q %q", names, keys, roots)
	}
}

func TestRuleByProject(t *testing.T) {
	p, err := policy.Parse([]byte(multi), "multi")
	if err != nil {
		t.Fatal(err)
	}
	for project, want := range map[string]string{
		"team-a":      "team-a",
		"team-a-dev":  "team-a",
		"team-a-prod": "team-a-prod", // listed first: first match wins
		"team-ab":     "default",     // "team-a-*" needs the dash
		"TEAM-A":      "default",     // project names are case-sensitive
		"":            "default",     // Argo CD before 3.0 passes no project
		"team-b":      "default",
	} {
		if got := p.Rule(project).Name; got != want {
			t.Errorf("project %q: rule %q, want %q", project, got, want)
		}
	}
	r := p.Rule("team-a")
	if !r.RequireComponentImages || !r.Platform.AllowOtherProjects || r.Platform.AllowOtherDestinations || !r.LocalArchives || !r.StrictPlainHTTP {
		t.Errorf("switches of team-a: %+v", r)
	}
	if names, keys, roots := r.SignatureFlags(); len(names) != 1 || names[0] != "acme" || keys[0] != "/keys/acme.pem" || len(roots) != 1 || roots[0] != "" {
		t.Errorf("signatures %v %v %v", names, keys, roots)
	}
	if len(r.Credentials) != 2 || r.Credentials[0].Name != "a" {
		t.Errorf("credentials %+v", r.Credentials)
	}
	if d := p.Rule("other"); d.LocalArchives || d.RequireComponentImages || d.Platform.AllowOtherProjects {
		t.Errorf("default switches %+v", d)
	}
	if err := p.Rule("other").AllowLocalArchive(); !errors.Is(err, errdef.ErrForbidden) {
		t.Errorf("local archive in default: %v", err)
	}
	// No default rule: nothing allowed.
	p2, err := policy.Parse([]byte(head+"rules:\n- projects: [a]\n  repositories: [{host: '*'}]\n"), "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Rule("b").AllowRepository("ghcr.io", "x"); !errors.Is(err, errdef.ErrForbidden) {
		t.Errorf("no default rule allowed %v", err)
	}
	if err := p2.Rule("a").AllowRepository("ghcr.io", "x"); err != nil {
		t.Errorf("a: %v", err)
	}
}

// TestAllowRepository is the hostile table of repository names.
func TestAllowRepository(t *testing.T) {
	p, err := policy.Parse([]byte(multi), "multi")
	if err != nil {
		t.Fatal(err)
	}
	r := p.Rule("team-a")
	for _, c := range []struct {
		host, path string
		ok         bool
	}{
		{"ghcr.io", "acme/team-a", true},
		{"ghcr.io", "acme/team-a/component-descriptors/acme.org/app", true},
		{"GHCR.IO", "acme/team-a/x", true}, // DNS names are case-insensitive
		{"ghcr.io:443", "acme/team-a/x", true},
		{"ghcr.io", "/acme/team-a/x/", true},
		{"ghcr.io", "acme/shared/lib", true},
		{"ghcr.io", "acme/team-ab", false}, // whole segments
		{"ghcr.io", "acme/team-b/x", false},
		{"ghcr.io", "acme", false},
		{"ghcr.io", "", false},
		{"ghcr.io", "acme/team-a/../team-b", false},
		{"ghcr.io", "acme/team-a/./x", false},
		{"ghcr.io", "acme/team-a//x", false},
		{"ghcr.io:5000", "acme/team-a/x", false}, // another port is another host
		{"ghcr.io.evil.example", "acme/team-a", false},
		{"evil-ghcr.io", "acme/team-a", false},
		{"ghcr_io", "acme/team-a", false},
		{"ghcr\u2024io", "acme/team-a", false}, // one dot leader
		{"127.0.0.1:22", "x", false},
		{"eu.charts.example", "teams/a/stable/index.yaml", true},
		{"eu.charts.example", "teams/a/b/stable", false},
		{"charts.example", "teams/a/stable", false},
	} {
		err := r.AllowRepository(c.host, c.path)
		if c.ok != (err == nil) {
			t.Errorf("%s / %s: %v, want allowed=%v", c.host, c.path, err, c.ok)
		}
		if err != nil && !errors.Is(err, errdef.ErrForbidden) {
			t.Errorf("%s / %s: %v is not ErrForbidden", c.host, c.path, err)
		}
	}
	// The refusal quotes the input capped, and names the project.
	err = r.AllowRepository("ghcr.io", strings.Repeat("a/", 2000))
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), `project "team-a"`) {
		t.Errorf("long input: %d bytes: %.300v", len(err.Error()), err)
	}
}

func TestFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	os.WriteFile(file, []byte(multi), 0o600)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	r, err := policy.FromEnvironment(env(map[string]string{policy.EnvPolicy: file, policy.EnvProject: "team-a-dev"}))
	if err != nil || r.Name != "team-a" || !strings.Contains(r.Source, file) {
		t.Fatalf("%+v %v", r, err)
	}
	for _, v := range []string{policy.EnvPlainHTTP, policy.EnvSignature, policy.EnvPublicKey} {
		_, err := policy.FromEnvironment(env(map[string]string{policy.EnvPolicy: file, v: "x"}))
		if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), v) {
			t.Errorf("%s with a policy: %v", v, err)
		}
	}
	if _, err := policy.FromEnvironment(env(map[string]string{policy.EnvPolicy: filepath.Join(dir, "missing.yaml")})); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("missing policy file must fail closed: %v", err)
	}
	// Without a policy: today's variables as the default rule.
	r, err = policy.FromEnvironment(env(map[string]string{policy.EnvPlainHTTP: "a:5000, b", policy.EnvSignature: "x,y", policy.EnvPublicKey: "/k"}))
	if err != nil || !r.AllowsAnyRepository() || !r.DefaultCredentials || r.StrictPlainHTTP || strings.Join(r.PlainHTTP, ",") != "a:5000,b" {
		t.Fatalf("legacy %+v %v", r, err)
	}
	if names, keys, roots := r.SignatureFlags(); strings.Join(names, ",") != "x,y" || strings.Join(keys, ",") != "/k" || roots != nil {
		t.Errorf("legacy signatures %v %v %v", names, keys, roots)
	}
	if err := r.AllowRepository("127.0.0.1:22", "x"); err != nil {
		t.Errorf("legacy refuses %v", err)
	}
}
