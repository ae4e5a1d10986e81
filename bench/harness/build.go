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
// changes) and the reference CLIs from bench/tools (once per
// bench/tools/go.sum, Go version and flags).
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
	sum, err := os.ReadFile(filepath.Join(toolsDir, "go.sum"))
	if err != nil {
		fatalf("reference tools: %v", err)
	}
	mod, _ := os.ReadFile(filepath.Join(toolsDir, "go.mod"))
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s", sum, mod, runtime.Version(), goVersion(), strings.Join(buildFlags, " "))
	key := hex.EncodeToString(h.Sum(nil))[:16]
	dir := filepath.Join(buildDir, "tools-"+key)
	b.Helm, b.Kustomize = filepath.Join(dir, "helm"), filepath.Join(dir, "kustomize")
	if exists(b.Helm) && exists(b.Kustomize) {
		b.ToolsCached = true
		logf("reference tools cached in %s", dir)
	} else {
		t1 := time.Now()
		logf("building helm and kustomize from bench/tools into %s (first run only; most packages are shared with the harness build)", dir)
		tmp, err := os.MkdirTemp(buildDir, "tools-build-*")
		if err != nil {
			fatalf("%v", err)
		}
		goBuild(toolsDir, tmp+string(filepath.Separator), "helm.sh/helm/v3/cmd/helm", "sigs.k8s.io/kustomize/kustomize/v5")
		os.RemoveAll(dir)
		if err := os.Rename(tmp, dir); err != nil {
			fatalf("%v", err)
		}
		b.ToolsBuildSeconds = time.Since(t1).Seconds()
	}
	b.PluginHelm = depVersion(b.Plugin, "helm.sh/helm/v3")
	b.PluginKustomize = depVersion(b.Plugin, "sigs.k8s.io/kustomize/api")
	b.HelmHelm = depVersion(b.Helm, "helm.sh/helm/v3")
	b.KustomizeAPI = depVersion(b.Kustomize, "sigs.k8s.io/kustomize/api")
	if b.PluginHelm != b.HelmHelm || b.PluginKustomize != b.KustomizeAPI {
		logf("WARNING: the reference tools do not link the product's library versions: plugin helm %s kustomize/api %s, reference helm %s kustomize/api %s (update bench/tools/go.mod)",
			b.PluginHelm, b.PluginKustomize, b.HelmHelm, b.KustomizeAPI)
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
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fatalf("go build %s (in %s): %v", strings.Join(pkgs, " "), dir, err)
	}
}

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
