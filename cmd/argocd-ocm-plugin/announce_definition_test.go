package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
)

// The shop component ships a deployment definition: its instance parameters
// are announced as typed fields with their defaults, and generate reads them
// back from the same names.
func TestDefinitionParametersRoundTrip(t *testing.T) {
	repo := inAppDir(t, configRepo(t))
	var stdout, stderr bytes.Buffer
	e := map[string]string{
		"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_NAMESPACE": "shop",
		"ARGOCD_ENV_REPOSITORY": repo, "ARGOCD_ENV_COMPONENT": examples.Shop, "ARGOCD_ENV_VERSION": "1.0.0",
	}
	if code := run([]string{"parameters"}, &stdout, &stderr, env(e)); code != 0 {
		t.Fatalf("parameters: %s", stderr.String())
	}
	var anns []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &anns); err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, a := range anns {
		byName[a["name"].(string)] = a
	}
	if r := byName["parameters.replicas"]; r == nil || r["itemType"] != "integer" || r["string"] != "2" {
		t.Fatalf("replicas announcement %v", r)
	}
	if tier := byName["parameters.tier"]; tier == nil || tier["string"] != "standard" || !strings.Contains(tier["tooltip"].(string), "premium") {
		t.Fatalf("tier announcement %v", tier)
	}
	if db := byName["parameters.database"]; db == nil || db["collectionType"] != "map" || db["required"] != true ||
		!strings.Contains(db["tooltip"].(string), "never the value") {
		t.Fatalf("secret announcement %v", db)
	}

	stdout.Reset()
	stderr.Reset()
	e["ARGOCD_APP_PARAMETERS"] = `[{"name":"parameters.replicas","string":"4"},
		{"name":"parameters.database","map":{"secretName":"shop-db","key":"password"}},
		{"name":"parameters","map":{"replicas":"9"}}]`
	if code := run([]string{"generate"}, &stdout, &stderr, env(e)); code != 0 {
		t.Fatalf("generate: %s", stderr.String())
	}
	if out := generated(t, stdout.Bytes()); !strings.Contains(out, "replicas: 4") || !strings.Contains(out, "shop-db") {
		t.Fatalf("typed parameters not applied (the field must win over the map):\n%s", out)
	}
}
