package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// Component versions written by the OCM CLI v0.13.0 (testdata/ocm-cli-v2):
// charts stored as OCI manifests inside the version's image index,
// descriptor layers v2+json, access types with /v1, http:// references.

const v2Prefix = "ocm.example/fixtures/"

// v2Addr is where the fixture registry must listen: the descriptors name it.
const v2Addr = "127.0.0.1:5093"

// hookSuffix is the random suffix helm gives podinfo's test hook Pods.
var hookSuffix = regexp.MustCompile(`^(podinfo-[a-z]+-test)-[a-z0-9]{5}$`)

// stripHookSuffixes makes the hook Pods comparable by name prefix.
func stripHookSuffixes(objs []manifests.Object) []manifests.Object {
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		if name, _ := md["name"].(string); md != nil && o["kind"] == "Pod" {
			if m := hookSuffix.FindStringSubmatch(name); m != nil {
				md["name"] = m[1]
			}
		}
	}
	return objs
}

func v2Golden(t *testing.T, name string) []manifests.Object {
	t.Helper()
	return stripHookSuffixes(manifeststest.ReadFile(t, fixtures.V2Path(t, "golden", name)))
}

// v2Manifests is the expected output of manifests:1.0.0: its input files.
func v2Manifests(t *testing.T) []manifests.Object {
	t.Helper()
	var out []manifests.Object
	files, _ := filepath.Glob(fixtures.V2Path(t, "inputs", "manifests", "*.yaml"))
	for _, f := range files {
		out = append(out, manifeststest.ReadFile(t, f)...)
	}
	if len(out) < 3 {
		t.Fatalf("inputs/manifests: %d objects", len(out))
	}
	return out
}

func decodeOut(t *testing.T, out []byte) []manifests.Object {
	t.Helper()
	objs, err := manifests.Decode("stdout", out)
	if err != nil {
		t.Fatal(err)
	}
	return stripHookSuffixes(objs)
}

type v2Case struct {
	name, comp, version string
	args                []string // beside repository, component, version
	want                func(t *testing.T) []manifests.Object
}

func v2Cases(t *testing.T) []v2Case {
	values := fixtures.V2Path(t, "inputs", "values", "podinfo-fx.yaml")
	return []v2Case{
		{"helm-dir index chart", "helm-dir", "1.0.0", []string{"--release-name", "podinfo", "--namespace", "fx-apps"},
			func(t *testing.T) []manifests.Object { return v2Golden(t, "podinfo-default.yaml") }},
		{"helm-dir values", "helm-dir", "1.0.0", []string{"--release-name", "podinfo", "--namespace", "fx-apps", "-f", values},
			func(t *testing.T) []manifests.Object { return v2Golden(t, "podinfo-values.yaml") }},
		{"helm-dir unsigned", "helm-dir", "1.1.0-unsigned", []string{"--release-name", "podinfo", "--namespace", "fx-apps"},
			func(t *testing.T) []manifests.Object { return v2Golden(t, "podinfo-default.yaml") }},
		{"helm-tgz legacy input", "helm-tgz", "6.14.1", []string{"--release-name", "podinfo", "--namespace", "fx-apps"},
			func(t *testing.T) []manifests.Object { return v2Golden(t, "podinfo-default.yaml") }},
		{"kustomize Dir/v1 tgz", "kustomize", "1.0.0", []string{"--path", "podinfo-kustomize"},
			func(t *testing.T) []manifests.Object { return v2Golden(t, "kustomize-podinfo.yaml") }},
		{"manifests Dir/v1 tar", "manifests", "1.0.0", nil, v2Manifests},
	}
}

// TestRenderOCMCLIv2 renders every v0.13.0 case from the CTF with render
// and compares it with the goldens helm and kustomize made.
func TestRenderOCMCLIv2(t *testing.T) {
	repo := mustAbs(fixtures.V2Path(t, "ctf"))
	for _, c := range v2Cases(t) {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"render", "--repository", repo, "--component", v2Prefix + c.comp, "--version", c.version, "--kube-version", "1.31.0"}, c.args...)
			if code := run(args, &stdout, &stderr, env(nil)); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			manifeststest.Equal(t, decodeOut(t, stdout.Bytes()), c.want(t))
		})
	}
}

