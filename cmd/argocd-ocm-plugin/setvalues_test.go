package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's schema error (--set image.tag=5 is a number, the catalog
// chart's schema wants a string) is fixed with --set-string, as in Helm.
func TestSetStringFixesTheREADMESchemaError(t *testing.T) {
	base := []string{"render", "--repository", demoRepo, "--component", "example.com/demo/catalog", "--version", "2.3.0"}
	var stdout, stderr bytes.Buffer
	if code := run(append(base, "--set", "image.tag=5"), &stdout, &stderr, env(nil)); code == 0 || stdout.Len() != 0 {
		t.Fatalf("--set image.tag=5: exit %d, stdout %q", code, stdout.String())
	}
	if !strings.Contains(stderr.String(), "at '/image/tag': got number, want string") {
		t.Fatalf("stderr %q lacks the README's schema error", stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(append(base, "--set", "image.tag=5", "--set-string", "image.tag=5"), &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("--set-string image.tag=5: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "image: registry.example.com/catalog/api:5") {
		t.Fatalf("--set-string did not set the tag:\n%s", stdout.String())
	}
}

// --set-file and --set-json reach the chart; --explain names the flag that set
// each value.
func TestSetFileAndSetJSON(t *testing.T) {
	dir := t.TempDir()
	tag := filepath.Join(dir, "tag.txt")
	if err := os.WriteFile(tag, []byte("from-file"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"render", "--repository", demoRepo, "--component", "example.com/demo/catalog", "--version", "2.3.0",
		"--set-json", `image={"repository":"mirror.local/api","tag":"json"}`, "--set-file", "image.tag=" + tag}
	var stdout, stderr bytes.Buffer
	if code := run(base, &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "image: mirror.local/api:from-file") {
		t.Fatalf("--set-json/--set-file not applied:\n%s", stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(append(base, "--explain"), &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("explain: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"--set-file image.tag=" + tag, `--set-json image={"repository":"mirror.local/api"`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("explain lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(append(base[:len(base)-1], "image.tag="+filepath.Join(dir, "none")), &stdout, &stderr, env(nil)); code == 0 || stdout.Len() != 0 {
		t.Fatalf("missing --set-file: exit %d, stdout %q", code, stdout.String())
	}
	if msg := stderr.String(); !strings.Contains(msg, "--set-file") || !strings.Contains(msg, "no such file") || strings.Count(msg, "\n") != 1 {
		t.Fatalf("missing --set-file: stderr %q", msg)
	}
}
