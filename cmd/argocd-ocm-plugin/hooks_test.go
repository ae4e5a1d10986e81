package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// exampleCTF writes the components an examples builder makes from
// testdata/src as a CTF.
func exampleCTF(t *testing.T, build func(src string) ([]*ocmbuild.Component, error)) string {
	t.Helper()
	comps, err := build("../../testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, comps...); err != nil {
		t.Fatal(err)
	}
	return dir
}

func hooksRepo(t *testing.T) string { return exampleCTF(t, examples.HooksComponents) }

// The ordering and hooks example through the CLI: waves, hooks and the Jobs
// in the manifests; the sync order in --explain; the same bytes every time.
func TestRenderOrderingAndHooks(t *testing.T) {
	repo := hooksRepo(t)
	args := []string{"render", "--repository", repo, "--component", examples.Hooks, "--version", "1.0.0",
		"--definition", "../../docs/examples/hooks.yaml", "--release-name", "shop", "--namespace", "shop", "--param", "schemaVersion=8"}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"argocd.argoproj.io/sync-wave: \"3\"\n  name: shop-default",
		"argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation\n    argocd.argoproj.io/sync-wave: \"-1\"\n  name: shop-schema",
		"- --to=8",
		"image: " + examples.MirrorRegistry + "/mirror/catalog/api:2.3.0@" + examples.HooksAPIDigest,
		"helm.sh/hook: pre-install,pre-upgrade",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
	var again bytes.Buffer
	if code := run(args, &again, &stderr, env(nil)); code != 0 || again.String() != out {
		t.Errorf("a second render differs (exit %d)", code)
	}

	stdout.Reset()
	if code := run(append(args, "--explain"), &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"sync order (Argo CD: phase, wave, kind, name):", "(default: before every wave)", "jobs:\n  shop-schema: image "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("explain lacks %q:\n%s", want, stdout.String())
		}
	}
}

// A rule that selects nothing fails the render: nothing on stdout, one line
// on stderr naming the rule.
func TestOrderingRuleMatchingNothingFails(t *testing.T) {
	repo := hooksRepo(t)
	def := filepath.Join(t.TempDir(), "def.yaml")
	if err := os.WriteFile(def, []byte("apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1\nkind: ComponentDeployment\nmetadata: {name: t}\nspec:\n  renders:\n  - resource: {name: widgets}\n    ordering: [{target: {kind: Widget, name: typo}, syncWave: 1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"render", "--repository", repo, "--component", examples.Hooks, "--version", "1.0.0", "--definition", def}, &stdout, &stderr, env(nil))
	if code == 0 || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q", code, stdout.String())
	}
	if msg := stderr.String(); !strings.Contains(msg, "spec.renders[0].ordering[0] (render widgets): no object of the render matches Widget typo") || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
		t.Errorf("stderr %q", msg)
	}
}
