package pin_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/hack/release/internal/pin"
)

var digest = "sha256:" + strings.Repeat("0f", 32)

func TestText(t *testing.T) {
	for _, tc := range []struct{ name, in, repo, want string }{
		{"tag", "image: ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin:latest # pin\n", "",
			"image: ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin@" + digest + " # pin\n"},
		{"no tag, other repo", "image: ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin\n", "reg.example/x/y",
			"image: reg.example/x/y@" + digest + "\n"},
		{"old digest", "image: ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin:v1@sha256:" + strings.Repeat("aa", 32) + "\n", "",
			"image: ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin@" + digest + "\n"},
		{"longer name untouched", "image: ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin-extra:latest\n", "", ""},
		{"other image untouched", "image: quay.io/argoproj/argocd:v2.14.21\n", "", ""},
		{"kustomize images", "images:\n  - name: ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin\n    newTag: latest\n  - name: other\n    newTag: latest\n", "",
			"images:\n  - name: ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin\n    digest: " + digest + "\n  - name: other\n    newTag: latest\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if got := pin.Text(tc.in, tc.repo, digest); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestManifests pins a copy of the repository's manifests: every reference
// to the image names the digest, nothing else changes.
func TestManifests(t *testing.T) {
	src := filepath.Join("..", "..", "..", "..", "manifests")
	dst := filepath.Join(t.TempDir(), "manifests")
	changed, err := pin.Manifests(src, dst, "", digest)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"argocd/kustomization.yaml", "install/repo-server-sidecar.yaml", "helm/values.yaml"} {
		if !slices.Contains(changed, filepath.FromSlash(f)) {
			t.Errorf("%s not pinned (changed: %v)", f, changed)
		}
	}
	err = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		orig, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			return err
		}
		for i, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, pin.Image+":") {
				t.Errorf("%s:%d still names a tag: %s", rel, i+1, l)
			}
			if strings.Contains(l, "newTag:") && strings.Contains(string(orig), "name: "+pin.Image) {
				t.Errorf("%s:%d: %s", rel, i+1, l)
			}
		}
		if strings.Count(string(b), "\n") != strings.Count(string(orig), "\n") {
			t.Errorf("%s: line count changed", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sidecar, _ := os.ReadFile(filepath.Join(dst, "install", "repo-server-sidecar.yaml"))
	if !strings.Contains(string(sidecar), "image: "+pin.Image+"@"+digest) {
		t.Errorf("sidecar not pinned:\n%s", sidecar)
	}
	if _, err := pin.Manifests(src, dst, "", digest); err == nil {
		t.Error("an existing destination was overwritten")
	}
	if _, err := pin.Manifests(src, dst+"2", "", "latest"); err == nil {
		t.Error("a tag accepted as digest")
	}
}

// A tree whose kustomization names a file that is not there (Argo CD's
// install.yaml before make argocd-manifests) is refused, not copied.
func TestManifestsMissingResource(t *testing.T) {
	src := t.TempDir()
	k := "resources:\n  - argo-cd-v3.6.2/install.yaml\n  - https://example.com/x.yaml\n  - github.com/org/repo//dir?ref=v1\n" +
		"images:\n  - name: " + pin.Image + "\n    newTag: unpinned\n"
	if err := os.MkdirAll(filepath.Join(src, "argocd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "argocd", "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if _, err := pin.Manifests(src, dst, "", digest); err == nil || !strings.Contains(err.Error(), "argo-cd-v3.6.2/install.yaml, which does not exist") {
		t.Errorf("err %v, want the missing install.yaml named", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("%s written (err %v)", dst, err)
	}
	if err := os.MkdirAll(filepath.Join(src, "argocd", "argo-cd-v3.6.2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "argocd", "argo-cd-v3.6.2", "install.yaml"), []byte("kind: List\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pin.Manifests(src, dst, "", digest); err != nil {
		t.Errorf("with the file: %v", err)
	}
}
