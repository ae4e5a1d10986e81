package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
)

// A CTF tgz committed in the Application's directory is unpacked into the
// blob cache (ARGOCD_OCM_CACHE_DIR) by the first generate, under the
// archive's content digest, and a later generate (another process, here a
// second run) renders the same bytes from it.
func TestGenerateUnpacksCTFTgzIntoTheCache(t *testing.T) {
	tgz, err := os.ReadFile(fixtures.Path(t, "ctf.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	app := t.TempDir()
	if err := os.WriteFile(filepath.Join(app, "bundle.tgz"), tgz, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(app)
	cacheDir := t.TempDir()
	t.Setenv("ARGOCD_OCM_CACHE_DIR", cacheDir) // the sidecar's setting: read from the process environment
	env := map[string]string{
		"ARGOCD_APP_NAME": "demo", "ARGOCD_APP_NAMESPACE": "demo", "ARGOCD_ENV_REPOSITORY": "bundle.tgz",
		"ARGOCD_ENV_COMPONENT": "example.com/fixtures/podinfo-app", "ARGOCD_ENV_VERSION": "1.0.0",
		"ARGOCD_OCM_CACHE_DIR": cacheDir, "HOME": t.TempDir(), "DOCKER_CONFIG": t.TempDir(),
	}
	var outs []string
	for i := 0; i < 2; i++ {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"generate"}, &stdout, &stderr, func(k string) string { return env[k] }); code != 0 || stdout.Len() == 0 {
			t.Fatalf("generate %d: exit %d, %d bytes: %s", i, code, stdout.Len(), stderr.String())
		}
		outs = append(outs, stdout.String())
	}
	if outs[0] != outs[1] {
		t.Fatal("the second generate, from the cached tar, printed other bytes")
	}
	sum := sha256.Sum256(tgz)
	link, err := os.ReadFile(filepath.Join(cacheDir, "derived", "ctf-tar", "sha256", hex.EncodeToString(sum[:])))
	if err != nil {
		t.Fatalf("no unpacked tar recorded for the archive's digest: %v", err)
	}
	var tarDigest string
	var size int64
	if _, err := fmt.Sscan(string(link), &tarDigest, &size); err != nil {
		t.Fatalf("link %q: %v", link, err)
	}
	fi, err := os.Stat(filepath.Join(cacheDir, "blobs", "sha256", tarDigest[len("sha256:"):]))
	if err != nil || fi.Size() != size || size <= int64(len(tgz)) {
		t.Fatalf("unpacked tar %s: %v (size %d, link says %d, tgz %d)", tarDigest, err, fi.Size(), size, len(tgz))
	}
}
