package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/cmp"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/cmpservice"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// DefaultSocket is where serve listens unless told otherwise; /tmp is the
// sidecar's writable emptyDir.
const DefaultSocket = "/tmp/argocd-ocm-plugin/render.sock"

func newServeCommand(stderr io.Writer, getenv func(string) string) *cobra.Command {
	var socket, pluginSocket string
	var parallelism int
	c := &cobra.Command{
		Use:   "serve [--socket PATH] [--plugin-socket PATH | -- COMMAND [ARG...]]",
		Short: "Long-lived render server for argocd-ocm-client (the sidecar's entrypoint)",
		Long: `serve runs generate and parameters for argocd-ocm-client in a pool of warm worker
processes (this binary, already past its 60-75 ms of package initialisation), one
generation per worker at a time. The output is the same as that of a generate process.

Limits (sidecar settings; see docs/render-server.md):
  ARGOCD_OCM_TIMEOUT        deadline of a generation from its arrival, queue included (default 50s);
                            a worker still rendering then is killed
  ARGOCD_OCM_WORKERS        most worker processes, i.e. generations at once (default 4;
                            0: render in this process, without limits)
  ARGOCD_OCM_WARM_WORKERS   workers kept started while idle (default 1; one per core starts at
                            once when requests wait, more only behind slow generations)
  ARGOCD_OCM_MAX_MEMORY     private memory of one worker, e.g. 512Mi (default 512Mi); past it the
                            worker is killed (polled, and an address-space limit that keeps it
                            below this + 128 MiB); its GOMEMLIMIT is 80 % of it
  ARGOCD_OCM_TOTAL_MEMORY   private memory of all workers (default 3/4 of the container's memory
                            limit, else 768Mi); past it the worker using the most is killed
  ARGOCD_OCM_RECYCLE_AFTER  generations after which a worker is replaced (default 1000)
  ARGOCD_OCM_METRICS_ADDR   loopback address for Prometheus metrics, e.g. 127.0.0.1:9464 (default off)

With --plugin-socket (the sidecar runs: serve --plugin-socket
/home/argocd/cmp-server/plugins/argocd-ocm-plugin.sock), serve also answers Argo CD's
repo-server there itself, as argocd-cmp-server running plugin.yaml would: the repository
stream is unpacked (only the Application's directory, bounded) and rendered by the same
workers, with no argocd-cmp-server and no process per generation. The socket's name is the
plugin's name in Applications (spec.source.plugin.name).

With COMMAND (serve -- /var/run/argocd/argocd-cmp-server), serve starts
it with ARGOCD_OCM_SERVER_SOCKET set, forwards signals to it, reaps orphaned processes
when it is PID 1, and ends when COMMAND ends, with its exit status. On SIGTERM or SIGINT
it forwards the signal (argocd-cmp-server then removes its socket), waits for running
generations (at most 10s), sends SIGTERM again until COMMAND ends, and kills it 5s later. Without COMMAND it
serves until SIGTERM or SIGINT.

Request-scoped variables (ARGOCD_APP_*, ARGOCD_ENV_*, PARAM_*, KUBE_VERSION,
KUBE_API_VERSIONS) come from each client; every other setting from serve's own
environment. A worker's generations share registry connections and tokens, and a tag's
resolution for ARGOCD_OCM_TAG_TTL (default 5s, 0: not shared). A client whose environment
differs, or a client without a server, renders in a process of its own.`,
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
				return fmt.Errorf("%w: --socket %s: %v", errdef.ErrInvalidInput, errdef.Quote(socket), err)
			}
			if pluginSocket != "" && len(args) > 0 {
				return fmt.Errorf("%w: --plugin-socket and a COMMAND both answer Argo CD: give one", errdef.ErrInvalidInput)
			}
			if pluginSocket != "" {
				if pluginSocket, err = filepath.Abs(pluginSocket); err != nil {
					return fmt.Errorf("%w: --plugin-socket: %v", errdef.ErrInvalidInput, err)
				}
			}
			return serve(cmd.Context(), serveOptions{socket: abs, pluginSocket: pluginSocket, parallelism: parallelism, command: args}, stderr, getenv)
		},
	}
	c.Flags().StringVar(&pluginSocket, "plugin-socket", "", "also answer Argo CD's repo-server (the config management plugin gRPC service) on this unix socket")
	c.Flags().StringVar(&socket, "socket", "", "unix socket to listen on (default $"+server.EnvSocket+", else "+DefaultSocket+")")
	c.Flags().IntVar(&parallelism, "parallelism", 0, "with ARGOCD_OCM_WORKERS=0: commands rendering at once in this process (default 2 × GOMAXPROCS)")
	return c
}

// newServeWorkerCommand is a render worker of serve: not for people (hidden).
// It reads requests from file descriptor 3, set up by its supervisor.
func newServeWorkerCommand(stderr io.Writer, getenv func(string) string) *cobra.Command {
	return &cobra.Command{
		Use:    workerCommand,
		Short:  "A render worker of serve (started by serve, not for people)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn := os.NewFile(server.WorkerFD, "render-supervisor")
			if conn == nil {
				return fmt.Errorf("%w: %s runs under serve only", errdef.ErrInvalidInput, workerCommand)
			}
			p, err := newServerProcess(getenv, stderr)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			// SIGTERM and SIGINT are the supervisor's to act on: a worker
			// finishes its generation, or is killed.
			return server.ServeWorker(context.WithoutCancel(cmd.Context()), conn, requestHandler(p), log)
		},
	}
}

const workerCommand = "serve-worker"

type serveOptions struct {
	socket, pluginSocket string
	parallelism          int
	command              []string
}

