package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/cmp"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/policy"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/server"
)

// DefaultSocket is where serve listens unless told otherwise; /tmp is the
// sidecar's writable emptyDir.
const DefaultSocket = "/tmp/argocd-ocm-plugin/render.sock"

func newServeCommand(stderr io.Writer, getenv func(string) string) *cobra.Command {
	var socket string
	var parallelism int
	c := &cobra.Command{
		Use:   "serve [--socket PATH] [-- COMMAND [ARG...]]",
		Short: "Long-lived render server for argocd-ocm-client (the sidecar's entrypoint)",
		Long: `serve runs generate and parameters for argocd-ocm-client in one warm process, so that
a generation does not pay this binary's start-up (about 60-75 ms of package initialisation)
each time. The output is the same as that of a generate process.

With COMMAND (the sidecar runs: serve -- /var/run/argocd/argocd-cmp-server), serve starts
it with ARGOCD_OCM_SERVER_SOCKET set, forwards signals to it, reaps orphaned processes
when it is PID 1, and ends when COMMAND ends, with its exit status. Without COMMAND it
serves until SIGTERM or SIGINT.

Request-scoped variables (ARGOCD_APP_*, ARGOCD_ENV_*, PARAM_*, KUBE_VERSION,
KUBE_API_VERSIONS) come from each client; every other setting from serve's own
environment. Generations share registry connections and tokens, and a tag's
resolution for ARGOCD_OCM_TAG_TTL (default 5s, 0: not shared). A client whose environment differs, or a client without a server,
renders in a process of its own.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if socket == "" {
				socket = getenv(server.EnvSocket)
			}
			if socket == "" {
				socket = DefaultSocket
			}
			abs, err := filepath.Abs(socket)
			if err != nil {
				return fmt.Errorf("%w: --socket %q: %v", errdef.ErrInvalidInput, socket, err)
			}
			return serve(cmd.Context(), abs, parallelism, args, stderr, getenv)
		},
	}
	c.Flags().StringVar(&socket, "socket", "", "unix socket to listen on (default $"+server.EnvSocket+", else "+DefaultSocket+")")
	c.Flags().IntVar(&parallelism, "parallelism", 0, "commands rendering at once, the others wait (default 2 × GOMAXPROCS)")
	return c
}

func serve(ctx context.Context, socket string, parallelism int, command []string, stderr io.Writer, getenv func(string) string) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ttl := defaultTagTTL
	if v := strings.TrimSpace(getenv(envTagTTL)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("%w: %s=%q is not a duration ≥ 0", errdef.ErrInvalidInput, envTagTTL, v)
		}
		ttl = d
	}
	l, err := server.Listen(socket)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer os.Remove(socket)
	sharedRegistry = &registry.Shared{}
	serverLog = stderr // ARGOCD_OCM_LOG_LEVEL=debug|info: the generations' log lines
	defer func() { serverLog = nil }()
	if ttl > 0 {
		sharedTags = oci.NewTagResolutions(ttl)
	}
	srv := &server.Server{Handler: requestHandler(log), Parallelism: parallelism, Log: log}
	srvCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(srvCtx, l) }()
	log.Info("render server listening", "socket", socket, "version", buildVersion())
	// The policy is read again by every generation; saying at start-up what
	// it is spares the operator a failed sync to find out.
	if _, err := sidecarRule(getenv); err != nil {
		log.Warn("sidecar policy unusable: every generation fails until it is fixed", "cause", err.Error())
	} else if p := getenv(policy.EnvPolicy); p != "" {
		log.Info("sidecar policy", "file", p)
	}

	if len(command) == 0 {
		<-ctx.Done() // SIGTERM or SIGINT (see run)
		stop()
		return <-served
	}
	// The command's generate processes reach us through the variable; the
	// server lives as long as the command does.
	env := append(os.Environ(), server.EnvSocket+"="+socket)
	code, err := supervise(command, env)
	stop()
	if serr := <-served; serr != nil {
		log.Warn("render server stopped", "cause", serr.Error())
	}
	if err != nil {
		return fmt.Errorf("serve: %s: %w", command[0], err)
	}
	if code != 0 {
		return fmt.Errorf("serve: %s exited with status %d", command[0], code)
	}
	return nil
}

// requestHandler runs one client's command with that client's
// request-scoped environment and directory, and logs one line per command.
func requestHandler(log *slog.Logger) server.Handler {
	return func(ctx context.Context, req *server.Request, stdout, stderr io.Writer) int {
		getenv := req.Getenv(os.Getenv)
		app := getenv(cmp.EnvAppName)
		if len(req.Args) == 0 || (req.Args[0] != "generate" && req.Args[0] != "parameters") {
			fmt.Fprintf(stderr, "argocd-ocm-plugin: application %s: %v: the render server runs generate and parameters only, not %q\n", app, errdef.ErrInvalidInput, req.Args)
			return 2
		}
		if !filepath.IsAbs(req.Dir) {
			fmt.Fprintf(stderr, "argocd-ocm-plugin: application %s: %v: the client's directory %q is not absolute\n", app, errdef.ErrInvalidInput, req.Dir)
			return 2
		}
		start := time.Now()
		var errBuf bytes.Buffer
		code := execute(ctx, req.Args, stdout, &errBuf, getenv, req.Dir)
		// Files of the Application are named as a process in its directory
		// names them (relative), whatever directory argocd-cmp-server used.
		msg := bytes.ReplaceAll(errBuf.Bytes(), []byte(req.Dir+string(filepath.Separator)), nil)
		stderr.Write(msg)
		log.Info("command done", "command", req.Args[0], "application", app, "exit", code, "ms", time.Since(start).Milliseconds())
		return code
	}
}
