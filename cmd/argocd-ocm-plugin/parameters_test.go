package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestParametersCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"parameters"}, &stdout, &stderr, env(map[string]string{
		"ARGOCD_APP_NAME": "shop", "ARGOCD_ENV_REPOSITORY": inAppDir(t, demoRepo),
		"ARGOCD_APP_PARAMETERS": `[{"name":"component","string":"example.com/demo/podinfo"},{"name":"version","string":"1.0.0"}]`,
	}))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, stdout.String())
	}
	defaults := map[string]any{}
	for _, p := range got {
		defaults[p["name"].(string)] = p["string"]
	}
	if defaults["resource"] != "chart" || defaults["resolved-version"] != "1.0.0" {
		t.Errorf("defaults %v", defaults)
	}
}

func TestParametersCommandFailure(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"parameters"}, &stdout, &stderr, env(map[string]string{
		"ARGOCD_APP_NAME": "shop", "ARGOCD_ENV_REPOSITORY": inAppDir(t, demoRepo),
		"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "2.0.0",
	}))
	if code == 0 || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q", code, stdout.String())
	}
	msg := stderr.String()
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "application shop") || !strings.Contains(msg, "example.com/demo/podinfo:2.0.0") {
		t.Errorf("stderr %q", msg)
	}
}
