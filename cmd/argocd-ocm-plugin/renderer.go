package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Sidecar settings. They are read from the process environment WITHOUT the
// ARGOCD_ENV_ prefix, so an Application cannot set them: they belong to
// whoever installs the sidecar.
const (
	envTimeout = "ARGOCD_OCM_TIMEOUT" // overall deadline of one render, Go duration (default 50s)
	// ARGOCD_OCM_POLICY (the sidecar policy file), and without it
	// ARGOCD_OCM_PLAIN_HTTP (comma-separated hosts allowed over plain HTTP,
	// with credentials), the signatures and the tenancy switches, are read
	// by package policy (policy.FromEnvironment).
	// envPluginName is the name child Applications of a platform use for this
	// plugin (plugin.yaml metadata.name, "-<spec.version>" appended when set).
	envPluginName = "ARGOCD_OCM_PLUGIN_NAME"
	// envTagTTL is how long the render server shares a tag resolution between
	// generations, Go duration (default 5s; 0 turns sharing off).
	envTagTTL = "ARGOCD_OCM_TAG_TTL"
)

// DefaultTimeout stays below Argo CD's 60 s repo-server deadline so that our
// error, not Argo's SIGTERM, is what the user reads.
const DefaultTimeout = 50 * time.Second

// defaultTagTTL is how long the render server reuses a tag resolution
// (ARGOCD_OCM_TAG_TTL); a re-pushed tag is seen after at most this long
// (Argo CD itself caches generated manifests for much longer).
const defaultTagTTL = 5 * time.Second

// process is what one process builds once and every command line it runs
// shares: the engine (registry connections and tokens, tag resolutions, the
// blob cache, the policy and keys; see argocdocm.Engine) and, in the render
// server, where its generations log.
type process struct {
	engine *argocdocm.Engine
	// log, when set, receives the info and debug lines of every generation:
	// the render server's own log (the container's), so that what a client
	// gets back stays its result and its error line. nil: the command's stderr.
	log io.Writer
}

// newProcess is the process of one command line: nothing outlives it, so
// nothing is shared.
func newProcess() *process {
	return &process{engine: argocdocm.NewEngine()}
}

// newServerProcess is a long-lived process (a render-server worker, serve
// rendering in-process): its generations share registry connections,
// tokens and a tag's resolution for ARGOCD_OCM_TAG_TTL; their log lines
// (ARGOCD_OCM_LOG_LEVEL=debug|info) go to log, the container's log.
func newServerProcess(getenv func(string) string, log io.Writer) (*process, error) {
	ttl := defaultTagTTL
	if v := strings.TrimSpace(getenv(envTagTTL)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%w: %s=%s is not a duration ≥ 0", errdef.ErrInvalidInput, envTagTTL, errdef.Quote(v))
		}
		ttl = d
	}
	return &process{engine: argocdocm.NewEngine(argocdocm.WithSharing(ttl)), log: log}, nil
}

// renderer builds the renderer of one generation (argocdocm.Engine.Renderer)
// from g: its rule (g.Rule, else read from getenv: the sidecar policy's rule
// for the Application's project, or without a policy the default rule of the
// ARGOCD_OCM_* variables, tenancy switches included; the file is read for
// every generation, so that an updated ConfigMap applies to the next one),
// and what a person decides instead (g.Person). Nothing is connected to
// before the rule allowed it. Notes and warnings of every layer (registry,
// cache, pipeline) go to g.Notes. With diag's log level at info or debug,
// the log lines go to stderr (or the server's log) as they happen; prog,
// when not nil, counts the bytes read from registries.
func (p *process) renderer(g argocdocm.Generation, getenv func(string) string, diag *diagnostics, prog *progress) (*argocdocm.Renderer, *slog.Logger, error) {
	logger, err := diag.logger(g.Notes, getenv)
	if err != nil {
		return nil, nil, err
	}
	g.Logger = logger
	if g.Rule == nil {
		g.Getenv = getenv
	}
	if prog != nil {
		g.BodyObserver = prog.add
	}
	r, err := p.engine.Renderer(g)
	if err != nil {
		return nil, nil, err
	}
	r.Opened = logOpened(logger)
	return r, logger, nil
}

// withDeadline applies the overall deadline (flag value, else ARGOCD_OCM_TIMEOUT, else DefaultTimeout).
func withDeadline(ctx context.Context, flagValue time.Duration, getenv func(string) string) (context.Context, context.CancelFunc, error) {
	d := flagValue
	if d == 0 {
		d = DefaultTimeout
		if s := strings.TrimSpace(getenv(envTimeout)); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v <= 0 {
				return nil, nil, fmt.Errorf("%w: %s=%s is not a positive duration", errdef.ErrInvalidInput, envTimeout, errdef.Quote(s))
			}
			d = v
		}
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

// quietStandardLog keeps the standard library's log package off stderr:
// net/http's transport logs through it (for instance "Unsolicited response
// received on idle HTTP channel starting with …", quoting what a registry
// sent), and stderr is the one error line Argo CD shows. The plugin logs
// with slog to explicit writers only.
func quietStandardLog() {
	log.SetOutput(io.Discard)
	log.SetFlags(0)
}
