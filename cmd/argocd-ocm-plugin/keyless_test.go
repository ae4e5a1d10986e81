package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/sigstoretest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
)

const (
	keylessIdentity = "https://github.com/example-org/platform/.github/workflows/release.yml@refs/heads/main"
	keylessIssuer   = "https://token.actions.githubusercontent.com"
)

// keylessFixture is the demo's podinfo 1.0.0 signed keyless (OCM's
// Sigstore/v1alpha1) by a virtual Sigstore, in a CTF, with that Sigstore's
// trusted root and another one's. Two more CTFs beside it are what an
// attacker who controls the repository would store, each consistent in
// itself (every blob matches its manifest digest): the signed descriptor
// with a signed label changed (tamperedDescriptor); and the signed CTF with
// one byte of the chart flipped (tamperedResource: a local blob is
// addressed by its digest, so changed content cannot be stored
// consistently).
type keylessFixture struct {
	dir, ctf, root, otherRoot            string
	tamperedDescriptor, tamperedResource string
}

func newKeylessFixture(t *testing.T) keylessFixture {
	t.Helper()
	comps, err := examples.Demo("../../testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	a, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	other, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	var c *ocmbuild.Component
	for _, comp := range comps {
		if comp.Name == examples.Podinfo && comp.Version == "1.0.0" {
			c = comp
		}
	}
	if err := a.SignComponent(c, "release", keylessIdentity, keylessIssuer, sigstoretest.SignOptions{}); err != nil {
		t.Fatal(err)
	}
	fx := keylessFixture{dir: t.TempDir()}
	fx.ctf, fx.root, fx.otherRoot = filepath.Join(fx.dir, "ctf"), filepath.Join(fx.dir, "trusted_root.json"), filepath.Join(fx.dir, "other_root.json")
	if err := ocmbuild.WriteCTF(fx.ctf, c); err != nil {
		t.Fatal(err)
	}
	desc := *c
	desc.RawDescriptor = bytes.Replace(c.RawDescriptor, []byte("value: stable"), []byte("value: canary"), 1)
	if bytes.Equal(desc.RawDescriptor, c.RawDescriptor) {
		t.Fatal("the signed descriptor has no label release-channel: stable to tamper with")
	}
	fx.tamperedDescriptor, fx.tamperedResource = filepath.Join(fx.dir, "ctf-tampered-descriptor"), filepath.Join(fx.dir, "ctf-tampered-resource")
	if err := ocmbuild.WriteCTF(fx.tamperedDescriptor, &desc); err != nil {
		t.Fatal(err)
	}
	if err := ocmbuild.WriteCTF(fx.tamperedResource, c); err != nil {
		t.Fatal(err)
	}
	blobs, err := filepath.Glob(filepath.Join(fx.tamperedResource, "blobs", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var biggest string
	var size int64
	for _, b := range blobs {
		if fi, err := os.Stat(b); err == nil && fi.Size() > size {
			biggest, size = b, fi.Size()
		}
	}
	data, err := os.ReadFile(biggest) // the chart: the largest blob
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(biggest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for file, auth := range map[string]*sigstoretest.Authority{fx.root: a, fx.otherRoot: other} {
		b, err := auth.TrustedRoot(sigstoretest.RootOptions{})
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, file, string(b))
	}
	return fx
}

// verify and render with cosign's flags: the right identity verifies, a
// wrong identity or issuer, another trusted root or a tampered resource is
// one error line and nothing on stdout.
func TestKeylessVerifyAndRender(t *testing.T) {
	fx := newKeylessFixture(t)
	base := func(cmd string) []string {
		return []string{cmd, "--repository", fx.ctf, "--component", examples.Podinfo, "--version", "1.0.0", "--signature", "release"}
	}
	trust := func(root, identity, issuer string) []string {
		return []string{"--trusted-root", root, "--certificate-identity", identity, "--certificate-oidc-issuer", issuer}
	}
	for _, cmd := range []string{"verify", "render"} {
		t.Run(cmd, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append(base(cmd), trust(fx.root, keylessIdentity, keylessIssuer)...), &stdout, &stderr, env(nil)); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			want := "kind: Deployment"
			if cmd == "verify" {
				want = "signature release (Sigstore/v1alpha1, jsonNormalisation/v4alpha1 SHA-256"
			}
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
			}
			if cmd == "verify" && !strings.Contains(stdout.String(), "signed by "+keylessIdentity+" (OIDC issuer "+keylessIssuer+"), logged ") {
				t.Errorf("report does not say who signed and when:\n%s", stdout.String())
			}
			regexps := []string{"--trusted-root", fx.root, "--certificate-identity-regexp", `https://github\.com/example-org/.*`, "--certificate-oidc-issuer-regexp", `https://token\.actions\.githubusercontent\.com`}
			stdout.Reset()
			stderr.Reset()
			if code := run(append(base(cmd), regexps...), &stdout, &stderr, env(nil)); code != 0 {
				t.Fatalf("regexps: exit %d: %s", code, stderr.String())
			}
			for _, tc := range []struct {
				name string
				args []string
				want string
			}{
				{"wrong identity", trust(fx.root, "release@example.com", keylessIssuer), `the policy requires identity "release@example.com"`},
				{"wrong issuer", trust(fx.root, keylessIdentity, "https://accounts.google.com"), `issuer "https://accounts.google.com"`},
				{"prefix regexp", []string{"--trusted-root", fx.root, "--certificate-identity-regexp", `https://github\.com/example-org/platform`, "--certificate-oidc-issuer", keylessIssuer}, "the policy requires"},
				{"another trusted root", trust(fx.otherRoot, keylessIdentity, keylessIssuer), "does not verify against the trusted root"},
				{"no issuer", []string{"--trusted-root", fx.root, "--certificate-identity", keylessIdentity}, "an OIDC issuer"},
				{"identity without root", []string{"--public-key", fx.root, "--certificate-identity", keylessIdentity}, "needs a trusted root"},
			} {
				stdout.Reset()
				stderr.Reset()
				code := run(append(base(cmd), tc.args...), &stdout, &stderr, env(nil))
				refusedOneLine(t, tc.name, code, &stdout, &stderr, tc.want)
			}
		})
	}

	// A signed label changed in a consistent CTF; a resource changed after
	// signing (its digest no longer matches).
	for _, tc := range []struct{ name, repo, want string }{
		{"tampered descriptor", fx.tamperedDescriptor, "the signed one is"},
		{"tampered resource", fx.tamperedResource, "digest"},
	} {
		for _, cmd := range []string{"verify", "render"} {
			var stdout, stderr bytes.Buffer
			args := append([]string{cmd, "--repository", tc.repo, "--component", examples.Podinfo, "--version", "1.0.0", "--signature", "release"}, trust(fx.root, keylessIdentity, keylessIssuer)...)
			code := run(args, &stdout, &stderr, env(nil))
			refusedOneLine(t, cmd+" "+tc.name, code, &stdout, &stderr, examples.Podinfo, tc.want)
		}
	}
}

