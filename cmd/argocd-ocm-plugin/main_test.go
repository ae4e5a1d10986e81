package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
)

// demoRepo is absolute: tests of generate run in an Application's directory.
var demoRepo = mustAbs("../../testdata/demo/ctf")

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return abs
}

// inAppDir runs the rest of the test in the directory that holds repo, as
// argocd-cmp-server runs generate in the Application's directory, and returns
// the name the Application gives repo there: generate reads nothing outside.
func inAppDir(t *testing.T, repo string) string {
	t.Helper()
	abs := mustAbs(repo)
	t.Chdir(filepath.Dir(abs))
	return filepath.Base(abs)
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// generated checks that generate printed a stream of JSON documents ("---"
// and one JSON object per line) and returns it as YAML, for assertions that
// read like the manifests.
func generated(t *testing.T, out []byte) string {
	t.Helper()
	y, err := generatedYAML(out)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

func generatedYAML(out []byte) (string, error) {
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) < 2 || len(lines)%2 != 0 {
		return "", fmt.Errorf("generate output is not ---/JSON line pairs:\n%s", out)
	}
	for i := 0; i < len(lines); i += 2 {
		if lines[i] != "---" || !json.Valid([]byte(lines[i+1])) || !strings.HasPrefix(lines[i+1], "{") {
			return "", fmt.Errorf("generate output line %d is not a JSON document: %q", i+2, lines[i+1])
		}
	}
	objs, err := manifests.Decode("generate output", out)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := manifests.Encode(&buf, objs); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func TestRenderPrintsManifests(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"render", "--repository", demoRepo, "--component", "example.com/demo/podinfo", "--version", "1.0.0",
		"--release-name", "demo", "--namespace", "demo", "--set", "replicaCount=3", "--api-versions", "a/v1, b/v2"}, &stdout, &stderr, env(nil))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"kind: Deployment", "name: demo-podinfo", "replicas: 3", "kind: Service"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Count(out, "\n---\n")+1 != 4 || !strings.HasPrefix(out, "---\n") {
		t.Errorf("want a 4-document stream:\n%s", out)
	}
}

// render -o json prints what generate prints; the objects equal the YAML's.
func TestRenderJSONOutput(t *testing.T) {
	args := []string{"render", "--repository", demoRepo, "--component", "example.com/demo/podinfo", "--version", "1.0.0", "--release-name", "demo"}
	var yamlOut, jsonOut, stderr bytes.Buffer
	if code := run(args, &yamlOut, &stderr, env(nil)); code != 0 {
		t.Fatal(stderr.String())
	}
	if code := run(append(args, "-o", "json"), &jsonOut, &stderr, env(nil)); code != 0 {
		t.Fatal(stderr.String())
	}
	if got := generated(t, jsonOut.Bytes()); got != yamlOut.String() {
		t.Fatalf("JSON output decodes to other objects:\n%s\nwant\n%s", got, yamlOut.String())
	}
}

// Every failure: non-zero exit, nothing on stdout, one line on stderr naming what failed.
func TestFailuresPrintNothingOnStdout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		mentions []string
	}{
		{"unknown version", []string{"render", "--repository", demoRepo, "--component", "example.com/demo/podinfo", "--version", "9.9.9"}, nil,
			[]string{"example.com/demo/podinfo:9.9.9", "available: 1.0.0"}},
		{"unknown flag", []string{"render", "--bogus"}, nil, []string{"unknown flag: --bogus"}},
		{"positional argument", []string{"render", "extra"}, nil, []string{`unexpected argument "extra"`}},
		{"missing inputs", []string{"render"}, nil, []string{"missing repository, component, version"}},
		{"bad set", []string{"render", "--repository", demoRepo, "--component", "example.com/demo/podinfo", "--version", "1.0.0", "--set", "a[x]=b"}, nil,
			[]string{"--set a[x]=b"}},
		{"helm failure", []string{"render", "--repository", demoRepo, "--component", "example.com/demo/catalog", "--version", "2.3.0", "--set", "image.tag=null"}, nil,
			[]string{"example.com/demo/catalog:2.3.0", "resource chart", "tag"}},
		{"generate unknown version", []string{"generate"}, map[string]string{
			"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_NAMESPACE": "shop", "ARGOCD_ENV_REPOSITORY": inAppDir(t, demoRepo),
			"ARGOCD_APP_PARAMETERS": `[{"name":"component","string":"example.com/demo/podinfo"},{"name":"version","string":"2.0.0"}]`},
			[]string{"application shop", "example.com/demo/podinfo:2.0.0", "available: 1.0.0"}},
		{"generate bad parameters", []string{"generate"}, map[string]string{"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_PARAMETERS": `{not json`},
			[]string{"application shop", "ARGOCD_APP_PARAMETERS"}},
		{"generate bad values", []string{"generate"}, map[string]string{"ARGOCD_APP_NAME": "shop", "ARGOCD_ENV_VALUES": "a: [1"},
			[]string{"application shop", "values"}},
		{"unknown command", []string{"deploy"}, nil, []string{"unknown command"}},
		{"unknown output format", []string{"render", "--repository", demoRepo, "--component", "example.com/demo/podinfo", "--version", "1.0.0", "-o", "xml"}, nil,
			[]string{`--output "xml": want yaml or json`}},
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
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "argocd-ocm-plugin: ") {
				t.Errorf("stderr is not one line: %q", msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("stderr %q lacks %q", msg, m)
				}
			}
		})
	}
}

