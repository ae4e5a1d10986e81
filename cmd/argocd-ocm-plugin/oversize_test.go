package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// An overlong parameter is refused with one short line that names its
// size: Argo CD stores the line in the Application's status and in Redis.
func TestGenerateCutsOverlongParameters(t *testing.T) {
	repo := inAppDir(t, demoRepo)
	for _, tc := range []struct {
		name, component, version, resource string
		size                               string
	}{
		{"version", "example.com/demo/podinfo", strings.Repeat("a", 90_000), "", "(90000 bytes)"},
		{"constraint", "example.com/demo/podinfo", ">=" + strings.Repeat("1", 89_998), "", "(90000 bytes)"},
		{"component", strings.Repeat("b", 60_000), "1.0.0", "", "(60000 bytes)"},
		{"resource", "example.com/demo/podinfo", "1.0.0", strings.Repeat("r", 90_000), "(90000 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := []map[string]string{{"name": "component", "string": tc.component}, {"name": "version", "string": tc.version}}
			if tc.resource != "" {
				params = append(params, map[string]string{"name": "resource", "string": tc.resource})
			}
			refusedInOneShortLine(t, repo, params, "invalid input", tc.size)
		})
	}
}

// Finding 5 of issue 35: inputs that were quoted in full, each one short
// line now (20 to 940 KB before). Every quoted input goes through
// errdef.Quote, capped at errdef.MaxQuoted bytes (see internal/quoting_test.go).
func TestGenerateCutsOverlongNames(t *testing.T) {
	repo := inAppDir(t, demoRepo)
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	manyKeys := map[string]string{}
	for i := range 1000 {
		manyKeys[long("k", 100)+strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("y", i)] = "1"
	}
	for _, tc := range []struct {
		name   string
		params []map[string]any
		want   string
	}{
		{"parameter named parameters.<60 KB>", []map[string]any{{"name": "parameters." + long("x", 60_000), "string": "1"}}, "instance parameters"},
		{"60 KB key of the parameters map", []map[string]any{{"name": "parameters", "map": map[string]string{long("k", 60_000): "1"}}}, "instance parameters"},
		{"1,000 long keys of the parameters map", []map[string]any{{"name": "parameters", "map": manyKeys}}, "instance parameters"},
		{"definition rgd: and 20 KB", []map[string]any{{"name": "definition", "string": "rgd:" + long("p", 20_000)}}, "(20004 bytes)"},
		{"definition of 20 KB", []map[string]any{{"name": "definition", "string": long("d", 20_000) + ".yaml"}}, "(20005 bytes)"},
		{"value file of 20 KB", []map[string]any{{"name": "value-files", "array": []string{long("v", 20_000) + ".yaml"}}}, "(20005 bytes)"},
		{"unknown parameter of 60 KB", []map[string]any{{"name": long("u", 60_000), "string": "1"}}, "(60000 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedInOneShortLine(t, repo, append(tc.params, map[string]any{"name": "component", "string": "example.com/demo/podinfo"},
				map[string]any{"name": "version", "string": "1.0.0"}), tc.want)
		})
	}
}

// refusedInOneShortLine runs generate for Application shop with params as
// ARGOCD_APP_PARAMETERS and checks the refusal: nothing on stdout, one valid
// UTF-8 line under 1 KiB on stderr that names the Application and holds
// each of want.
func refusedInOneShortLine(t *testing.T, repo string, params any, want ...string) {
	t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"generate"}, &stdout, &stderr, env(map[string]string{
		"ARGOCD_APP_NAME": "shop", "ARGOCD_ENV_REPOSITORY": repo, "ARGOCD_APP_PARAMETERS": string(p)}))
	if code == 0 || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %d bytes: want a failure and nothing on stdout", code, stdout.Len())
	}
	msg := stderr.String()
	if len(msg) > 1024 || strings.Count(msg, "\n") != 1 || !utf8.ValidString(msg) {
		t.Fatalf("stderr is %d bytes, %d lines; want one valid line under 1 KiB: %.300q", len(msg), strings.Count(msg, "\n"), msg)
	}
	for _, w := range append([]string{"application shop"}, want...) {
		if !strings.Contains(msg, w) {
			t.Errorf("stderr %q lacks %q", msg, w)
		}
	}
}