// generate under a sidecar policy: the project whose rule names the signer
// renders, the one whose rule names another identity is refused.
func TestKeylessGenerateUnderPolicy(t *testing.T) {
	fx := newKeylessFixture(t)
	pol := filepath.Join(fx.dir, "policy.yaml")
	writeTestFile(t, pol, `apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
rules:
- name: release
  projects: [release]
  signatures:
  - name: release
    trustedRoot: `+fx.root+`
    certificateIdentity: `+keylessIdentity+`
    certificateOIDCIssuer: `+keylessIssuer+`
- name: wrong-issuer
  projects: [wrong-issuer]
  signatures:
  - name: release
    trustedRoot: `+fx.root+`
    certificateIdentity: `+keylessIdentity+`
    certificateOIDCIssuer: https://accounts.google.com
- name: impostor
  projects: [impostor]
  signatures:
  - name: release
    trustedRoot: `+fx.root+`
    certificateIdentityRegexp: 'https://github\.com/someone-else/.*'
    certificateOIDCIssuer: `+keylessIssuer+`
default:
  signatures:
  - name: release
    trustedRoot: `+fx.otherRoot+`
    certificateIdentity: `+keylessIdentity+`
    certificateOIDCIssuer: `+keylessIssuer+`
`)
	repo := inAppDir(t, fx.ctf)
	var genIn func(project, repo string) (string, string, int)
	gen := func(project string) (string, string, int) { return genIn(project, repo) }
	genIn = func(project, repo string) (string, string, int) {
		e := map[string]string{"ARGOCD_OCM_POLICY": pol}
		for _, kv := range generateEnv(project, repo) {
			k, v, _ := strings.Cut(kv, "=")
			e[k] = v
		}
		var stdout, stderr bytes.Buffer
		code := run([]string{"generate"}, &stdout, &stderr, env(e))
		return stdout.String(), stderr.String(), code
	}
	if stdout, stderr, code := gen("release"); code != 0 || !strings.Contains(stdout, `"kind":"Deployment"`) {
		t.Fatalf("release: exit %d: %s\n%s", code, stderr, stdout)
	}
	stdout, stderr, code := gen("impostor")
	refused(t, stdout, stderr, code, "application shop", examples.Podinfo+":1.0.0", `signature "release"`, `the policy requires identity regexp "https://github\\.com/someone-else/.*"`)
	stdout, stderr, code = gen("wrong-issuer")
	refused(t, stdout, stderr, code, "application shop", `signature "release"`, `issuer "https://accounts.google.com"`)
	stdout, stderr, code = gen("")
	refused(t, stdout, stderr, code, "does not verify against the trusted root")
	// The signer's own project, on what a repository's owner could store.
	// (The tampered CTFs lie beside the signed one: inAppDir made their
	// directory the Application's.)
	stdout, stderr, code = genIn("release", filepath.Base(fx.tamperedDescriptor))
	refused(t, stdout, stderr, code, "application shop", examples.Podinfo+":1.0.0", "the signed one is")
	stdout, stderr, code = genIn("release", filepath.Base(fx.tamperedResource))
	refused(t, stdout, stderr, code, "application shop", examples.Podinfo+":1.0.0", "digest")
}

