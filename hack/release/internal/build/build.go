// Package build compiles the release binaries: static (CGO_ENABLED=0),
// -trimpath, no VCS stamp, the version set with -X main.version, so the same
// source, Go toolchain and version give the same bytes.
package build

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Commands are the main packages of a release, relative to the module root.
var Commands = []string{"./cmd/argocd-ocm-plugin", "./cmd/argocd-ocm-client"}

// Target is one GOOS/GOARCH.
type Target struct{ OS, Arch string }

func (t Target) String() string { return t.OS + "/" + t.Arch }

// ParseTargets parses "linux/amd64,darwin/arm64".
func ParseTargets(s string) ([]Target, error) {
	var ts []Target
	for _, f := range strings.Split(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || os == "" || arch == "" {
			return nil, fmt.Errorf("platform %q: want os/arch", f)
		}
		ts = append(ts, Target{os, arch})
	}
	return ts, nil
}

// Options of Binaries.
type Options struct {
	// Root is the product module's directory.
	Root string
	// Go is the go command ("go" when empty).
	Go string
	// Version is stamped into main.version.
	Version string
}

// LDFlags are the linker flags of every release binary.
func LDFlags(version string) string { return "-s -w -X main.version=" + version }

// Binaries builds Commands for t into dir and returns the paths by command
// name (argocd-ocm-plugin, argocd-ocm-client).
func Binaries(ctx context.Context, o Options, t Target, dir string) (map[string]string, error) {
	goCmd := o.Go
	if goCmd == "" {
		goCmd = "go"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	args := append([]string{"build", "-trimpath", "-buildvcs=false", "-ldflags", LDFlags(o.Version), "-o", out + string(filepath.Separator)}, Commands...)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.OS, "GOARCH="+t.Arch, "GOFLAGS=-buildvcs=false")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s: %w\n%s", t, err, stderr.Bytes())
	}
	paths := map[string]string{}
	for _, c := range Commands {
		n := filepath.Base(c)
		p := filepath.Join(out, n)
		if t.OS == "windows" {
			p += ".exe"
		}
		if _, err := os.Stat(p); err != nil {
			return nil, err
		}
		paths[n] = p
	}
	return paths, nil
}
