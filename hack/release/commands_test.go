package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/cosign"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/image"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/pin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

func TestPushRef(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:5000/a/b":        "127.0.0.1:5000/a/b:v1.2.3_build.4",
		"127.0.0.1:5000/a/b:stable": "127.0.0.1:5000/a/b:stable",
		"127.0.0.1:5000/a/b:latest": "127.0.0.1:5000/a/b:latest",
	} {
		got, err := pushRef(in, "v1.2.3+build.4")
		if err != nil || got != want {
			t.Errorf("pushRef(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestDist runs the release command for this machine's platform only (the
// binaries are linked from the build cache) with a push to the in-process
// registry: the version is stamped, the checksums hold, the SBOM describes
// the binaries, the pinned manifests name the pushed repository and the
// digest of the image in the layout; then the CLI signs the pushed image
// and verifies it, and a tampered digest fails verification.
func TestDist(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("SKIP: the image needs linux binaries; this is %s", runtime.GOOS)
	}
	plat := "linux/" + runtime.GOARCH
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("test bundle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "dist")
	t.Setenv("SOURCE_DATE_EPOCH", "1764547200")
	reg := registrytest.Start(t)
	repo := reg.Host + "/argocd-ocm-plugin/sidecar"
	err := cmdDist(context.Background(), []string{"-root", "../..", "-version", "v0.0.1-test", "-revision", strings.Repeat("a", 40),
		"-targets", plat, "-platforms", plat, "-ca-bundle", ca, "-out", out, "-push", repo})
	if err != nil {
		t.Fatal(err)
	}
	arch := runtime.GOARCH
	for _, f := range []string{"argocd-ocm-plugin-linux-" + arch, "argocd-ocm-client-linux-" + arch, "argocd-ocm-plugin.spdx.json", "IMAGE", "SHA256SUMS", "image/index.json", "manifests/install/repo-server-sidecar.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, ".build")); err == nil {
		t.Error("the build directory was left behind")
	}

	// SHA256SUMS covers the binaries, the SBOM and the manifests, and holds.
	sums, err := os.Open(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(sums)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		b, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
			t.Errorf("%s: checksum mismatch", file)
		}
		listed[file] = true
	}
	for _, f := range []string{"argocd-ocm-plugin-linux-" + arch, "argocd-ocm-plugin.spdx.json", "IMAGE", "manifests/install/repo-server-sidecar.yaml"} {
		if !listed[f] {
			t.Errorf("SHA256SUMS does not list %s", f)
		}
	}

	idx, err := image.ReadLayout(filepath.Join(out, "image"))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	ref := repo + "@" + d.String()
	if b, _ := os.ReadFile(filepath.Join(out, "IMAGE")); string(b) != ref+"\n" {
		t.Errorf("IMAGE %q, want %s", b, ref)
	}
	sidecar, _ := os.ReadFile(filepath.Join(out, "manifests", "install", "repo-server-sidecar.yaml"))
	if !strings.Contains(string(sidecar), "image: "+ref) {
		t.Errorf("sidecar not pinned to %s", ref)
	}

	if strings.Contains(string(sidecar), pin.Image) {
		t.Errorf("sidecar still names %s", pin.Image)
	}
	pulled, err := remote.Index(mustTag(t, repo+":v0.0.1-test"))
	if err != nil {
		t.Fatal(err)
	}
	if pd, _ := pulled.Digest(); pd != d {
		t.Errorf("pushed tag resolves to %s, layout has %s", pd, d)
	}

	// Sign and verify through the commands, with a throwaway key.
	key := filepath.Join(dir, "release")
	if err := cmdKeygen([]string{"-out", key}); err != nil {
		t.Fatal(err)
	}
	if err := cmdSign(context.Background(), []string{"-key", key + ".key", "-image", ref}); err != nil {
		t.Fatal(err)
	}
	if err := cmdVerify(context.Background(), []string{"-key", key + ".pub", "-image", ref}); err != nil {
		t.Fatal(err)
	}
	tampered := ref[:len(ref)-1] + map[bool]string{true: "1", false: "0"}[ref[len(ref)-1] == '0']
	if err := cmdVerify(context.Background(), []string{"-key", key + ".pub", "-image", tampered}); !errors.Is(err, cosign.ErrNoSignature) {
		t.Errorf("tampered digest %s: %v", tampered, err)
	}
	if err := cmdSign(context.Background(), []string{"-key", key + ".key", "-image", repo + ":v0.0.1-test"}); err == nil {
		t.Error("signed a tag")
	}

	var doc struct {
		Packages []struct{ Name, VersionInfo string } `json:"packages"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "argocd-ocm-plugin.spdx.json"))
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, p := range doc.Packages {
		names[p.Name] = p.VersionInfo
	}
	if names["argocd-ocm-plugin"] != "v0.0.1-test" || names["helm.sh/helm/v4"] == "" || names["oras.land/oras-go/v2"] == "" {
		t.Errorf("SBOM packages %v", names)
	}
}

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// pin copies manifests/ pinned to an image of one's own, and refuses a tag.
func TestCmdPin(t *testing.T) {
	out := t.TempDir() + "/m"
	img := "registry.example.com/team/argocd-ocm-plugin@sha256:" + strings.Repeat("ab", 32)
	if err := run(context.Background(), []string{"pin", "-image", img, "-out", out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out + "/install/repo-server-sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "image: "+img) {
		t.Errorf("sidecar not pinned to %s:\n%s", img, b)
	}
	k, err := os.ReadFile(out + "/argocd/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(k), "name: registry.example.com/team/argocd-ocm-plugin") || !strings.Contains(string(k), "digest: sha256:") {
		t.Errorf("kustomize images entry not pinned:\n%s", k)
	}
	for _, bad := range []string{"registry.example.com/x:v1", "x@sha256:12", ""} {
		if err := run(context.Background(), []string{"pin", "-image", bad, "-out", out}); err == nil {
			t.Errorf("pin -image %q accepted", bad)
		}
	}
}
