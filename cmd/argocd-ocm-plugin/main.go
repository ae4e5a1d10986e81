// Command argocd-ocm-plugin renders OCM component versions into Kubernetes
// manifests, as an Argo CD config management plugin (generate) and for people
// (render).
//
// Contract: on success the manifests go to stdout in one write; on any failure
// the exit code is non-zero, stdout stays EMPTY (a partial stream would make
// Argo CD prune live resources) and stderr gets one line naming the
// Application, component, version and resource.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	// First, for its init: no garbage collection before the heap reaches
	// 16 MiB (a small generation never collects; see its doc).
	_ "github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/startheap"
)

func main() {
	os.Exit(runProcess(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// runProcess is run in a process of its own: a generation is bounded by
// the watchdog (see startWatchdog), which may end the process.
func runProcess(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if bounded(args) {
		out, done := startWatchdog(stdout, stderr, getenv)
		defer done()
		stdout = out
	}
	return run(args, stdout, stderr, getenv)
}

// run executes the CLI in this process; it returns the exit code.
func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	quietStandardLog()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return execute(ctx, newProcess(), args, stdout, stderr, getenv, "", os.Environ())
}

// execute runs one command line: in a process of its own (run), or for a
// client of the render server, with that client's environment and directory.
// p is what the process shares between its command lines (its engine).
// environ lists the command's variables (unknown ARGOCD_ENV_ names are
// refused); nil: not checked.
func execute(ctx context.Context, p *process, args []string, stdout, stderr io.Writer, getenv func(string) string, dir string, environ []string) int {
	return executeCommand(ctx, newRootCommand(p, stdout, stderr, getenv, dir, environ), args, stderr)
}
