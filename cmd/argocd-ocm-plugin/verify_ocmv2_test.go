package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedV2 is the full OCM CLI v0.13.0 fixture set (its CTF is not in the
// repository; testdata/ocm-cli-v2/signatures holds the signed descriptors and
// keys that signing tests with).
const sharedV2 = "../../../shared/fixtures/ocm-cli-v2"

func sharedV2Dir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(sharedV2)
	if err == nil {
		_, err = os.Stat(filepath.Join(d, "ctf", "artifact-index.json"))
	}
	if err != nil {
		t.Skipf("SKIPPED: the OCM CLI v0.13.0 fixtures are not at %s (%v); signing still tests the signatures from testdata/ocm-cli-v2/signatures", sharedV2, err)
	}
	return d
}

// verify on the CTF the new OCM CLI wrote, each kind of signature with its
// key: RSASSA-PSS, RSASSA-PKCS1-V1_5, PEM with a certificate chain to a root
// CA, and GPG.
func TestVerifyOCMCLIv2Signatures(t *testing.T) {
	fx := sharedV2Dir(t)
	keys := filepath.Join(fx, "keys")
	args := func(cv, sig string, trust ...string) []string {
		name, version, _ := strings.Cut(cv, ":")
		return append([]string{"verify", "--repository", filepath.Join(fx, "ctf"), "--component", "ocm.example/fixtures/" + name, "--version", version,
			"--signature", sig}, trust...)
	}
	for _, tc := range []struct {
		cv, sig string
		trust   []string
		want    string
	}{
		{"kustomize:1.0.0", "fx-pkcs1", []string{"--public-key", filepath.Join(keys, "rsa.pub.pem")}, "signature fx-pkcs1 (RSASSA-PKCS1-V1_5, jsonNormalisation/v4alpha1 SHA-256 89308da8"},
		{"manifests:1.0.0", "fx-gpg", []string{"--public-key", filepath.Join(keys, "gpg.pub.asc")}, "signature fx-gpg (GPG, jsonNormalisation/v4alpha1 SHA-256 5fecf60e"},
		{"bundle:1.0.0", "fx-pss", []string{"--public-key", filepath.Join(keys, "rsa.pkcs1.pub.pem")}, "signature fx-pss (RSASSA-PSS, jsonNormalisation/v4alpha1 SHA-256 0c382aa5"},
		{"helm-oci-ref:1.0.0", "fx-pem", []string{"--root-ca", filepath.Join(keys, "ca.crt")}, `signed by certificate "CN=ocm-fixtures-signer,O=ocm.example" issued under root "CN=OCM fixtures root CA,O=ocm.example"`},
		// A CA certificate given as the key is the root, as ARGOCD_OCM_PUBLIC_KEY may name one.
		{"helm-oci-ref:1.0.0", "fx-pem", []string{"--public-key", filepath.Join(keys, "ca.crt")}, "signature fx-pem (RSASSA-PSS"},
		{"helm-dir:1.0.0", "fx-pss", []string{"--public-key", filepath.Join(keys, "rsa.pub.pem")}, "signature fx-pss (RSASSA-PSS, jsonNormalisation/v4alpha1 SHA-256 571b4e19"},
		{"helm-dir:1.0.0", "fx-pkcs1", []string{"--public-key", filepath.Join(keys, "rsa.pub.pem")}, "signature fx-pkcs1 (RSASSA-PKCS1-V1_5"},
		{"helm-dir:1.0.0", "fx-pem", []string{"--root-ca", filepath.Join(keys, "ca.crt")}, "signature fx-pem (RSASSA-PSS"},
		{"helm-dir:1.0.0", "fx-gpg", []string{"--public-key", filepath.Join(keys, "gpg.pub.asc")}, "signed by OpenPGP key 1C4BBE5A7006AA9BC8017381B6307081EFA3801B"},
	} {
		t.Run(tc.cv+"/"+tc.sig+tc.trust[0], func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(args(tc.cv, tc.sig, tc.trust...), &stdout, &stderr, env(nil)); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if !strings.Contains(stdout.String(), "verified ocm.example/fixtures/"+tc.cv+" "+tc.want) && !strings.Contains(stdout.String(), tc.want) {
				t.Errorf("report lacks %q:\n%s", tc.want, stdout.String())
			}
		})
	}

	// Every signature of helm-dir at once, each with what applies to it.
	var stdout, stderr bytes.Buffer
	all := args("helm-dir:1.0.0", "fx-pss", "--signature", "fx-pkcs1", "--signature", "fx-pem", "--signature", "fx-gpg",
		"--public-key", filepath.Join(keys, "rsa.pub.pem"), "--public-key", filepath.Join(keys, "rsa.pub.pem"), "--public-key", filepath.Join(keys, "leaf.crt"),
		"--public-key", filepath.Join(keys, "gpg.pub.asc"), "--root-ca", filepath.Join(keys, "ca.crt"))
	if code := run(all, &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("all four: exit %d: %s", code, stderr.String())
	} else if n := strings.Count(stdout.String(), "verified ocm.example/fixtures/helm-dir:1.0.0 signature "); n != 4 {
		t.Errorf("all four: %d signatures verified:\n%s", n, stdout.String())
	}

	for _, tc := range []struct {
		what, cv, sig string
		trust         []string
		want          string
	}{
		{"leaf as root CA", "helm-oci-ref:1.0.0", "fx-pem", []string{"--root-ca", filepath.Join(keys, "leaf.crt")}, "is not a CA certificate"},
		{"leaf as key", "helm-oci-ref:1.0.0", "fx-pem", []string{"--public-key", filepath.Join(keys, "leaf.crt")}, "is not a CA certificate"},
		{"wrong key", "kustomize:1.0.0", "fx-pkcs1", []string{"--public-key", filepath.Join(keys, "wrong.pub.pem")}, `signature "fx-pkcs1": RSASSA-PKCS1-V1_5 signature does not verify`},
		{"wrong key, PSS", "bundle:1.0.0", "fx-pss", []string{"--public-key", filepath.Join(keys, "wrong.pub.pem")}, `signature "fx-pss"`},
		{"RSA key for GPG", "manifests:1.0.0", "fx-gpg", []string{"--public-key", filepath.Join(keys, "rsa.pub.pem")}, "needs an armored OpenPGP public key"},
		{"root CA for a hex signature", "kustomize:1.0.0", "fx-pkcs1", []string{"--root-ca", filepath.Join(keys, "ca.crt")}, "carries no certificate"},
		{"no key", "kustomize:1.0.0", "fx-pkcs1", nil, "a public key, root CA or trusted root"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(args(tc.cv, tc.sig, tc.trust...), &stdout, &stderr, env(nil))
		refusedOneLine(t, tc.what, code, &stdout, &stderr, "ocm.example/fixtures/"+tc.cv, tc.want)
	}

	// render takes the same trust flags.
	stdout.Reset()
	stderr.Reset()
	code := run([]string{"render", "--repository", filepath.Join(fx, "ctf"), "--component", "ocm.example/fixtures/manifests", "--version", "1.0.0",
		"--resource", "manifests", "--signature", "fx-gpg", "--public-key", filepath.Join(keys, "gpg.pub.asc"), "--provenance"}, &stdout, &stderr, env(nil))
	if code != 0 || !strings.Contains(stdout.String(), "fx-gpg") {
		t.Errorf("render with fx-gpg: exit %d: %s\n%.300s", code, stderr.String(), stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"render", "--repository", filepath.Join(fx, "ctf"), "--component", "ocm.example/fixtures/manifests", "--version", "1.0.0",
		"--resource", "manifests", "--signature", "fx-gpg", "--root-ca", filepath.Join(keys, "leaf.crt")}, &stdout, &stderr, env(nil))
	refusedOneLine(t, "render with a leaf as root CA", code, &stdout, &stderr, "is not a CA certificate")
}