func TestGenerateFromArgoCDEnvironment(t *testing.T) {
	var stdout, stderr bytes.Buffer
	e := env(map[string]string{
		"ARGOCD_APP_NAME":       "shop",
		"ARGOCD_APP_NAMESPACE":  "shop-ns",
		"KUBE_VERSION":          "1.29.3",
		"KUBE_API_VERSIONS":     "v1,apps/v1,monitoring.coreos.com/v1",
		"ARGOCD_ENV_REPOSITORY": inAppDir(t, demoRepo),
		"ARGOCD_ENV_COMPONENT":  "example.com/demo/ignored-because-the-parameter-wins",
		// unprefixed names must not be read from the Application
		"COMPONENT": "example.com/demo/wrong",
		"ARGOCD_APP_PARAMETERS": `[{"name":"component","string":"example.com/demo/catalog"},{"name":"version","string":"2.3.0"},
			{"name":"values","string":"cache: {enabled: false}"}]`,
	})
	if code := run([]string{"generate"}, &stdout, &stderr, e); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := generated(t, stdout.Bytes())
	for _, want := range []string{"name: shop-catalog", "namespace: shop-ns", "--kube=v1.29.3", "METRICS"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "StatefulSet") {
		t.Errorf("values parameter not applied (cache disabled):\n%s", out)
	}
}

// Help is covered by TestHelpAndCompletionOnStdout (cli_test.go).
func TestVersionOnStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version"}, &stdout, &stderr, env(nil)); code != 0 || !strings.HasPrefix(stdout.String(), "argocd-ocm-plugin ") {
		t.Fatalf("version: %d %q", code, stdout.String())
	}
}

func TestVerifyAndSignedRender(t *testing.T) {
	// Absolute: generate runs in the Application's directory (inAppDir).
	fx := mustAbs(fixtures.Dir(t)) + "/"
	key := fx + "keys/key.pub"
	var stdout, stderr bytes.Buffer
	code := run([]string{"verify", "--repository", fx + "ctf-signed.tgz", "--component", "example.com/fixtures/signed-bundle", "--version", "1.0.0",
		"--signature", "mysig", "--public-key", key}, &stdout, &stderr, env(nil))
	if code != 0 || !strings.Contains(stdout.String(), "verified reference example.com/fixtures/signed-bundle:1.0.0 -> example.com/fixtures/signed-app:1.0.0") {
		t.Fatalf("verify: %d %q %q", code, stdout.String(), stderr.String())
	}

	stdout.Reset()
	stderr.Reset()
	code = run([]string{"verify", "--repository", fx + "ctf-signed", "--component", "example.com/fixtures/signed-app", "--version", "1.0.0",
		"--signature", "othersig", "--public-key", key}, &stdout, &stderr, env(nil))
	if code == 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "mysig") {
		t.Fatalf("missing signature: %d %q %q", code, stdout.String(), stderr.String())
	}

	// generate: the policy comes from the sidecar's unprefixed environment.
	stdout.Reset()
	stderr.Reset()
	e := env(map[string]string{
		"ARGOCD_APP_NAME": "signed", "ARGOCD_ENV_REPOSITORY": inAppDir(t, fx+"ctf-signed"), "ARGOCD_ENV_COMPONENT": "example.com/fixtures/signed-app",
		"ARGOCD_ENV_VERSION": "1.0.0", "ARGOCD_ENV_RESOURCE": "chart",
		"ARGOCD_OCM_SIGNATURE": "mysig", "ARGOCD_OCM_PUBLIC_KEY": key, "ARGOCD_OCM_PROVENANCE": "true",
	})
	if code := run([]string{"generate"}, &stdout, &stderr, e); code != 0 {
		t.Fatalf("signed generate: %s", stderr.String())
	}
	if !strings.Contains(generated(t, stdout.Bytes()), "argocd-ocm-plugin.io/verified-signatures: mysig") {
		t.Fatalf("no provenance:\n%s", stdout.String())
	}
	// An Application cannot bring its own trust root: ARGOCD_ENV_ names are not read for keys.
	stdout.Reset()
	stderr.Reset()
	e = env(map[string]string{
		"ARGOCD_APP_NAME": "signed", "ARGOCD_ENV_REPOSITORY": inAppDir(t, fx+"ctf-signed"), "ARGOCD_ENV_COMPONENT": "example.com/fixtures/signed-app",
		"ARGOCD_ENV_VERSION": "1.0.0", "ARGOCD_ENV_RESOURCE": "chart",
		"ARGOCD_OCM_SIGNATURE": "mysig", "ARGOCD_OCM_PUBLIC_KEY": fx + "nonexistent.pub", "ARGOCD_ENV_ARGOCD_OCM_PUBLIC_KEY": key,
	})
	if code := run([]string{"generate"}, &stdout, &stderr, e); code == 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "application signed") {
		t.Fatalf("key from the Application was used: %d %q", code, stderr.String())
	}
}

