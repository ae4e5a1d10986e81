package docs

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const repoRoot = "../../.."

// pages are README.md and every Markdown file under docs/.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(repoRoot, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func extract(t *testing.T, page string) []Block {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, page))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Extract(page, b)
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// kustomizeOffline builds a kustomization directory with the kustomize
// library, refusing remote resources (they need network).
func kustomizeOffline(dir string) error {
	k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return err
	}
	if m := regexp.MustCompile(`(?m)^\s*-\s*(\S*://\S*)`).FindSubmatch(k); m != nil {
		return fmt.Errorf("remote resource %s", m[1])
	}
	_, err = krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	return err
}

// Every YAML block parses and is what it says it is.
func TestDocsYAML(t *testing.T) {
	v, err := NewValidator(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, page := range pages(t) {
		for _, b := range extract(t, page) {
			if b.Kind != YAML {
				continue
			}
			n++
			for _, err := range v.Validate(b) {
				t.Error(err)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d YAML blocks found: is the extraction broken?", n)
	}
}

// Every shell block is valid bash and passes the lints, in page order.
func TestDocsShellStatic(t *testing.T) {
	n := 0
	for _, page := range pages(t) {
		p := &Page{Root: repoRoot, Kustomize: kustomizeOffline}
		for _, b := range extract(t, page) {
			if b.Kind != Shell {
				continue
			}
			n++
			if b.Marker == NoRun && b.Reason == "" {
				t.Errorf("%s: no-run needs a reason", b)
			}
			cmd := exec.Command("bash", "-n")
			cmd.Stdin = strings.NewReader(b.Text)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: bash -n: %v: %s", b, err, out)
			}
			for _, err := range p.Lint(b) {
				t.Error(err)
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d shell blocks found: is the extraction broken?", n)
	}
}

// The shell blocks without a marker run, page by page, in one shell each,
// in a copy of the repository: what a reader pastes into a fresh checkout.
func TestDocsShellRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin and runs the documented commands")
	}
	env := runEnv(t)
	for _, page := range pages(t) {
		var script strings.Builder
		script.WriteString("set -euo pipefail\n")
		var ran []string
		for _, b := range extract(t, page) {
			if b.Kind != Shell || b.Marker != "" {
				continue
			}
			fmt.Fprintf(&script, "echo '>>> docs-test block %s' >&2\n%s\n", b, b.Text)
			ran = append(ran, b.String())
		}
		if len(ran) == 0 {
			continue
		}
		t.Run(strings.ReplaceAll(page, "/", "_"), func(t *testing.T) {
			dir := copyRepository(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
			cmd.Dir, cmd.Env = dir, env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				block := "?"
				if i := strings.LastIndex(out.String(), ">>> docs-test block "); i >= 0 {
					block = strings.SplitN(out.String()[i+len(">>> docs-test block "):], "\n", 2)[0]
				}
				tail := out.String()
				if len(tail) > 4000 {
					tail = "…" + tail[len(tail)-4000:]
				}
				t.Fatalf("block %s failed: %v\n%s", block, err, tail)
			}
			t.Logf("ran %d blocks: %s", len(ran), strings.Join(ran, ", "))
		})
	}
}

// runEnv is the environment of the documented commands: the Go toolchain
// and its caches, a HOME of their own, and no argocd-ocm-plugin on PATH.
func runEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY", "GOROOT", "GOTOOLCHAIN"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "argocd-ocm-plugin")); err == nil {
			continue
		}
		path = append(path, d)
	}
	home := t.TempDir()
	return append(env, "PATH="+strings.Join(path, string(filepath.ListSeparator)), "HOME="+home,
		"ARGOCD_OCM_CACHE_DIR="+filepath.Join(home, "cache"), "DOCKER_CONFIG="+filepath.Join(home, "docker"), "LANG=C.UTF-8")
}

// copyRepository copies the working tree (without .git and bin) into a
// temporary directory.
func copyRepository(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "repo")
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (rel == ".git" || rel == "bin") {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, info.Mode().Perm()|0o200)
		}
		return nil // links and others: not part of a checkout here
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
