package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Build flags shared by the plugin and the reference tools, as their release
// builds link them (Helm's Makefile: CGO_ENABLED=0, -ldflags "-w -s").
// No -trimpath: it changes the compile cache keys, and without it the
// packages compiled for `go run ./bench/harness` (run with CGO_ENABLED=0 too,
// see the Makefile) are reused for the plugin and most of the tools.
var buildFlags = []string{"-ldflags=-s -w"}

// binaries are the executables compared.
type binaries struct {
	Plugin, Helm, Kustomize, Procstat string
	// Client is argocd-ocm-client, the sidecar's generate command, which
	// hands generate to `argocd-ocm-plugin serve`.
	Client string
	// Versions of the libraries linked into each binary (from its build info).
	PluginHelm, PluginKustomize string
	HelmHelm, KustomizeAPI      string
	ToolsCached                 bool
	ToolsBuildSeconds           float64
	PluginBuildSeconds          float64
}

// buildAll builds the plugin and argocd-ocm-client (always: they are what
// changes) and the reference CLIs from bench/tools and bench/tools/kustomize
// (once per go.mod and go.sum of both, Go version and flags).
func buildAll(root, buildDir, pluginBin string) binaries {
	var b binaries
	if err := os.MkdirAll(buildDir, 0o755); err != nil {
		fatalf("%v", err)
	}
	t0 := time.Now()
	if pluginBin != "" {
		b.Plugin = pluginBin
		logf("measuring the given plugin binary %s", b.Plugin)
	} else {
		b.Plugin = filepath.Join(buildDir, "argocd-ocm-plugin")
		logf("building the plugin (%s)", b.Plugin)
		goBuild(root, b.Plugin, "./cmd/argocd-ocm-plugin")
	}
	b.Client = filepath.Join(buildDir, "argocd-ocm-client")
	goBuild(root, b.Client, "./cmd/argocd-ocm-client")
	b.PluginBuildSeconds = time.Since(t0).Seconds()
	b.Procstat = filepath.Join(buildDir, "procstat")
	goBuild(root, b.Procstat, "./bench/procstat")

	toolsDir := filepath.Join(root, "bench", "tools")
	kustomizeDir := filepath.Join(toolsDir, "kustomize")
	h := sha256.New()
	for _, d := range []string{toolsDir, kustomizeDir} {
		sum, err := os.ReadFile(filepath.Join(d, "go.sum"))
		if err != nil {
			fatalf("reference tools: %v", err)
		}
		mod, _ := os.ReadFile(filepath.Join(d, "go.mod"))
		fmt.Fprintf(h, "%s\x00%s\x00", sum, mod)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", runtime.Version(), goVersion(), kustomizeToolchain, strings.Join(buildFlags, " "))
	key := hex.EncodeToString(h.Sum(nil))[:16]
	dir := filepath.Join(buildDir, "tools-"+key)
	b.Helm, b.Kustomize = filepath.Join(dir, "helm"), filepath.Join(dir, "kustomize")
	if exists(b.Helm) && exists(b.Kustomize) {
		b.ToolsCached = true
		logf("reference tools cached in %s", dir)
	} else {
		t1 := time.Now()
		logf("building helm (bench/tools) and kustomize (bench/tools/kustomize) into %s (first run only; most of helm's packages are shared with the harness build)", dir)
		tmp, err := os.MkdirTemp(buildDir, "tools-build-*")
		if err != nil {
			fatalf("%v", err)
		}
		goBuild(toolsDir, tmp+string(filepath.Separator), "helm.sh/helm/v4/cmd/helm")
		goBuild(kustomizeDir, tmp+string(filepath.Separator), "sigs.k8s.io/kustomize/kustomize/v5")
		os.RemoveAll(dir)
		if err := os.Rename(tmp, dir); err != nil {
			fatalf("%v", err)
		}
		b.ToolsBuildSeconds = time.Since(t1).Seconds()
	}
	b.PluginHelm = depVersion(b.Plugin, "helm.sh/helm/v4")
	b.PluginKustomize = depVersion(b.Plugin, "sigs.k8s.io/kustomize/api")
	b.HelmHelm = depVersion(b.Helm, "helm.sh/helm/v4")
	b.KustomizeAPI = depVersion(b.Kustomize, "sigs.k8s.io/kustomize/api")
	if b.PluginHelm != b.HelmHelm {
		logf("WARNING: the reference helm does not link the product's Helm: plugin %s, reference %s (update bench/tools/go.mod)", b.PluginHelm, b.HelmHelm)
	}
	if b.PluginKustomize != b.KustomizeAPI {
		// kustomize v5.8.3 (Argo CD 3.6's) links kustomize/api v0.21.3, which
		// needs Go 1.27; the product stays on Go 1.26 with v0.21.2 (see
		// docs/kustomize.md): the goldens check both render the same.
		logf("note: the reference kustomize links kustomize/api %s, the plugin %s", b.KustomizeAPI, b.PluginKustomize)
	}
	return b
}

func goBuild(dir, out string, pkgs ...string) {
	args := append([]string{"build"}, buildFlags...)
	args = append(args, "-o", out)
	args = append(args, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if strings.HasSuffix(dir, filepath.Join("bench", "tools", "kustomize")) {
		// kustomize v5.8.3 needs Go 1.27 (bench/tools/kustomize/go.mod).
		cmd.Env = append(cmd.Env, "GOTOOLCHAIN="+kustomizeToolchain)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fatalf("go build %s (in %s): %v", strings.Join(pkgs, " "), dir, err)
	}
}

// kustomizeToolchain builds bench/tools/kustomize (the Go release Argo CD
// v3.6 builds with).
const kustomizeToolchain = "go1.27.4"

func goVersion() string {
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// depVersion is the version of module path linked into the binary.
func depVersion(bin, path string) string {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "?"
	}
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "none"
}

func exists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
