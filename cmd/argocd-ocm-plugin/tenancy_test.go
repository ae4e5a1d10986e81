package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// refusedOneLine checks the error contract: a non-zero exit, nothing on
// stdout, exactly one stderr line mentioning every want.
func refusedOneLine(t *testing.T, what string, code int, stdout, stderr *bytes.Buffer, want ...string) {
	t.Helper()
	if code == 0 || stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 {
		t.Fatalf("%s: exit %d, stdout %d bytes, stderr %q", what, code, stdout.Len(), stderr.String())
	}
	for _, w := range want {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("%s: stderr %q lacks %q", what, stderr.String(), w)
		}
	}
}

// render --require-component-images: the demo component's own image passes
// (by its exact reference, or localised); values that replace it are
// refused; without the flag the output is what it always was.
func TestRenderRequireComponentImages(t *testing.T) {
	args := []string{"render", "--repository", demoRepo, "--component", "example.com/demo/podinfo", "--version", "1.0.0", "--release-name", "demo", "--namespace", "demo"}
	for _, extra := range [][]string{{"--require-component-images"}, {"--require-component-images", "--localize"}} {
		var stdout, stderr bytes.Buffer
		if code := run(append(append([]string{}, args...), extra...), &stdout, &stderr, env(nil)); code != 0 || !strings.Contains(stdout.String(), "image: ghcr.io/stefanprodan/podinfo:6.7.0") {
			t.Fatalf("%v: exit %d: %s", extra, code, stderr.String())
		}
	}
	evil := append(append([]string{}, args...), "--set", "image.repository=evil.example.com/miner")
	var stdout, stderr bytes.Buffer
	code := run(append(evil, "--require-component-images"), &stdout, &stderr, env(nil))
	refusedOneLine(t, "evil image", code, &stdout, &stderr, "component example.com/demo/podinfo:1.0.0: resource chart: not allowed: image origin guard: Deployment demo-podinfo containers[podinfo]",
		`image "evil.example.com/miner:6.7.0" is not an image resource of the component`, "(and 1 more refused)") // the chart's test Pod

	stdout.Reset()
	stderr.Reset()
	if code := run(evil, &stdout, &stderr, env(nil)); code != 0 || !strings.Contains(stdout.String(), "image: evil.example.com/miner:6.7.0") {
		t.Fatalf("guard off: exit %d: %s", code, stderr.String())
	}
}

// generate: the operator's environment turns the guard on; an Application
// cannot turn it off, and a misspelt switch is an error, not "off".
func TestGenerateRequireComponentImages(t *testing.T) {
	base := map[string]string{"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_NAMESPACE": "shop",
		"ARGOCD_ENV_REPOSITORY": inAppDir(t, demoRepo), "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0",
		"ARGOCD_ENV_VALUES": "image: {repository: evil.example.com/miner}",
		// What an Application might try: not read.
		"ARGOCD_ENV_ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES": "false",
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"generate"}, &stdout, &stderr, env(with("ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES", "true")))
	refusedOneLine(t, "guard on", code, &stdout, &stderr, "application shop: component example.com/demo/podinfo:1.0.0: resource chart: not allowed: image origin guard", "evil.example.com/miner")

	// A parameter of that name is no parameter of the plugin: refused.
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"generate"}, &stdout, &stderr, env(with("ARGOCD_APP_PARAMETERS", `[{"name":"require-component-images","string":"false"}]`)))
	refusedOneLine(t, "as a parameter", code, &stdout, &stderr, `unknown parameter "require-component-images"`)

	stdout.Reset()
	stderr.Reset()
	code = run([]string{"generate"}, &stdout, &stderr, env(with("ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES", "ture")))
	refusedOneLine(t, "misspelt", code, &stdout, &stderr, `ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES="ture": want true or false`)

	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"generate"}, &stdout, &stderr, env(base)); code != 0 || !strings.Contains(generated(t, stdout.Bytes()), "evil.example.com/miner") {
		t.Fatalf("guard off: exit %d: %s", code, stderr.String())
	}
}

