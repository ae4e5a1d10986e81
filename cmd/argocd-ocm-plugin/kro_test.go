package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
)

// kroRepo writes the kro example components (OCM's RGD examples with local
// charts and trees) as a CTF.
func kroRepo(t *testing.T) string { return exampleCTF(t, examples.KroDemo) }

// An Application on a component that ships an RGD: the instance spec's
// fields are announced as parameters.<dotted name> with their types and
// defaults, generate reads them back and renders the Argo CD block of the
// RGD from the component's chart; a bad value is one line on stderr and
// nothing on stdout.
func TestGenerateRGD(t *testing.T) {
	repo := inAppDir(t, kroRepo(t))
	e := map[string]string{
		"ARGOCD_APP_NAME": "podinfo", "ARGOCD_APP_NAMESPACE": "apps",
		"ARGOCD_ENV_REPOSITORY": repo, "ARGOCD_ENV_COMPONENT": examples.KroHelm, "ARGOCD_ENV_VERSION": "1.0.0",
	}
	var stdout, stderr bytes.Buffer
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
	if m := byName["parameters.podinfo.message"]; m == nil || m["itemType"] != "string" || m["string"] != "hello world" {
		t.Fatalf("podinfo.message announcement %v", m)
	}
	if r := byName["parameters.podinfo.replicas"]; r == nil || r["itemType"] != "integer" || r["string"] != "1" {
		t.Fatalf("podinfo.replicas announcement %v", r)
	}

	stdout.Reset()
	stderr.Reset()
	e["ARGOCD_APP_PARAMETERS"] = `[{"name":"parameters.podinfo.message","string":"hi from the UI"},{"name":"parameters","map":{"podinfo.replicas":"2"}}]`
	if code := run([]string{"generate"}, &stdout, &stderr, env(e)); code != 0 {
		t.Fatalf("generate: %s", stderr.String())
	}
	out := generated(t, stdout.Bytes())
	for _, want := range []string{"replicas: 2", "PODINFO_UI_MESSAGE: hi from the UI", "image: ghcr.io/stefanprodan/podinfo:6.9.1", "name: helm-configuration-localization-podinfo"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "HelmRelease") || strings.Contains(out, "kind: Application") || strings.Contains(out, "delivery.ocm.software") {
		t.Errorf("deployer or OCM objects emitted:\n%s", out)
	}

	stdout.Reset()
	stderr.Reset()
	e["ARGOCD_APP_PARAMETERS"] = `[{"name":"parameters","map":{"podinfo.replicas":"9"}}]`
	if code := run([]string{"generate"}, &stdout, &stderr, env(e)); code == 0 || stdout.Len() != 0 ||
		strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 || !strings.Contains(stderr.String(), "parameter podinfo.replicas: 9 is greater than the maximum 5") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// render --explain on an RGD: the RGD, each parameter and where it came
// from, the OCM Resource statuses, the chosen block.
func TestRenderExplainRGD(t *testing.T) {
	repo := kroRepo(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"render", "--explain", "--repository", repo, "--component", examples.KroHelm, "--version", "1.0.0",
		"--definition", "rgd:kro-rgd@flux", "--param", "podinfo.message=explained"}, &stdout, &stderr, env(nil))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"ResourceGraphDefinition helm-configuration-localization (resource kro-rgd), kind HelmConfigurationLocalization",
		"podinfo.message", "explained", "OCM Resource node resourceImage", "status.additional", "the Flux block (helmrelease) is rendered, as asked"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
}

// convert prints a ComponentDeployment that renders what the RGD renders:
// rendering with it and the same parameters gives the same objects.
func TestConvertRGD(t *testing.T) {
	repo := kroRepo(t)
	for _, tc := range []struct {
		component, definition string
		params                []string // name=value, RGD spelling
	}{
		{examples.KroHelm, "", []string{"podinfo.message=converted", "podinfo.replicas=2"}},
		{examples.KroHelm, "rgd:@flux", []string{"podinfo.message=converted"}},
		{examples.KroKustomize, "", []string{"podinfo.message=converted"}},
		{examples.KroKustomize, "rgd:kro-rgd@flux", nil},
	} {
		t.Run(tc.component+tc.definition, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := []string{"convert", "--repository", repo, "--component", tc.component, "--version", "1.0.0"}
			if tc.definition != "" {
				args = append(args, "--definition", tc.definition)
			}
			if code := run(args, &stdout, &stderr, env(nil)); code != 0 {
				t.Fatalf("convert: %s", stderr.String())
			}
			def := filepath.Join(t.TempDir(), "def.yaml")
			if err := os.WriteFile(def, stdout.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			base := []string{"render", "--repository", repo, "--component", tc.component, "--version", "1.0.0", "--release-name", "app", "--namespace", "apps"}
			viaRGD, viaDef := append([]string{}, base...), append([]string{}, base...)
			if tc.definition != "" {
				viaRGD = append(viaRGD, "--definition", tc.definition)
			}
			viaDef = append(viaDef, "--definition", def)
			for _, p := range tc.params {
				viaRGD = append(viaRGD, "--param", p)
				viaDef = append(viaDef, "--param", strings.Replace(p, ".", "_", 1))
			}
			var a, b bytes.Buffer
			if code := run(viaRGD, &a, &stderr, env(nil)); code != 0 {
				t.Fatalf("render RGD: %s", stderr.String())
			}
			if code := run(viaDef, &b, &stderr, env(nil)); code != 0 {
				t.Fatalf("render converted:\n%s\n%s", stdout.String(), stderr.String())
			}
			manifeststest.Equal(t, decodeObjects(t, b.Bytes()), decodeObjects(t, a.Bytes()))
		})
	}
}

func decodeObjects(t *testing.T, b []byte) []manifests.Object {
	t.Helper()
	objs, err := manifests.Decode("output", b)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