// A component with references and no resources renders as child Applications
// that point back at the parent's git source and pin the referenced versions.
func TestGeneratePlatform(t *testing.T) {
	var stdout, stderr bytes.Buffer
	e := env(map[string]string{
		"ARGOCD_APP_NAME": "idp", "ARGOCD_APP_NAMESPACE": "argocd",
		"ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/idp.git", "ARGOCD_APP_SOURCE_PATH": "envs/prod",
		"ARGOCD_APP_SOURCE_TARGET_REVISION": "v1", "ARGOCD_APP_PROJECT_NAME": "platform",
		"ARGOCD_ENV_REPOSITORY": inAppDir(t, demoRepo), "ARGOCD_ENV_COMPONENT": "example.com/demo/platform", "ARGOCD_ENV_VERSION": "1.0.0",
		"ARGOCD_ENV_VALUES":      "packages: {podinfo: {syncWave: 2, values: {replicaCount: 3}}}",
		"ARGOCD_OCM_PLUGIN_NAME": "argocd-ocm-plugin-v1",
	})
	if code := run([]string{"generate"}, &stdout, &stderr, e); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := generated(t, stdout.Bytes())
	for _, want := range []string{"name: idp-podinfo", "name: idp-extras", "project: platform", "repoURL: https://git.example.com/idp.git",
		"path: envs/prod", "targetRevision: v1", "name: argocd-ocm-plugin-v1", "string: example.com/demo/podinfo-extras",
		"argocd.argoproj.io/sync-wave: \"2\"", "replicaCount: 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Files an Application names stay inside its directory; warnings reach stderr
// only on success, so a failure is exactly one line.
func TestGenerateConfinesFilesAndKeepsOneErrorLine(t *testing.T) {
	for _, p := range []string{
		`[{"name":"value-files","array":["../../../var/run/secrets/kubernetes.io/serviceaccount/token"]}]`,
		`[{"name":"value-files","array":["/etc/passwd"]}]`,
		`[{"name":"platform-config","array":["../other-tenant/config.yaml"]}]`,
	} {
		var stdout, stderr bytes.Buffer
		e := env(map[string]string{"ARGOCD_APP_NAME": "shop", "ARGOCD_ENV_REPOSITORY": inAppDir(t, demoRepo),
			"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0", "ARGOCD_APP_PARAMETERS": p})
		if code := run([]string{"generate"}, &stdout, &stderr, e); code == 0 || stdout.Len() != 0 ||
			!strings.Contains(stderr.String(), "not a file or directory inside the Application's directory") {
			t.Errorf("%s: exit %d, stderr %q", p, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	t.Setenv("ARGOCD_OCM_CACHE_DIR", "/etc/passwd/cache") // unusable: a warning, not a failure
	code := run([]string{"render", "--repository", demoRepo, "--component", "example.com/demo/podinfo", "--version", "9.9.9"}, &stdout, &stderr, env(nil))
	if code == 0 || strings.Count(stderr.String(), "\n") != 1 {
		t.Fatalf("failure with a cache warning: exit %d, stderr %q", code, stderr.String())
	}
}