// TestGenerateOCMCLIv2 is the same through Argo CD's generate, in the
// Application's directory.
func TestGenerateOCMCLIv2(t *testing.T) {
	name := inAppDir(t, fixtures.V2Path(t, "ctf"))
	values, err := os.ReadFile(fixtures.V2Path(t, "inputs", "values", "podinfo-fx.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		comp, version, params string
		want                  func(t *testing.T) []manifests.Object
	}{
		{"helm-dir", "1.0.0", `{"name":"values","string":` + jsonString(string(values)) + `}`,
			func(t *testing.T) []manifests.Object { return v2Golden(t, "podinfo-values.yaml") }},
		{"kustomize", "1.0.0", `{"name":"path","string":"podinfo-kustomize"}`,
			func(t *testing.T) []manifests.Object { return v2Golden(t, "kustomize-podinfo.yaml") }},
		{"manifests", "1.0.0", "", v2Manifests},
	} {
		t.Run(c.comp, func(t *testing.T) {
			params := `[{"name":"component","string":"` + v2Prefix + c.comp + `"},{"name":"version","string":"` + c.version + `"}`
			if c.params != "" {
				params += "," + c.params
			}
			var stdout, stderr bytes.Buffer
			e := env(map[string]string{"ARGOCD_APP_NAME": "podinfo", "ARGOCD_APP_NAMESPACE": "fx-apps", "KUBE_VERSION": "1.31.0",
				"ARGOCD_ENV_REPOSITORY": name, "ARGOCD_APP_PARAMETERS": params + "]"})
			if code := run([]string{"generate"}, &stdout, &stderr, e); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			manifeststest.Equal(t, decodeOut(t, []byte(generated(t, stdout.Bytes()))), c.want(t))
		})
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestBundleOCMCLIv2: bundle:1.0.0 has resources: null and three references
// with digests; render and generate make one child Application per
// reference, and verify checks every reference digest recursively.
func TestBundleOCMCLIv2(t *testing.T) {
	repo := mustAbs(fixtures.V2Path(t, "ctf"))
	var stdout, stderr bytes.Buffer
	if code := run([]string{"render", "--repository", repo, "--component", v2Prefix + "bundle", "--version", "1.0.0",
		"--release-name", "fx", "--source-repo-url", "https://git.example.com/idp.git"}, &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	children := map[string]string{}
	for _, o := range decodeOut(t, stdout.Bytes()) {
		md, _ := o["metadata"].(map[string]any)
		src := o["spec"].(map[string]any)["source"].(map[string]any)["plugin"].(map[string]any)["parameters"].([]any)
		for _, p := range src {
			if pm := p.(map[string]any); pm["name"] == "component" {
				children[md["name"].(string)] = pm["string"].(string)
			}
		}
	}
	want := map[string]string{"fx-app": v2Prefix + "helm-dir", "fx-tree": v2Prefix + "kustomize", "fx-plain": v2Prefix + "manifests"}
	if len(children) != len(want) {
		t.Fatalf("children %v, want %v", children, want)
	}
	for k, v := range want {
		if children[k] != v {
			t.Errorf("child %s renders %q, want %q", k, children[k], v)
		}
	}

	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"verify", "--repository", repo, "--component", v2Prefix + "bundle", "--version", "1.0.0",
		"--signature", "fx-pss", "--public-key", fixtures.V2Path(t, "keys", "rsa.pub.pem")}, &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("verify: exit %d: %s", code, stderr.String())
	}
	for _, w := range []string{"-> ocm.example/fixtures/helm-dir:1.0.0", "-> ocm.example/fixtures/kustomize:1.0.0", "-> ocm.example/fixtures/manifests:1.0.0",
		"helm-dir:1.0.0 chart: checked", "helm-dir:1.0.0 image: checked", "kustomize:1.0.0 tree: checked", "manifests:1.0.0 manifests: checked"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("verify output lacks %q:\n%s", w, stdout.String())
		}
	}
}

// TestTamperedChartLayerOCMCLIv2: a byte flipped in the chart layer of a
// copied CTF is a digest mismatch naming the layer, for render, generate
// and verify, with nothing on stdout.
func TestTamperedChartLayerOCMCLIv2(t *testing.T) {
	const layer = "sha256:53b3cbd202fd3a33d085d7f9249b5d00767b12bd1e14ba21bd09583ae5f48eb7"
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := registrytest.CopyDir(fixtures.V2Path(t, "ctf"), dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "blobs", "sha256."+strings.TrimPrefix(layer, "sha256:"))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0x04
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	comp := []string{"--component", v2Prefix + "helm-dir", "--version", "1.0.0"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"render", append([]string{"render", "--repository", dir}, comp...), nil},
		{"verify", append(append([]string{"verify", "--repository", dir}, comp...), "--signature", "fx-pss", "--public-key", fixtures.V2Path(t, "keys", "rsa.pub.pem")), nil},
		{"generate", []string{"generate"}, map[string]string{"ARGOCD_APP_NAME": "podinfo", "ARGOCD_ENV_REPOSITORY": "ctf",
			"ARGOCD_ENV_COMPONENT": v2Prefix + "helm-dir", "ARGOCD_ENV_VERSION": "1.0.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "generate" {
				t.Chdir(filepath.Dir(dir))
			}
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr, env(tc.env))
			msg := stderr.String()
			if code == 0 || stdout.Len() != 0 || strings.Count(msg, "\n") != 1 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), msg)
			}
			for _, w := range []string{"digest mismatch", "layer " + layer, "helm-dir:1.0.0", "resource chart"} {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "cannot be read") || strings.Contains(msg, dir) {
				t.Errorf("stderr %q: want a digest mismatch without the server path", msg)
			}
		})
	}
}

