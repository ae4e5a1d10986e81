package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
			if len(msg) > 1024 || strings.Count(msg, "\n") != 1 {
				t.Fatalf("stderr is %d bytes, %d lines; want one line under 1 KiB: %.300q", len(msg), strings.Count(msg, "\n"), msg)
			}
			for _, want := range []string{"application shop", "invalid input", tc.size} {
				if !strings.Contains(msg, want) {
					t.Errorf("stderr %q lacks %q", msg, want)
				}
			}
		})
	}
}