// The example of docs/signatures.md, on the committed fixtures: the keyless
// signature verifies at any later date (the certificate is checked at the
// time the log recorded it), and renders.
func TestKeylessCommittedExample(t *testing.T) {
	fx := "../../testdata/sigstore"
	args := func(cmd, identity string) []string {
		return []string{cmd, "--repository", fx + "/ctf", "--component", "example.com/keyless/hello", "--version", "1.0.0",
			"--signature", "release", "--trusted-root", fx + "/trusted_root.json",
			"--certificate-identity", identity, "--certificate-oidc-issuer", keylessIssuer}
	}
	for cmd, want := range map[string]string{"verify": "signed by " + keylessIdentity, "render": "greeting: signed keyless, verified offline"} {
		var stdout, stderr bytes.Buffer
		if code := run(args(cmd, keylessIdentity), &stdout, &stderr, env(nil)); code != 0 || !strings.Contains(stdout.String(), want) {
			t.Fatalf("%s: exit %d: %s\n%s", cmd, code, stderr.String(), stdout.String())
		}
		stdout.Reset()
		stderr.Reset()
		code := run(args(cmd, "https://github.com/example-org/platform/.github/workflows/evil.yml@refs/heads/main"), &stdout, &stderr, env(nil))
		refusedOneLine(t, cmd+" wrong identity", code, &stdout, &stderr, "example.com/keyless/hello:1.0.0", `signature "release"`, "the policy requires identity")
	}
}

