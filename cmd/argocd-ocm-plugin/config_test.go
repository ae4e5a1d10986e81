package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// configRepo writes the configuration example components (package deployment's
// use cases) as a CTF.
func configRepo(t *testing.T) string {
	t.Helper()
	comps, err := examples.ConfigDemo(fixtures.Dir(t), "../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, comps...); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRenderWithDefinitionParametersAndLocalize(t *testing.T) {
	repo := configRepo(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"render", "--repository", repo, "--component", examples.PodinfoConfigured, "--version", "1.0.0",
		"--definition", "../../docs/examples/podinfo-helm.yaml", "--param", "replicas=3", "--param", "message=hi there",
		"--release-name", "demo", "--namespace", "demo"}, &stdout, &stderr, env(nil))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"replicas: 3", "value: hi there", "image: " + examples.MirrorRegistry + "/mirror/stefanprodan/podinfo:6.7.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// --localize without a definition: the localization-hint label and the rewrite.
	stdout.Reset()
	code = run([]string{"render", "--repository", repo, "--component", examples.PodinfoConfigured, "--version", "1.0.0", "--localize"},
		&stdout, &stderr, env(nil))
	if code != 0 || !strings.Contains(stdout.String(), examples.MirrorRegistry) {
		t.Fatalf("exit %d, stdout %s, stderr %s", code, stdout.String(), stderr.String())
	}
}

// --explain prints the report instead of the manifests.
func TestRenderExplain(t *testing.T) {
	repo := configRepo(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"render", "--explain", "--repository", repo, "--component", examples.Shop, "--version", "1.0.0",
		"--param", "database={secretName: shop-db, key: password}", "--set", "replicaCount=7"}, &stdout, &stderr, env(nil))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"component: example.com/config/shop:1.0.0", "replicaCount = 7\n      <- instance: --set replicaCount=7",
		"overrides definition: spec.renders[0].values.replicaCount", "automatic localization:"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "apiVersion:") {
		t.Errorf("explain printed manifests:\n%s", out)
	}
	if want := "Kubernetes version " + helm.DefaultKubeVersion() + " (default: the plugin's Kubernetes libraries"; !strings.Contains(out, want) || strings.Contains(out, "v1.20.0") {
		t.Errorf("explain lacks %q:\n%s", want, out)
	}
	stdout.Reset()
	if code := run([]string{"render", "--explain", "--repository", repo, "--component", examples.Shop, "--version", "1.0.0",
		"--param", "database={secretName: shop-db, key: password}", "--kube-version", "1.31.2"}, &stdout, &stderr, env(nil)); code != 0 ||
		!strings.Contains(stdout.String(), "Kubernetes version 1.31.2 (--kube-version)") {
		t.Errorf("exit %d, explain with --kube-version:\n%s", code, stdout.String())
	}
}

// Configuration failures: non-zero exit, nothing on stdout, one line on
// stderr naming what failed; a secret is never echoed.
func TestConfigFailuresPrintNothingOnStdout(t *testing.T) {
	repo := configRepo(t)
	dir := t.TempDir()
	def := func(name, values string) string {
		p := filepath.Join(dir, name)
		body := "apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1\nkind: ComponentDeployment\nmetadata: {name: t}\n" +
			"spec:\n  parameters: {\"n\": {type: integer, default: 1}}\n  renders:\n  - resource: {name: chart}\n    values: " + values + "\n"
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := []string{"render", "--repository", repo, "--component", examples.PodinfoConfigured, "--version", "1.0.0"}
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		mentions []string
	}{
		{"CEL syntax", append(base, "--definition", def("syntax.yaml", "{replicaCount: '${parameters.n +}'}")), nil,
			[]string{"syntax.yaml", "spec.renders[0].values.replicaCount", "${parameters.n +}", "column"}},
		{"CEL unknown parameter", append(base, "--definition", def("unknown.yaml", "{replicaCount: '${parameters.m}'}")), nil,
			[]string{"unknown.yaml", `unknown parameter "m"`}},
		{"CEL wrong type", append(base, "--definition", def("type.yaml", "{replicaCount: '${parameters.n + \"x\"}'}")), nil,
			[]string{"type.yaml", "spec.renders[0].values.replicaCount", "no such overload"}},
		{"CEL cost limit", append(base, "--definition", def("cost.yaml", "{a: '${lists.range(50000).map(x, lists.range(50000).map(y, x + y))}'}")), nil,
			[]string{"cost.yaml", "spec.renders[0].values.a", "limit exceeded"}},
		{"unknown field", append(base, "--definition", def("field.yaml", "{}\n    valuez: {}")), nil,
			[]string{"field.yaml", "spec.renders[0].valuez", "unknown field"}},
		{"bad parameter value", append(base, "--definition", def("param.yaml", "{}"), "--param", "n=three"), nil,
			[]string{"parameter n", "want an integer"}},
		{"malformed --param", append(base, "--param", "novalue"), nil, []string{`--param "novalue" is not name=value`}},
		{"secret literal", []string{"render", "--repository", repo, "--component", examples.Shop, "--version", "1.0.0",
			"--param", "database=correct-horse-battery"}, nil, []string{"parameter database", "secret", "plain text"}},
		{"generate secret literal", []string{"generate"}, map[string]string{
			"ARGOCD_APP_NAME": "shop", "ARGOCD_ENV_REPOSITORY": inAppDir(t, repo), "ARGOCD_ENV_COMPONENT": examples.Shop, "ARGOCD_ENV_VERSION": "1.0.0",
			"ARGOCD_APP_PARAMETERS": `[{"name":"parameters","map":{"database":"correct-horse-battery"}}]`},
			[]string{"application shop", "parameter database", "secret"}},
		{"generate definition outside the app", []string{"generate"}, map[string]string{
			"ARGOCD_APP_NAME": "shop", "ARGOCD_ENV_REPOSITORY": inAppDir(t, repo), "ARGOCD_ENV_COMPONENT": examples.Shop, "ARGOCD_ENV_VERSION": "1.0.0",
			"ARGOCD_APP_PARAMETERS": `[{"name":"definition","string":"../other-app/def.yaml"}]`},
			[]string{"application shop", `definition "../other-app/def.yaml": not a file or directory inside the Application's directory`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr, env(tc.env))
			if code == 0 {
				t.Fatal("exit 0")
			}
			if stdout.Len() != 0 {
				t.Fatalf("stdout not empty: %q", stdout.String())
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", msg)
			}
			if strings.Contains(msg, "correct-horse") {
				t.Errorf("stderr echoes the secret: %q", msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("stderr %q lacks %q", msg, m)
				}
			}
		})
	}
}

// generate: instance parameters come from the Application's "parameters"
// map, the definition from the component.
func TestGenerateWithInstanceParameters(t *testing.T) {
	repo := inAppDir(t, configRepo(t))
	var stdout, stderr bytes.Buffer
	code := run([]string{"generate"}, &stdout, &stderr, env(map[string]string{
		"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_NAMESPACE": "prod", "ARGOCD_ENV_REPOSITORY": repo,
		"ARGOCD_ENV_COMPONENT": examples.Shop, "ARGOCD_ENV_VERSION": "1.0.0",
		"ARGOCD_APP_PARAMETERS": `[{"name":"parameters","map":{"database":"{secretName: shop-db, key: pw}","replicas":"5"}}]`,
	}))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := generated(t, stdout.Bytes())
	for _, want := range []string{"replicas: 5", "name: shop-db", "key: pw", "name: shop-api"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
