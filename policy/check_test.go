package policy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// A mistyped field is reported at its line with the fields that are known
// there; every structural problem of the file is reported, not the first.
func TestCheckNamesLinesAndKnownFields(t *testing.T) {
	doc := head + `credentials:
- name: c
  host: ghcr.io
  env: C
default:
  repositories: [{host: ghcr.io}]
  requireComponentImages: "true"
rules:
- name: team-a
  projects: [team-a]
  repositorys:
  - host: ghcr.io
  platform: {allowOtherProject: true}
- name: team-b
  projects: team-b
  name: again
`
	_, ps := policy.Check([]byte(doc))
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	want := []string{
		`line 9: default.requireComponentImages: want true or false, got a string`,
		`line 13: unknown field "repositorys" in rules[0] (known: name, projects, repositories, credentials, plainHTTP, localArchives, signatures, chartSignatures, requireComponentImages, platform)`,
		`line 15: unknown field "allowOtherProject" in rules[0].platform (known: allowOtherProjects, allowOtherDestinations)`,
		`line 17: rules[1].projects: want a list, got a string`,
		`line 18: field "name" is repeated in rules[1] (first at line 16)`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Parse says the same on one line (what serve logs at start-up and a
	// generation fails with).
	_, err := policy.Parse([]byte(doc), "policy.yaml")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "sidecar policy policy.yaml: "+want[0]+"; "+want[1]) {
		t.Fatalf("Parse: %v", err)
	}
}

// Validation, past the structure, names the line of what it refuses; a YAML
// syntax error its own line.
func TestCheckValidationLines(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{head + "rules:\n- projects: [a]\n- name: b\n  projects: [b]\n  credentials: [nope]\n", `line 5: rules[1] (b): credential "nope" is not defined under credentials`},
		{head + "default:\n  repositories:\n  - {host: ghcr.io}\n  - {host: 'http://x'}\n", `line 6: default: repositories[1]: host "http://x"`},
		{head + "credentials:\n- {name: c, host: ghcr.io}\n", `line 4: credentials[0] (c): give exactly one of`},
		{"kind: SidecarPolicy\n", "apiVersion argocd-ocm-plugin.io/v1alpha1 and kind SidecarPolicy are required"},
		{head + "rules: [\n", "line 3: did not find expected node content"},
		{head + "rules:\n  - a\n - b\n", "line 4: did not find expected key"},
	} {
		_, ps := policy.Check([]byte(c.doc))
		if len(ps) != 1 || !strings.HasPrefix(ps[0].String(), c.want) {
			t.Errorf("%q: %v, want one problem starting %q", c.doc, ps, c.want)
		}
	}
	many := head + "rules:\n"
	for i := 0; i < 30; i++ {
		many += "- {projects: [a], x: 1}\n"
	}
	_, err := policy.Parse([]byte(many), "p")
	if err == nil || !strings.HasSuffix(err.Error(), "; and 20 more") {
		t.Errorf("30 problems: %v", err)
	}
}

// The fields the decoder knows are the JSON schema's, at every level: the
// "known:" list of an unknown field is the schema's properties there.
func TestKnownFieldsAreTheSchemas(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "schema", "sidecarpolicy-v1alpha1.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	defs := s["$defs"].(map[string]any)
	// resolve follows $ref, items and allOf to the object schema of one
	// element.
	var resolve func(n map[string]any) map[string]any
	resolve = func(n map[string]any) map[string]any {
		if ref, ok := n["$ref"].(string); ok {
			return resolve(defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any))
		}
		if items, ok := n["items"].(map[string]any); ok {
			return resolve(items)
		}
		if all, ok := n["allOf"].([]any); ok && n["properties"] == nil {
			return resolve(all[0].(map[string]any))
		}
		return n
	}
	props := func(n map[string]any) []string {
		var out []string
		for k := range resolve(n)["properties"].(map[string]any) {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	at := func(path ...string) map[string]any {
		n := s
		for _, p := range path {
			n = resolve(n)["properties"].(map[string]any)[p].(map[string]any)
		}
		return n
	}
	for _, c := range []struct {
		doc    string
		schema map[string]any
	}{
		{head + "x: 1\n", s},
		{head + "credentials: [{x: 1}]\n", at("credentials")},
		{head + "mirrors: [{x: 1}]\n", at("mirrors")},
		{head + "mirrors: [{endpoints: [{x: 1}]}]\n", at("mirrors", "endpoints")},
		{head + "rules: [{x: 1}]\n", at("rules")},
		{head + "default: {x: 1}\n", at("default")},
		{head + "default: {repositories: [{x: 1}]}\n", at("default", "repositories")},
		{head + "default: {signatures: [{x: 1}]}\n", at("default", "signatures")},
		{head + "default: {platform: {x: 1}}\n", at("default", "platform")},
	} {
		_, ps := policy.Check([]byte(c.doc))
		if len(ps) != 1 {
			t.Fatalf("%q: %v", c.doc, ps)
		}
		_, list, ok := strings.Cut(ps[0].Message, "(known: ")
		if !ok {
			t.Fatalf("%q: %v", c.doc, ps)
		}
		known := strings.Split(strings.TrimSuffix(list, ")"), ", ")
		sort.Strings(known)
		if want := props(c.schema); !slices.Equal(known, want) {
			t.Errorf("%q: the decoder knows %v, the schema %v", c.doc, known, want)
		}
	}
}

// Aliases that expand a small file into a huge tree cost the walk a bounded
// number of steps (here 4000 rules of 4000 projects: 16 million nodes).
func TestCheckAliasBomb(t *testing.T) {
	doc := head + "default:\n  plainHTTP: &p [" + strings.Repeat("a.io, ", 3999) + "a.io]\n" +
		"rules:\n" + strings.Repeat("- {projects: *p, x: 1}\n", 4000)
	if _, ps := policy.Check([]byte(doc)); len(ps) == 0 {
		t.Fatal("accepted")
	}
}
