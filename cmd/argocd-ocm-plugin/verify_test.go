package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
)

// verify reports every resource of the signed bundle's tree, in text and
// JSON; a flipped byte in a local blob of the real OCM CLI fixture fails
// with one line naming the resource and nothing on stdout.
func TestVerifyReportsResources(t *testing.T) {
	fx := mustAbs(fixtures.Dir(t))
	key := filepath.Join(fx, "keys", "key.pub")
	args := func(repo string, extra ...string) []string {
		return append([]string{"verify", "--repository", repo, "--component", "example.com/fixtures/signed-bundle", "--version", "1.0.0",
			"--signature", "mysig", "--public-key", key}, extra...)
	}

	var stdout, stderr bytes.Buffer
	if code := run(args(filepath.Join(fx, "ctf-signed")), &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{
		"verified example.com/fixtures/signed-bundle:1.0.0 signature mysig (RSASSA-PKCS1-V1_5, jsonNormalisation/v3 SHA-256 1e8665295602ac5c01cc63377b30d04e0fed7a69da335aa070ea3c2c5ab4d531)",
		"resource example.com/fixtures/signed-app:1.0.0 chart: checked (artifact set main manifest re-hashed)",
		"resource example.com/fixtures/signed-app:1.0.0 manifests: checked (blob SHA-256 re-hashed)",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, stdout.String())
		}
	}

	stdout.Reset()
	stderr.Reset()
	if code := run(args(filepath.Join(fx, "ctf-signed.tgz"), "-o", "json"), &stdout, &stderr, env(nil)); code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr.String())
	}
	var rep struct {
		Signatures []struct{ Signature, Digest string }
		References []struct{ Component, Digest string }
		Resources  []struct{ Component, Version, Resource, Digest, Status, Detail string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, stdout.String())
	}
	if len(rep.Signatures) != 1 || rep.Signatures[0].Signature != "mysig" || len(rep.References) != 1 ||
		rep.References[0].Digest != "ea6446ec76a4ec515218baa45a59e1f19e5aef39bafa7023ce361d0726b872e9" || len(rep.Resources) != 2 {
		t.Fatalf("json report: %+v", rep)
	}
	for _, r := range rep.Resources {
		if r.Status != "checked" || r.Component != "example.com/fixtures/signed-app" || r.Digest == "" {
			t.Errorf("resource %+v", r)
		}
	}

	// A copy of the fixture with one byte of the manifests blob flipped.
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(fx, "ctf-signed"))); err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(dir, "blobs", "sha256.cfad8f0c7d2ab2aaad44a6e4d60bbee6bd2cb68392e3bcc7c15fece5a7262e05")
	b, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	b[100] ^= 0x20
	if err := os.WriteFile(blob, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"-o", "json"}} {
		stdout.Reset()
		stderr.Reset()
		code := run(args(dir, extra...), &stdout, &stderr, env(nil))
		refusedOneLine(t, "flipped byte", code, &stdout, &stderr,
			"component example.com/fixtures/signed-app:1.0.0: resource manifests: digest mismatch")
	}
}
