// Package pin copies the install manifests with the sidecar image pinned by
// digest: every reference to the image (any tag) becomes repo@sha256:…, and a
// kustomize `images:` entry for it sets the digest instead of a tag.
package pin

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Image is the image name the repository's manifests use.
const Image = "ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin"

var (
	// A reference to Image with an optional tag and digest, not followed by
	// more of a name (so a longer repository name is left alone).
	refRE = regexp.MustCompile(regexp.QuoteMeta(Image) + `(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[0-9a-f]{64})?([^A-Za-z0-9_./:@-]|$)`)
	// A kustomize images entry naming Image, and the newTag/digest lines of
	// that entry.
	imagesNameRE = regexp.MustCompile(`^(\s*-?\s*)name:\s*` + regexp.QuoteMeta(Image) + `\s*$`)
	imagesTagRE  = regexp.MustCompile(`^(\s*)(newTag|digest):\s*\S+\s*$`)
)

// Manifests copies the tree src to dst (created; must not exist) and pins
// every reference to Image to repo@digest (repo "" keeps Image). It returns
// the files it changed, relative to dst. A tree whose kustomizations name a
// local file that is not there is refused: its copy would not build.
func Manifests(src, dst, repo, digest string) ([]string, error) {
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(digest) {
		return nil, fmt.Errorf("pin: digest %q", digest)
	}
	if err := checkKustomizations(src); err != nil {
		return nil, err
	}
	if repo == "" {
		repo = Image
	}
	if _, err := os.Stat(dst); err == nil {
		return nil, fmt.Errorf("pin: %s exists", dst)
	}
	var changed []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("pin: %s is not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := Text(string(b), repo, digest)
		if out != string(b) {
			changed = append(changed, rel)
		}
		return os.WriteFile(target, []byte(out), 0o644)
	})
	return changed, err
}

// checkKustomizations fails when a kustomization under src names a local
// resource or component that does not exist. Argo CD's install.yaml, which
// manifests/argocd installs, is not committed: make argocd-manifests writes
// it from the Go module cache.
func checkKustomizations(src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (d.Name() != "kustomization.yaml" && d.Name() != "kustomization.yml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var k struct {
			Resources  []string `json:"resources"`
			Components []string `json:"components"`
		}
		if err := yaml.Unmarshal(b, &k); err != nil {
			return fmt.Errorf("pin: %s: %w", p, err)
		}
		for _, r := range append(k.Resources, k.Components...) {
			if strings.Contains(r, "//") || strings.Contains(r, "?") {
				continue // a URL or a remote git repository
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), r)); err != nil {
				return fmt.Errorf("pin: %s names %s, which does not exist (Argo CD's install.yaml in manifests/argocd: run make argocd-manifests)", p, r)
			}
		}
		return nil
	})
}

// Text pins the references in one file's text (repo "" keeps Image).
func Text(s, repo, digest string) string {
	if repo == "" {
		repo = Image
	}
	lines := strings.SplitAfter(s, "\n")
	inEntry := false
	entryIndent := 0
	for i, l := range lines {
		body := strings.TrimRight(l, "\n")
		if m := imagesNameRE.FindStringSubmatch(body); m != nil {
			inEntry, entryIndent = true, len(m[1])
			lines[i] = m[1] + "name: " + repo + newline(l)
			continue
		}
		if inEntry {
			if m := imagesTagRE.FindStringSubmatch(body); m != nil && len(m[1]) == entryIndent {
				lines[i] = m[1] + "digest: " + digest + newline(l)
				continue
			}
			if strings.TrimSpace(body) == "" || indent(body) < entryIndent || strings.HasPrefix(strings.TrimSpace(body), "- ") {
				inEntry = false
			}
		}
		lines[i] = refRE.ReplaceAllString(l, repo+"@"+digest+"$3")
	}
	return strings.Join(lines, "")
}

func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

func newline(l string) string {
	if strings.HasSuffix(l, "\n") {
		return "\n"
	}
	return ""
}