func serve(ctx context.Context, o serveOptions, stderr io.Writer, getenv func(string) string) error {
	socket, command := o.socket, o.command
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	settings, err := readServeSettings(getenv)
	if err != nil {
		return err
	}
	metrics := server.NewMetrics()
	srv := &server.Server{Parallelism: o.parallelism, Log: log, Describe: describeRequest, Metrics: metrics}
	if settings.workers == 0 {
		p, err := newServerProcess(getenv, stderr)
		if err != nil {
			return err
		}
		srv.Handler = requestHandler(p)
	} else {
		pool, err := settings.pool(stderr, log, metrics)
		if err != nil {
			return err
		}
		if os.Getenv("GOGC") == "" && o.pluginSocket == "" {
			// The supervisor renders nothing: its heap is the packages'
			// initialised data (~5 MiB) and a few KiB per request. A
			// collection per MiB of garbage keeps it near that, for a few ms
			// of CPU per hundred generations. Not so when it answers the
			// repo-server itself: it then holds each result (10 MB of CRDs:
			// 227 ms of server CPU a generation at GOGC=20, 102 ms at the
			// default; bench G19 crds-10mb, load 1.8).
			debug.SetGCPercent(20)
		}
		if err := pool.Start(); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer pool.Close()
		srv.Pool = pool
		metrics.Stats = pool.Stats
	}
	if settings.metricsAddr != "" {
		stopMetrics, err := serveMetrics(settings.metricsAddr, metrics)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer stopMetrics()
	}
	l, err := server.Listen(socket)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer os.Remove(socket)
	srvCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(srvCtx, l) }()
	log.Info("render server listening", "socket", socket, "version", buildVersion(), "workers", settings.workers,
		"deadline", settings.deadline.String(), "max_memory_mib", settings.maxMemory>>20, "total_memory_mib", settings.totalMemory>>20)
	// The policy is read again by every generation; saying at start-up what
	// it is spares the operator a failed sync to find out.
	if _, err := policy.FromEnvironment(getenv); err != nil {
		log.Warn("sidecar policy unusable: every generation fails until it is fixed", "cause", err.Error())
	} else if p := getenv(policy.EnvPolicy); p != "" {
		log.Info("sidecar policy", "file", p)
	}

	if o.pluginSocket != "" {
		pl, err := server.Listen(o.pluginSocket)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer os.Remove(o.pluginSocket)
		svc := &cmpservice.Service{Runner: srv, Log: log}
		pluginServed := make(chan error, 1)
		go func() { pluginServed <- svc.Serve(srvCtx, pl) }()
		defer func() {
			if err := <-pluginServed; err != nil {
				log.Warn("plugin service stopped", "cause", err.Error())
			}
		}()
		log.Info("plugin service listening", "socket", o.pluginSocket)
	}
	if len(command) == 0 {
		<-ctx.Done() // SIGTERM or SIGINT (see run)
		stop()
		return <-served
	}
	// The command's generate processes reach us through the variable; the
	// server lives as long as the command does.
	env := append(os.Environ(), server.EnvSocket+"="+socket)
	code, err := supervise(command, env, stopPolicy{Running: srv.Running})
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

// describeRequest names a request in the server's log and limit errors:
// never values or credentials.
func describeRequest(req *server.Request) server.Description {
	return describeEnv(req.Getenv(func(string) string { return "" }))
}

func describeEnv(getenv func(string) string) server.Description {
	d := server.Description{Application: getenv(cmp.EnvAppName), Project: getenv(cmp.EnvProjectName)}
	if ps := getenv(cmp.EnvAppParameters); ps != "" && len(ps) < 64<<10 {
		if params, err := cmp.ParseParameters(ps); err == nil {
			if p, ok := params[param.Component]; ok && p.String != nil {
				d.Component = *p.String
			}
			if p, ok := params[param.Version]; ok && p.String != nil {
				d.Version = *p.String
			}
		}
	}
	if d.Component == "" {
		d.Component = getenv("ARGOCD_ENV_COMPONENT")
	}
	if d.Version == "" {
		d.Version = getenv("ARGOCD_ENV_VERSION")
	}
	return d
}

// requestHandler runs one client's command with that client's
// request-scoped environment and directory, in p (the process's engine).
func requestHandler(p *process) server.Handler {
	return func(ctx context.Context, req *server.Request, stdout, stderr io.Writer) int {
		getenv := req.Getenv(os.Getenv)
		app := getenv(cmp.EnvAppName)
		if len(req.Args) == 0 || (req.Args[0] != "generate" && req.Args[0] != "parameters") {
			fmt.Fprintf(stderr, "argocd-ocm-plugin: application %s: %v: the render server runs generate and parameters only, not %s\n", app, errdef.ErrInvalidInput, errdef.Quote(strings.Join(req.Args, " ")))
			return 2
		}
		if !filepath.IsAbs(req.Dir) {
			fmt.Fprintf(stderr, "argocd-ocm-plugin: application %s: %v: the client's directory %s is not absolute\n", app, errdef.ErrInvalidInput, errdef.Quote(req.Dir))
			return 2
		}
		var errBuf bytes.Buffer
		code := executeCommand(ctx, newServedCommand(req.Args[0], p, stdout, &errBuf, getenv, req.Dir, req.Env), req.Args, &errBuf)
		// Files of the Application are named as a process in its directory
		// names them (relative), whatever directory argocd-cmp-server used.
		msg := bytes.ReplaceAll(errBuf.Bytes(), []byte(req.Dir+string(filepath.Separator)), nil)
		stderr.Write(msg)
		return code
	}
}