// serveV2Registry serves a copy of the registry storage the OCM CLI v0.13.0
// transferred into, on the address its descriptors name.
func serveV2Registry(t *testing.T) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "storage")
	if err := registrytest.CopyDir(fixtures.V2Path(t, "registry-storage"), dir); err != nil {
		t.Fatal(err)
	}
	_, err := registrytest.StartErr(t, registrytest.WithStorageDir(dir), registrytest.WithAddr(v2Addr))
	if errors.Is(err, registrytest.ErrAddrInUse) {
		t.Skipf("SKIPPED: the OCM CLI v0.13.0 fixture registry must listen on %s (its descriptors name that address) and the port is busy: %v", v2Addr, err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestRegistryOCMCLIv2: what needs the registry: the external chart pushed
// with helm push (OCIImage/v1, http://, genericBlobDigest/v1 = its manifest
// digest), and versions read from the registry after ocm transfer: a chart
// in the index (fx-localblob) and an ociArtifact/v1 copy by tag (fx-oci).
func TestRegistryOCMCLIv2(t *testing.T) {
	serveV2Registry(t)
	ctfRepo := mustAbs(fixtures.V2Path(t, "ctf"))
	plain := map[string]string{"ARGOCD_OCM_PLAIN_HTTP": v2Addr}
	for _, c := range []struct{ name, repo, comp string }{
		{"ctf helm push chart", ctfRepo, "helm-oci-ref"},
		{"fx-localblob index chart", "http://" + v2Addr + "/fx-localblob", "helm-dir"},
		{"fx-localblob referenced chart", "http://" + v2Addr + "/fx-localblob", "helm-oci-ref"},
		{"fx-oci ociArtifact/v1 chart", "http://" + v2Addr + "/fx-oci", "helm-oci-ref"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := []string{"render", "--repository", c.repo, "--component", v2Prefix + c.comp, "--version", "1.0.0",
				"--release-name", "podinfo", "--namespace", "fx-apps", "--kube-version", "1.31.0"}
			if code := run(args, &stdout, &stderr, env(plain)); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			manifeststest.Equal(t, decodeOut(t, stdout.Bytes()), v2Golden(t, "podinfo-default.yaml"))
		})
	}
	t.Run("generate fx-localblob", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		e := env(map[string]string{"ARGOCD_APP_NAME": "podinfo", "ARGOCD_APP_NAMESPACE": "fx-apps", "KUBE_VERSION": "1.31.0",
			"ARGOCD_OCM_PLAIN_HTTP": v2Addr, "ARGOCD_OCM_ALLOW_ADDRESSES": "127.0.0.1",
			"ARGOCD_ENV_REPOSITORY": "http://" + v2Addr + "/fx-localblob", "ARGOCD_ENV_COMPONENT": v2Prefix + "helm-dir", "ARGOCD_ENV_VERSION": "1.0.0"})
		t.Chdir(t.TempDir())
		if code := run([]string{"generate"}, &stdout, &stderr, e); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		manifeststest.Equal(t, decodeOut(t, []byte(generated(t, stdout.Bytes()))), v2Golden(t, "podinfo-default.yaml"))
	})
}
