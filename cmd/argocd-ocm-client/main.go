// Command argocd-ocm-client is the plugin's generate and parameters command
// in the sidecar (plugin.yaml). It hands the command to the long-lived render
// server (`argocd-ocm-plugin serve`, the sidecar's entrypoint) over the unix
// socket in ARGOCD_OCM_SERVER_SOCKET and prints its result, which is the same
// as that of `argocd-ocm-plugin generate` in a process of its own.
//
// It links only the standard library and starts in a few milliseconds; the
// plugin binary spends 60-75 ms initialising Helm and Kubernetes packages.
//
// Without a server (the variable unset, nobody listening, another protocol or
// environment, a server shutting down) it runs argocd-ocm-plugin with the
// same arguments and environment instead: slower, never different. It runs
// a generation as its child, under the hard memory limit of a render worker
// (see superviseGenerate); other commands replace this process. Once a
// server has acknowledged the request, it never does: the request may still
// be running there, and a second copy would double the load of a generation
// that is already too slow. A server that dies or does not answer within
// the generation's deadline (ARGOCD_OCM_TIMEOUT, default 50s) plus a
// margin (see clientDeadline) is one error line. Nothing is printed before a complete result
// exists, so the error contract of argocd-ocm-plugin (nothing on stdout on
// failure) holds either way.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// envPluginBinary overrides where the fallback finds argocd-ocm-plugin
// (default: next to this executable, then $PATH).
const envPluginBinary = "ARGOCD_OCM_PLUGIN_BINARY"

// The generation's deadline, as the server reads it (a sidecar setting).
const (
	envTimeout     = "ARGOCD_OCM_TIMEOUT"
	defaultTimeout = 50 * time.Second
	// The server answers a generation it stopped at the deadline + 1 s; the
	// client waits a little longer than that: a tenth of the deadline, 2 to 5 s.
	minMargin, maxMargin = 2 * time.Second, 5 * time.Second
)

func clientDeadline(timeout time.Duration) time.Duration {
	return timeout + min(max(timeout/10, minMargin), maxMargin)
}

func main() {
	args := os.Args[1:]
	if socket := os.Getenv(server.EnvSocket); socket != "" && served(args) {
		if code, ok := viaServer(socket, args); ok {
			os.Exit(code)
		}
	}
	bin, err := pluginBinary()
	if err == nil && served(args) {
		os.Exit(superviseGenerate(bin, args))
	}
	if err == nil {
		err = syscall.Exec(bin, append([]string{"argocd-ocm-plugin"}, args...), os.Environ())
	}
	fmt.Fprintf(os.Stderr, "argocd-ocm-client: %v\n", err)
	os.Exit(1)
}

// served reports whether the server runs this command line.
func served(args []string) bool {
	return len(args) > 0 && (args[0] == "generate" || args[0] == "parameters")
}

func viaServer(socket string, args []string) (int, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return 0, false
	}
	timeout := defaultTimeout
	if d, err := time.ParseDuration(strings.TrimSpace(os.Getenv(envTimeout))); err == nil && d > 0 {
		timeout = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), clientDeadline(timeout))
	defer cancel()
	res, err := server.Do(ctx, socket, server.NewRequest(args, dir, os.Environ()))
	switch {
	case errors.Is(err, server.ErrLost):
		why := "it died or stopped answering"
		// The connection's deadline is the context's: its read may time
		// out a moment before the context says so.
		if dl, _ := ctx.Deadline(); ctx.Err() != nil || !time.Now().Before(dl) {
			why = fmt.Sprintf("no answer within %s", clientDeadline(timeout))
		}
		fmt.Fprintf(os.Stderr, "argocd-ocm-client: application %s: render failed: the render server accepted the generation but gave no result (%s)\n", os.Getenv("ARGOCD_APP_NAME"), why)
		return 1, true
	case err != nil:
		return 0, false // nothing printed, nothing run: render in a process instead
	}
	// stdout in one write, as the plugin does.
	if len(res.Stdout) > 0 {
		if _, err := os.Stdout.Write(res.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "argocd-ocm-client: writing the manifests: %v\n", err)
			return 1, true
		}
	}
	os.Stderr.Write(res.Stderr)
	return res.Exit, true
}

// pluginBinary finds argocd-ocm-plugin: ARGOCD_OCM_PLUGIN_BINARY, next to
// this executable, then $PATH.
func pluginBinary() (string, error) {
	if bin := os.Getenv(envPluginBinary); bin != "" {
		return bin, nil
	}
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "argocd-ocm-plugin"); isExecutable(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("argocd-ocm-plugin")
	if err != nil {
		return "", fmt.Errorf("no render server and no argocd-ocm-plugin binary: %v", err)
	}
	return p, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
