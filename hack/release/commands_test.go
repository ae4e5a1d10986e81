package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/image"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/pin"
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
// binaries are linked from the build cache): the version is stamped, the
// checksums hold, the SBOM describes the binaries, and the pinned manifests
// name the digest of the image in the layout.
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
	err := cmdDist(context.Background(), []string{"-root", "../..", "-version", "v0.0.1-test", "-revision", strings.Repeat("a", 40),
		"-targets", plat, "-platforms", plat, "-ca-bundle", ca, "-out", out})
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
	ref := pin.Image + "@" + d.String()
	if b, _ := os.ReadFile(filepath.Join(out, "IMAGE")); string(b) != ref+"\n" {
		t.Errorf("IMAGE %q, want %s", b, ref)
	}
	sidecar, _ := os.ReadFile(filepath.Join(out, "manifests", "install", "repo-server-sidecar.yaml"))
	if !strings.Contains(string(sidecar), "image: "+ref) {
		t.Errorf("sidecar not pinned to %s", ref)
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
	if names["argocd-ocm-plugin"] != "v0.0.1-test" || names["helm.sh/helm/v3"] == "" || names["oras.land/oras-go/v2"] == "" {
		t.Errorf("SBOM packages %v", names)
	}
}
