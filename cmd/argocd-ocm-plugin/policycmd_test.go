package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mistypedPolicy = `apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
rules:
- projects: [a]
  repositorys: []
`

const mistypedPolicyProblem = `line 5: unknown field "repositorys" in rules[0] (known: name, projects, repositories, credentials, plainHTTP, localArchives, signatures, chartSignatures, requireComponentImages, platform)`

// policy check: a valid file is one summary line on stdout and exit 0; a
// mistake is one line on stderr with its line and the known fields, and
// nothing on stdout.
func TestPolicyCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(bad, []byte(mistypedPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"policy", "check", "../../docs/examples/sidecar-policy.yaml"}, &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("valid: exit %d: %s", code, stderr.String())
	}
	if got := stdout.String(); got != "../../docs/examples/sidecar-policy.yaml: valid: 3 rules, a default rule, 5 credentials, 1 mirrored upstream, 0 allowed addresses\n" || stderr.Len() != 0 {
		t.Errorf("valid: stdout %q, stderr %q", got, stderr.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"policy", "check", bad}, "invalid input: sidecar policy " + bad + ": " + mistypedPolicyProblem},
		{[]string{"policy", "check", filepath.Join(dir, "none.yaml")}, `cannot open it`},
		{[]string{"policy", "check", dir}, `not a regular file`},
		{[]string{"policy", "check"}, `policy check takes one argument, the policy file (got 0)`},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := run(c.args, &stdout, &stderr, env(nil)); code == 0 {
			t.Errorf("%v: exit 0", c.args)
		}
		if msg := stderr.String(); stdout.Len() != 0 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, c.want) {
			t.Errorf("%v: stdout %q, stderr %q; want one line with %q", c.args, stdout.String(), msg, c.want)
		}
	}
}

// serve says at start what is wrong with the policy, at its line.
func TestServeLogsPolicyProblemWithLine(t *testing.T) {
	dir, err := os.MkdirTemp("", "pol")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(file, []byte(mistypedPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := serve(context.Background(), serveOptions{socket: filepath.Join(dir, "r.sock"), command: []string{"/bin/true"}}, &log, env(map[string]string{"ARGOCD_OCM_POLICY": file})); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !strings.Contains(log.String(), "sidecar policy unusable") || !strings.Contains(log.String(), `line 5: unknown field \"repositorys\" in rules[0] (known: name, projects,`) {
		t.Errorf("serve's log lacks the policy problem with its line:\n%s", log.String())
	}
}