// Platform children stay in the parent's project and destination unless the
// operator allows otherwise; render for people keeps choosing freely.
func TestPlatformChildrenConfined(t *testing.T) {
	base := map[string]string{"ARGOCD_APP_NAME": "idp", "ARGOCD_APP_NAMESPACE": "argocd", "ARGOCD_APP_PROJECT_NAME": "team-a",
		"ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/idp.git", "ARGOCD_APP_SOURCE_PATH": "envs/prod",
		"ARGOCD_ENV_REPOSITORY": inAppDir(t, demoRepo), "ARGOCD_ENV_COMPONENT": "example.com/demo/platform", "ARGOCD_ENV_VERSION": "1.0.0"}
	with := func(kv ...string) map[string]string { return overlay(base, kv...) }
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" means refused
	}{
		{"inherited", base, "project: team-a"},
		{"admin project", with("ARGOCD_ENV_VALUES", "project: admin-project"), ""},
		// Within the parent's project: Argo CD checks the destination against the AppProject.
		{"kube-system", with("ARGOCD_ENV_VALUES", "destination: {namespace: kube-system}"), "namespace: kube-system"},
		{"another cluster", with("ARGOCD_ENV_VALUES", "packages: {podinfo: {destination: {name: prod}}}"), "name: prod"},
		{"another project's cluster", with("ARGOCD_ENV_VALUES", "{project: admin-project, destination: {name: prod}}", "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_PROJECTS", "true"), ""},
		{"project unknown (Argo CD 2.x)", with("ARGOCD_APP_PROJECT_NAME", ""), ""},
		{"other projects allowed", with("ARGOCD_ENV_VALUES", "project: admin-project", "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_PROJECTS", "true"), "project: admin-project"},
		{"project unknown, allowed", with("ARGOCD_APP_PROJECT_NAME", "", "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_PROJECTS", "true"), "project: default"},
		{"other destinations allowed", with("ARGOCD_ENV_VALUES", "destination: {namespace: kube-system}", "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_DESTINATIONS", "1"), "namespace: kube-system"},
		{"only what is allowed", with("ARGOCD_ENV_VALUES", "{project: admin-project, destination: {namespace: kube-system}}", "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_DESTINATIONS", "true"), ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"generate"}, &stdout, &stderr, env(tc.env))
		if tc.want == "" {
			refusedOneLine(t, tc.name, code, &stdout, &stderr, "application idp: component example.com/demo/platform:1.0.0: ", "not allowed: ")
			continue
		}
		if code != 0 || !strings.Contains(generated(t, stdout.Bytes()), tc.want) {
			t.Errorf("%s: exit %d, stderr %s", tc.name, code, stderr.String())
		}
	}

	cfg := filepath.Join(t.TempDir(), "platform.yaml")
	writeTestFile(t, cfg, "project: admin-project\ndestination: {name: prod, namespace: kube-system}\n")
	var stdout, stderr bytes.Buffer
	code := run([]string{"render", "--repository", demoRepo, "--component", "example.com/demo/platform", "--version", "1.0.0", "--release-name", "idp",
		"--source-repo-url", "https://git.example.com/idp.git", "--platform-config", cfg}, &stdout, &stderr, env(nil))
	if code != 0 || !strings.Contains(stdout.String(), "project: admin-project") || !strings.Contains(stdout.String(), "namespace: kube-system") {
		t.Fatalf("render for people: exit %d: %s", code, stderr.String())
	}
}

// The case end to end: a signed component, the signature enforced,
// values from git that replace the image: refused, nothing on stdout, one
// line. Localised, the component's own image passes, pinned by the signed
// digest.
func TestSignedComponentCannotRunAnotherImage(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	chart, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml":  []byte("apiVersion: v2\nname: app\nversion: 1.0.0\n"),
		"values.yaml": []byte("image: {repository: ghcr.io/acme/app, tag: 1.0.0}\n"),
		"templates/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: app, image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"}]
`)})
	if err != nil {
		t.Fatal(err)
	}
	digest := strings.Repeat("5", 64)
	c := &ocmbuild.Component{Name: "example.com/signed/app", Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "chart", Type: "helmChart", MediaType: ocmbuild.MediaTypeHelmChart, Data: chart},
		{Name: "image", Type: "ociImage", Version: "1.0.0", Access: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/acme/app:1.0.0"},
			Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: digest}}}}
	if err := c.Sign("release", key); err != nil {
		t.Fatal(err)
	}
	c.Blobs = []ocmbuild.Blob{{MediaType: ocmbuild.MediaTypeHelmChart, Data: chart}}
	dir := t.TempDir()
	if err := ocmbuild.WriteCTF(filepath.Join(dir, "ctf"), c); err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "key.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	args := []string{"render", "--repository", filepath.Join(dir, "ctf"), "--component", "example.com/signed/app", "--version", "1.0.0",
		"--release-name", "shop", "--signature", "release", "--public-key", filepath.Join(dir, "key.pem"), "--require-component-images", "--localize"}

	var stdout, stderr bytes.Buffer
	code := run(append(append([]string{}, args...), "--set", "image.repository=evil.example.com/miner"), &stdout, &stderr, env(nil))
	refusedOneLine(t, "evil image", code, &stdout, &stderr,
		`argocd-ocm-plugin: component example.com/signed/app:1.0.0: resource chart: not allowed: image origin guard: Deployment shop containers[app] (spec.template.spec.containers[0].image): image "evil.example.com/miner:1.0.0" is not an image resource of the component`)

	stdout.Reset()
	stderr.Reset()
	if code := run(args, &stdout, &stderr, env(nil)); code != 0 || !strings.Contains(stdout.String(), "image: ghcr.io/acme/app:1.0.0@sha256:"+digest) {
		t.Fatalf("the component's own image: exit %d: %s\n%s", code, stderr.String(), stdout.String())
	}
}
