package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/generator"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// generatorFlags are the generator command's settings.
type generatorFlags struct {
	listen, tokenFile, tlsCert, tlsKey string
	ctfDirs                            []string
	listTTL, versionTTL, timeout       time.Duration
	maxConcurrent                      int
	// Registry webhooks (docs/applicationset.md "Registry webhooks").
	webhookSources   []string
	kubeconfig       string
	appSetNamespaces []string
	configMapName    string
}

func newGeneratorCommand(stderr io.Writer, getenv func(string) string, diag *diagnostics) *cobra.Command {
	var f generatorFlags
	c := &cobra.Command{
		Use:   "generator --listen ADDR --token-file FILE [--tls-cert FILE --tls-key FILE]",
		Short: "ApplicationSet plugin generator: component versions as parameter sets (its own Deployment)",
		Long: `generator serves Argo CD's ApplicationSet plugin generator contract:
POST /api/v1/getparams.execute (Authorization: Bearer <token>) answers one parameter set
per selected component version, or per component reference of a platform, each with the
exact version and descriptor digest; GET /healthz. See docs/applicationset.md.

Registry credentials, plain-HTTP hosts, CA files, the blob cache and signature keys come
from the same ARGOCD_OCM_* environment as the sidecar's (ARGOCD_OCM_SIGNATURE and
ARGOCD_OCM_PUBLIC_KEY name the keys the "signature" parameter may ask for).

The token file (a mounted Secret) is read at start, and again when it changes, so a
rotated Secret takes effect without a restart.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGenerator(cmd.Context(), f, stderr, getenv, diag)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.listen, "listen", ":8080", "address to listen on")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token the ApplicationSet controller sends (required)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM), with --tls-key")
	fl.StringVar(&f.tlsKey, "tls-key", "", "private key (PEM) of --tls-cert")
	fl.StringArrayVar(&f.ctfDirs, "ctf-dir", nil, "directory CTFs and component archives may be read from (repeatable; default: none, registries only)")
	fl.DurationVar(&f.listTTL, "list-ttl", generator.DefaultListTTL, "how long version lists (and a prefix's component list) are reused (0 or negative: not at all)")
	fl.DurationVar(&f.versionTTL, "version-ttl", generator.DefaultVersionTTL, "how long a version's descriptor digest is reused (0 or negative: not at all)")
	fl.DurationVar(&f.timeout, "request-timeout", generator.DefaultRequestTimeout, "deadline of one request, waiting for a turn included (keep it below the ConfigMap's requestTimeout)")
	fl.IntVar(&f.maxConcurrent, "max-concurrent", generator.DefaultMaxConcurrent, "requests served at once, at most one per ApplicationSet (its others meanwhile get 503); the others wait")
	fl.StringArrayVar(&f.webhookSources, "webhook-source", nil, "a registry that sends push events to POST /api/v1/webhook/NAME: name=NAME,kind=distribution|harbor|ghcr,secret-file=FILE[,host=HOST[:PORT]] (repeatable)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the Kubernetes API the webhook refreshes ApplicationSets through (default: in the cluster, the pod's service account)")
	fl.StringArrayVar(&f.appSetNamespaces, "applicationset-namespace", []string{"argocd"}, "namespace whose ApplicationSets a webhook event may refresh (repeatable)")
	fl.StringVar(&f.configMapName, "configmap-name", "argocd-ocm-generator", "the ConfigMap plugin generators reference (configMapRef) to ask this generator")
	return c
}

func runGenerator(ctx context.Context, f generatorFlags, stderr io.Writer, getenv func(string) string, diag *diagnostics) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if f.tokenFile == "" {
		return fmt.Errorf("%w: --token-file is required", errdef.ErrInvalidInput)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", errdef.ErrInvalidInput)
	}
	// Without a usable token the generator starts anyway and refuses every
	// request (not ready, /readyz) until the file holds one: installed before
	// its Secret is set, it waits instead of restarting.
	token := &generator.TokenFile{Path: f.tokenFile}
	if err := token.Load(); err != nil {
		log.Warn("no usable token yet: every request is refused and /readyz answers 503 until the token file holds one (set the Secret's token: docs/applicationset.md)",
			"cause", err.Error())
	}
	gen, err := buildGenerator(f, log, getenv, diag)
	if err != nil {
		return err
	}
	h := &generator.Handler{Generator: gen, Token: token.Token, RequestTimeout: f.timeout, MaxConcurrent: f.maxConcurrent, Log: log}
	if h.Webhook, err = buildWebhook(f, gen, log); err != nil {
		return err
	}
	if h.Webhook != nil {
		h.Webhook.Start(ctx)
	}
	return serveGenerator(ctx, generator.NewServer(f.listen, h), f, log)
}

// buildWebhook makes the registry webhook of the flags; nil without sources.
func buildWebhook(f generatorFlags, gen *generator.Generator, log *slog.Logger) (*generator.Webhook, error) {
	if len(f.webhookSources) == 0 {
		return nil, nil
	}
	wh := &generator.Webhook{Generator: gen, Log: log}
	for i, spec := range f.webhookSources {
		src, err := parseWebhookSource(spec)
		if err != nil {
			return nil, fmt.Errorf("%w: --webhook-source #%d: %v", errdef.ErrInvalidInput, i+1, err)
		}
		wh.Sources = append(wh.Sources, src)
	}
	if err := wh.Check(); err != nil {
		return nil, err
	}
	appSets, err := generator.NewKubeAppSets(f.kubeconfig, f.appSetNamespaces, f.configMapName)
	if err != nil {
		return nil, fmt.Errorf("generator: registry webhooks: %w", err)
	}
	wh.AppSets = appSets
	return wh, nil
}

// parseWebhookSource reads name=…,kind=…,secret-file=…[,host=…]; the
// secret file is read at each event (a rotated Secret needs no restart).
func parseWebhookSource(spec string) (generator.WebhookSource, error) {
	var src generator.WebhookSource
	var file string
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return src, errors.New("want name=NAME,kind=KIND,secret-file=FILE[,host=HOST]")
		}
		switch k {
		case "name":
			src.Name = v
		case "kind":
			src.Kind = v
		case "secret-file":
			file = v
		case "host":
			src.Host = v
		default:
			return src, fmt.Errorf("unknown key %s (name, kind, secret-file, host)", errdef.Quote(k))
		}
	}
	if file == "" {
		return src, errors.New("no secret-file")
	}
	secret := &generator.TokenFile{Path: file}
	if err := secret.Load(); err != nil {
		return src, err
	}
	src.Secret = secret.Token
	return src, nil
}

// buildGenerator makes the generator of the flags, under the sidecar
// policy's default rule.
func buildGenerator(f generatorFlags, log *slog.Logger, getenv func(string) string, diag *diagnostics) (*generator.Generator, error) {
	// The sidecar policy's default rule (Argo CD's plugin generator request
	// names no project), read once at start: its gate refuses a repository
	// before any connection, and it scopes credentials and plain HTTP.
	// The generator is a long-lived process of its own: its requests share
	// registry connections and tokens (tag lists are the generator's own
	// TTLs' to reuse, so the engine shares no tag resolutions).
	p := &process{engine: argocdocm.NewEngine(argocdocm.WithSharing(0))}
	rule, err := p.engine.Rule(getenv)
	if err != nil {
		return nil, err
	}
	// A registry client per request (argocdocm.Engine.Renderer), so that the
	// generator's own TTLs decide when a tag list is read again; the first
	// renderer checks the rule's keys at start and gives them.
	regLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn).Writer()
	g := argocdocm.Generation{Rule: rule, Notes: regLog}
	first, _, err := p.renderer(g, getenv, diag, nil)
	if err != nil {
		return nil, err
	}
	keys := first.Verifier()
	open := func(ctx context.Context, spec string) (ocm.Repository, error) {
		r, _, err := p.renderer(g, getenv, diag, nil)
		if err != nil {
			return nil, err
		}
		return r.Open(ctx, argocdocm.Request{Repository: spec})
	}
	// A component whose references carry the kro RGD that renders it is no
	// platform to expand: asked of a renderer, as a render decides.
	rendersItself := func(ctx context.Context, cv ocm.ComponentVersion) (bool, error) {
		r, _, err := p.renderer(g, getenv, diag, nil)
		if err != nil {
			return false, err
		}
		d := cv.Descriptor()
		platformish, err := r.IsPlatform(ctx, cv, argocdocm.Request{Component: d.Name, Version: d.Version})
		return !platformish, err
	}
	opts := generator.Options{Open: open, CTFRoots: f.ctfDirs, ListTTL: f.listTTL, VersionTTL: f.versionTTL, Log: log, RendersItself: rendersItself}
	if keys != nil {
		opts.Keys = keys.Keys
	}
	// A zero flag would mean "default" to the package; the flag's zero means off.
	if f.listTTL == 0 {
		opts.ListTTL = -1
	}
	if f.versionTTL == 0 {
		opts.VersionTTL = -1
	}
	return generator.New(opts)
}

// serveGenerator serves srv on the flags' address until ctx ends, then
// shuts it down (10 s for the requests running).
func serveGenerator(ctx context.Context, srv *http.Server, f generatorFlags, log *slog.Logger) error {
	l, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("generator: %w", err)
	}
	served := make(chan error, 1)
	go func() {
		if f.tlsCert != "" {
			served <- srv.ServeTLS(l, f.tlsCert, f.tlsKey)
		} else {
			served <- srv.Serve(l)
		}
	}()
	log.Info("generator listening", "address", l.Addr().String(), "tls", f.tlsCert != "", "version", buildVersion(),
		"listTTL", f.listTTL.String(), "versionTTL", f.versionTTL.String())
	select {
	case err := <-served:
		return fmt.Errorf("generator: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("generator: shutdown: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("generator: %w", err)
	}
	return nil
}