// A chart referenced from a registry renders under a policy with
// chartSignatures only when it carries a valid cosign signature.
func TestChartSignatureRequiredByPolicy(t *testing.T) {
	comps, err := examples.Demo("../../testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	pushed := reg.PushTransferred(t, "ocm", comps[0])
	chartRef := pushed[0].Component.Resources[0].Access["imageReference"].(string)
	// http://HOST/REPO:TAG@DIGEST
	repoTag, pinned, _ := strings.Cut(strings.TrimPrefix(chartRef, "http://"+reg.Host+"/"), "@")
	chartRepo := repoTag[:strings.LastIndex(repoTag, ":")]

	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]*ecdsa.PrivateKey{"cosign.pub": key, "other.pub": other} {
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, name), string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	}
	pol := filepath.Join(dir, "policy.yaml")
	writeTestFile(t, pol, fmt.Sprintf(`apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
allowAddresses: [127.0.0.1]
rules:
- name: signed-charts
  projects: [signed]
  repositories: [{host: %q, pathPrefix: ocm}]
  plainHTTP: [%q]
  chartSignatures:
  - publicKey: %s
- name: other-key
  projects: [other]
  repositories: [{host: %q, pathPrefix: ocm}]
  plainHTTP: [%q]
  chartSignatures:
  - publicKey: %s
`, reg.Host, reg.Host, filepath.Join(dir, "cosign.pub"), reg.Host, reg.Host, filepath.Join(dir, "other.pub")))
	gen := func(project string) (string, string, int) {
		e := map[string]string{"ARGOCD_OCM_POLICY": pol, "ARGOCD_OCM_CACHE_DIR": t.TempDir()}
		for _, kv := range generateEnv(project, "http://"+reg.Host+"/ocm") {
			k, v, _ := strings.Cut(kv, "=")
			e[k] = v
		}
		var stdout, stderr bytes.Buffer
		code := run([]string{"generate"}, &stdout, &stderr, env(e))
		return stdout.String(), stderr.String(), code
	}
	stdout, stderr, code := gen("signed")
	refused(t, stdout, stderr, code, "has no cosign signature")

	payload := sigstoretest.CosignPayload(reg.Host+"/"+chartRepo, digest.Digest(pinned))
	ann, err := sigstoretest.CosignKeyAnnotations(key, payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigstoretest.PushCosignTagSignature(context.Background(), reg.Repository(t, chartRepo), digest.Digest(pinned), payload, ann); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := gen("signed"); code != 0 || !strings.Contains(stdout, `"kind":"Deployment"`) {
		t.Fatalf("signed chart: exit %d: %s", code, stderr)
	}
	stdout, stderr, code = gen("other")
	refused(t, stdout, stderr, code, "no cosign signature of "+pinned+" verifies", "key other.pub")
}

// The ApplicationSet generator lists a keyless-signed version only when
// the signature verifies with the default rule's trusted root and identity.
func TestKeylessGenerator(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	const token = "keyless-generator-token-0123456789"
	writeTestFile(t, tokenFile, token+"\n")
	fx, err := filepath.Abs("../../testdata/sigstore")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		identity string
		want     int // versions listed; 0: the request is refused
	}{{keylessIdentity, 1}, {"https://github.com/example-org/platform/.github/workflows/other.yml@refs/heads/main", 0}} {
		pol := filepath.Join(dir, "policy.yaml")
		writeTestFile(t, pol, `apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
default:
  signatures:
  - name: release
    trustedRoot: `+filepath.Join(fx, "trusted_root.json")+`
    certificateIdentity: `+tc.identity+`
    certificateOIDCIssuer: `+keylessIssuer+`
`)
		getenv := func(k string) string {
			switch k {
			case "ARGOCD_OCM_CACHE_DIR":
				return filepath.Join(dir, "cache")
			case "ARGOCD_OCM_POLICY":
				return pol
			}
			return ""
		}
		addr := freeAddr(t)
		ctx, cancel := context.WithCancel(context.Background())
		var stderr testutil.SyncBuffer
		code := make(chan int, 1)
		go func() {
			code <- execute(ctx, newProcess(), []string{"generator", "--listen", addr, "--token-file", tokenFile, "--ctf-dir", fx}, io.Discard, &stderr, getenv, "", nil)
		}()
		base := "http://" + addr
		waitHealthy(t, http.DefaultClient, base, &stderr)
		body := `{"applicationSetName":"keyless","input":{"parameters":{"repository":"./ctf","component":"example.com/keyless/hello","signature":"release"}}}`
		if tc.want == 1 {
			if ps := getParams(t, http.DefaultClient, base, token, body); len(ps) != 1 || ps[0]["version"] != "1.0.0" {
				t.Errorf("identity %s: parameters %v, want version 1.0.0", tc.identity, ps)
			}
		} else {
			req, _ := http.NewRequest("POST", base+"/api/v1/getparams.execute", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "no version of example.com/keyless/hello is signed with release and verifies") {
				t.Errorf("identity %s: %d %s, want 400: no version verifies", tc.identity, resp.StatusCode, b)
			}
		}
		cancel()
		<-code
	}
}
