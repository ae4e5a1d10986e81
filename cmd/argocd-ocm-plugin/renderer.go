package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/pipeline"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/policy"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/render/helm"
)

// Sidecar settings. They are read from the process environment WITHOUT the
// ARGOCD_ENV_ prefix, so an Application cannot set them: they belong to
// whoever installs the sidecar.
const (
	envTimeout = "ARGOCD_OCM_TIMEOUT" // overall deadline of one render, Go duration (default 50s)
	// ARGOCD_OCM_POLICY (the sidecar policy file), and without it
	// ARGOCD_OCM_PLAIN_HTTP (comma-separated hosts allowed over plain HTTP,
	// with credentials), are read by package policy.
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

// sharedRegistry is set by serve before it accepts requests: generations of
// the render server share connections and registry tokens (the credentials
// are the sidecar's, the same for all). nil in a process of its own.
var sharedRegistry *registry.Shared

// sharedTags is set by serve too: a burst of generations of one component
// (an ApplicationSet refresh) resolves its tag once per sharedTagsTTL.
var sharedTags *oci.TagResolutions

// sharedCRDs and sharedUnpacker are set by serve too: the decoded CRDs of
// charts, and the CTF tgz archives unpacked into the blob cache with their
// indexes, are kept between generations. nil in a process of its own (which
// still finds a tgz unpacked in the cache by any process).
var (
	sharedCRDs     *helm.CRDCache
	sharedUnpacker *ctf.Unpacker
)

// defaultTagTTL is how long the render server reuses a tag resolution
// (ARGOCD_OCM_TAG_TTL); a re-pushed tag is seen after at most this long
// (Argo CD itself caches generated manifests for much longer).
const defaultTagTTL = 5 * time.Second

// sidecarRule is the rule of this generation: the sidecar policy's rule for
// the Application's project (ARGOCD_OCM_POLICY, ARGOCD_APP_PROJECT_NAME), or
// without a policy the default rule of the ARGOCD_OCM_* variables. The file
// is read for every generation, so that an updated ConfigMap applies to the
// next one. Its RequireComponentImages and Platform switches are for the
// image guard and the platform renderer.
func sidecarRule(getenv func(string) string) (*policy.Rule, error) {
	return policy.FromEnvironment(getenv)
}

// newRenderer builds the pipeline with a registry client for this one render,
// configured by the sidecar rule: nothing is connected to before the rule
// allowed it. Notes and warnings of every layer (registry, cache, pipeline)
// go to notes. With diag's log level at info or debug, the log lines go to
// stderr as they happen; prog, when not nil, counts the bytes read from
// registries.
func newRenderer(notes io.Writer, getenv func(string) string, diag *diagnostics, prog *progress) (*pipeline.Renderer, *slog.Logger, error) {
	rule, err := sidecarRule(getenv)
	if err != nil {
		return nil, nil, err
	}
	return newRendererFor(notes, rule, getenv, diag, prog)
}

// newRendererFor is newRenderer with the rule already resolved (generate
// resolves it once for the signatures and the renderer).
func newRendererFor(notes io.Writer, rule *policy.Rule, getenv func(string) string, diag *diagnostics, prog *progress) (*pipeline.Renderer, *slog.Logger, error) {
	logger, err := diag.logger(notes, getenv)
	if err != nil {
		return nil, nil, err
	}
	ropts := rule.RegistryOptions(nil)
	if prog != nil {
		ropts = append(ropts, registry.WithBodyObserver(prog.add))
	}
	if sharedRegistry != nil {
		ropts = append(ropts, registry.WithShared(sharedRegistry))
	}
	oopts := []oci.Option{oci.WithRegistryOptions(ropts...), oci.WithLogger(logger)}
	if sharedTags != nil {
		oopts = append(oopts, oci.WithRecentTags(sharedTags))
	}
	src, err := pipeline.NewRegistrySource(oopts...)
	if err != nil {
		return nil, nil, err
	}
	src.AllowLocalArchive = rule.AllowLocalArchive
	unpacker := sharedUnpacker
	if unpacker == nil {
		unpacker = ctf.NewUnpacker()
	}
	return &pipeline.Renderer{
		OpenRepository: src.Open,
		Opened:         logOpened(logger),
		Access:         access.Resolver{Artifacts: src},
		Log:            notes,
		HelmCRDs:       sharedCRDs,
		CTFOptions:     []ctf.Option{ctf.WithUnpacker(unpacker), ctf.WithCache(src.Client.Cache())},
	}, logger, nil
}

// withDeadline applies the overall deadline (flag value, else ARGOCD_OCM_TIMEOUT, else DefaultTimeout).
func withDeadline(ctx context.Context, flagValue time.Duration, getenv func(string) string) (context.Context, context.CancelFunc, error) {
	d := flagValue
	if d == 0 {
		d = DefaultTimeout
		if s := strings.TrimSpace(getenv(envTimeout)); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v <= 0 {
				return nil, nil, fmt.Errorf("%w: %s=%q is not a positive duration", errdef.ErrInvalidInput, envTimeout, s)
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
