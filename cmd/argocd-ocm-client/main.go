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
// environment, a server shutting down) it executes argocd-ocm-plugin with the
// same arguments and environment instead: slower, never different. Nothing is
// printed before a complete result exists, so the error contract of
// argocd-ocm-plugin (nothing on stdout on failure) holds either way.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/server"
)

// envPluginBinary overrides where the fallback finds argocd-ocm-plugin
// (default: next to this executable, then $PATH).
const envPluginBinary = "ARGOCD_OCM_PLUGIN_BINARY"

func main() {
	args := os.Args[1:]
	if socket := os.Getenv(server.EnvSocket); socket != "" && served(args) {
		if code, ok := viaServer(socket, args); ok {
			os.Exit(code)
		}
	}
	err := execPlugin(args)
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
	res, err := server.Do(context.Background(), socket, server.NewRequest(args, dir, os.Environ()))
	if err != nil {
		return 0, false // nothing printed: render in a process instead
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

// execPlugin replaces this process with argocd-ocm-plugin; it returns only on failure.
func execPlugin(args []string) error {
	bin := os.Getenv(envPluginBinary)
	if bin == "" {
		if self, err := os.Executable(); err == nil {
			if p := filepath.Join(filepath.Dir(self), "argocd-ocm-plugin"); isExecutable(p) {
				bin = p
			}
		}
	}
	if bin == "" {
		p, err := exec.LookPath("argocd-ocm-plugin")
		if err != nil {
			return fmt.Errorf("no render server and no argocd-ocm-plugin binary: %v", err)
		}
		bin = p
	}
	return syscall.Exec(bin, append([]string{"argocd-ocm-plugin"}, args...), os.Environ())
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
