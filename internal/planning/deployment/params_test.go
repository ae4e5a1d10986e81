package deployment_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
)

const paramsDef = header + `spec:
  parameters:
    replicas: {type: integer, default: 2, minimum: 1, maximum: 10}
    ratio: {type: number, default: 0.5, maximum: 1}
    debug: {type: boolean, default: false}
    tier: {type: string, enum: [small, large], default: small}
    answer: {type: string, enum: ["yes", "no"], default: "no"}
    host: {type: string, pattern: '^[a-z.]+$', maxLength: 20, default: a.example}
    labels: {type: object, default: {team: shop}, schema: {type: object, additionalProperties: {type: string}}}
    zones: {type: array, default: [a], minLength: 1, maxLength: 3}
    name: {type: string, required: true, minLength: 2}
    db: {secret: true, description: database password Secret}
  renders: [{resource: {name: chart}}]
`

func resolve(t *testing.T, given map[string]string) (map[string]any, error) {
	t.Helper()
	d, err := deployment.Decode("def.yaml", []byte(paramsDef))
	if err != nil {
		t.Fatal(err)
	}
	pvs, err := d.ResolveParameters(given)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, p := range pvs {
		out[p.Name] = p.Value
	}
	return out, nil
}

func TestResolveParameters(t *testing.T) {
	got, err := resolve(t, map[string]string{
		"replicas": "5", "ratio": "1", "debug": "true", "tier": "large", "answer": "yes", "name": "shop",
		"labels": "{team: web, tier: front}", "zones": "[a, b]", "db": `{"secretName": "shop-db", "key": "password"}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"replicas": int64(5), "ratio": 1.0, "debug": true, "tier": "large", "answer": "yes", "host": "a.example", "name": "shop",
		"labels": map[string]any{"team": "web", "tier": "front"}, "zones": []any{"a", "b"},
		"db": map[string]any{"secretName": "shop-db", "key": "password"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
	// Defaults, typed (an integer default stays an integer).
	got, err = resolve(t, map[string]string{"name": "ab"})
	if err != nil {
		t.Fatal(err)
	}
	if got["replicas"] != int64(2) || got["ratio"] != 0.5 || got["answer"] != "no" || got["db"] != nil {
		t.Fatalf("defaults: %#v", got)
	}
}

func TestResolveParameterErrors(t *testing.T) {
	base := map[string]string{"name": "shop"}
	for _, tc := range []struct {
		name     string
		set      map[string]string
		mentions []string
	}{
		{"unknown", map[string]string{"replica": "1"}, []string{"parameter replica", "not declared", "replicas"}},
		{"required", map[string]string{}, []string{"parameter name", "required"}},
		{"not an integer", map[string]string{"replicas": "two"}, []string{"parameter replicas", "want an integer", `"two"`}},
		{"below minimum", map[string]string{"replicas": "0"}, []string{"parameter replicas", "minimum 1"}},
		{"above maximum", map[string]string{"ratio": "1.5"}, []string{"parameter ratio", "maximum 1"}},
		{"not a boolean", map[string]string{"debug": "yes"}, []string{"parameter debug", "true or false"}},
		{"not in enum", map[string]string{"tier": "medium"}, []string{"parameter tier", `"medium" is not one of "small", "large"`}},
		{"pattern", map[string]string{"host": "UPPER"}, []string{"parameter host", "pattern"}},
		{"too long", map[string]string{"host": strings.Repeat("a", 21)}, []string{"parameter host", "longer than 20"}},
		{"too short", map[string]string{"name": "a"}, []string{"parameter name", "shorter than 2"}},
		{"schema", map[string]string{"labels": "{team: 1}"}, []string{"parameter labels", "schema"}},
		{"too many items", map[string]string{"zones": "[a, b, c, d]"}, []string{"parameter zones", "more than 3"}},
		{"object not YAML", map[string]string{"labels": "{a: [}"}, []string{"parameter labels", "not YAML"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := map[string]string{}
			for k, v := range base {
				set[k] = v
			}
			for k, v := range tc.set {
				set[k] = v
			}
			if tc.name == "required" {
				delete(set, "name")
			}
			_, err := resolve(t, set)
			if !errors.Is(err, errdef.ErrInvalidInput) {
				t.Fatalf("got %v", err)
			}
			for _, m := range append(tc.mentions, "def.yaml") {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%q lacks %q", err, m)
				}
			}
		})
	}
}

// A secret parameter takes only a reference; the literal never appears in the error.
func TestSecretParameterRefusesLiterals(t *testing.T) {
	const secret = "hunter2-Sup3rS3cret"
	for _, v := range []string{
		secret,
		`{password: ` + secret + `}`,
		`{secretName: db, key: password, value: ` + secret + `}`,
		`{secretName: ` + secret + `, key: password}`, // not a valid Secret name (upper case)
		`{secretName: db}`,
		`[` + secret + `]`,
		`{` + secret,
	} {
		_, err := resolve(t, map[string]string{"name": "shop", "db": v})
		if err == nil {
			t.Fatalf("%q accepted", v)
		}
		msg := err.Error()
		if strings.Contains(msg, secret) || strings.Contains(msg, "Sup3r") {
			t.Errorf("the error echoes the secret: %s", msg)
		}
		for _, m := range []string{"parameter db", "secret", "secretName", "plain text"} {
			if !strings.Contains(msg, m) {
				t.Errorf("%q lacks %q", msg, m)
			}
		}
	}
}

// A pattern of 100-200 KB that does not compile, or that a value does not
// match, is quoted capped: the error line was 940 KB (regexp's error
// repeats the expression; the mismatch printed the pattern in full).
func TestOverlongPatternIsQuotedCapped(t *testing.T) {
	long := strings.Repeat("(a", 50_000)
	def := header + "spec:\n  parameters:\n    p: {type: string, pattern: '" + long + "'}\n  renders: [{resource: {name: chart}}]\n"
	_, err := deployment.Decode("def.yaml", []byte(def))
	if err == nil || len(err.Error()) > 1024 || !strings.Contains(err.Error(), "missing closing )") {
		t.Fatalf("uncompilable pattern: %d bytes: %.300v", len(errText(err)), err)
	}
	ok := header + "spec:\n  parameters:\n    p: {type: string, pattern: '^" + strings.Repeat("a", 200_000) + "$'}\n  renders: [{resource: {name: chart}}]\n"
	d, err := deployment.Decode("def.yaml", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.ResolveParameters(map[string]string{"p": "b"})
	if err == nil || len(err.Error()) > 1024 || !strings.Contains(err.Error(), "does not match the pattern") {
		t.Fatalf("mismatch: %d bytes: %.300v", len(errText(err)), err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
