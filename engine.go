package argocdocm

import (
	"context"
	"crypto"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/compose/policyregistry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// Engine owns what outlives one render: registry connections and tokens,
// recent tag resolutions, the blob cache, the sidecar policy and the
// verification keys. Build one per process (a command, each render-server
// worker, the bench) and one Renderer per generation from it.
//
// This is where the lifetimes are decided, once: a generation's registry
// client (oci.Client and its registry.Client) is its own, because its gate,
// credentials and plain-HTTP hosts are the sidecar rule of that generation's
// Application, and it remembers tag resolutions for that generation only.
// What may safely outlive a generation (connections and tokens, keyed by
// credential; tag resolutions for a few seconds) is the engine's, and only
// with WithSharing.
//
// An Engine is safe for concurrent use.
type Engine struct {
	shared   *registry.Shared    // nil: connections and tokens per generation
	tags     *oci.TagResolutions // nil: a tag is resolved by each generation
	cacheDir string              // where each generation opens the blob cache ("": disabled)
	cacheSet bool                // by WithBlobCacheDir; else cache.DefaultDir
	cacheErr error
	// cacheUsage is the size estimate of cacheDir the generations' caches
	// share: the directory is listed once per Engine, not per generation.
	cacheUsage *cache.Usage
	// of WithPlainHTTP and WithoutDockerConfig, after the rule's
	regOpts  []registry.Option
	crds     *helm.CRDCache   // decoded CRDs of charts (WithSharing); nil: decoded per render
	charts   *helm.ChartCache // loaded charts (WithSharing); nil: loaded per render
	unpacker *ctf.Unpacker    // CTF tgz archives unpacked into the blob cache, with their indexes

	archiveOpts []archive.Option // of WithArchiveLimits

	keysMu sync.Mutex
	keys   map[string]publicKey // by kind ("public key", "root CA") and file
}

type publicKey struct {
	sum [sha256.Size]byte // of the file it was parsed from
	key crypto.PublicKey
}

// EngineOption configures NewEngine.
type EngineOption func(*Engine)

// WithSharing makes the generations of a long-lived process (a render-server
// worker, the ApplicationSet generator) share registry connections and
// tokens, the decoded CRDs of charts (helm.CRDCache), loaded charts by the digest of their archive
// (helm.ChartCache, helm.DefaultChartCacheSize), and a tag's resolution for tagTTL (0 or less: not shared). Default:
// nothing is shared, for a process that renders once.
func WithSharing(tagTTL time.Duration) EngineOption {
	return func(e *Engine) {
		e.shared = &registry.Shared{}
		e.crds = helm.NewCRDCache(0)
		e.charts = helm.NewChartCache(0)
		e.tags = nil
		if tagTTL > 0 {
			e.tags = oci.NewTagResolutions(tagTTL)
		}
	}
}

// WithBlobCacheDir makes every generation keep blobs (descriptors,
// charts, trees) in the cache directory dir; "" disables the cache. Each
// generation opens it with its own logger, so that a cache warning reaches
// the notes of the generation that met it and no other tenant's. Default:
// $ARGOCD_OCM_CACHE_DIR, else $XDG_CACHE_HOME/argocd-ocm-plugin, else
// ~/.cache/argocd-ocm-plugin (disabled, with a warning, without a home).
func WithBlobCacheDir(dir string) EngineOption {
	return func(e *Engine) { e.cacheDir, e.cacheSet = dir, true }
}

// WithPlainHTTP lets every generation reach these registry hosts
// (host[:port]) over plain HTTP, in addition to the plain-HTTP hosts of its
// sidecar rule: for a program that owns the registry (a test, the bench).
// Default: none beyond the rule's.
func WithPlainHTTP(hosts ...string) EngineOption {
	return func(e *Engine) { e.regOpts = append(e.regOpts, registry.WithPlainHTTP(hosts...)) }
}

// WithAllowedAddresses lets every generation connect to these addresses
// (IP addresses, CIDR ranges, hosts or host:port), which the sidecar rule
// refuses by default (loopback, link-local, metadata; see
// registry.AddressPolicy): for a program that owns a registry there (a test,
// the bench). Default: none beyond the rule's allowAddresses.
func WithAllowedAddresses(allow ...string) EngineOption {
	return func(e *Engine) { e.regOpts = append(e.regOpts, registry.WithAllowedAddresses(allow...)) }
}

// WithoutDockerConfig makes every generation's registry client read no
// Docker config file, whatever its rule allows. Default: a rule that uses
// the sidecar's own credentials reads the Docker config.
func WithoutDockerConfig() EngineOption {
	return func(e *Engine) { e.regOpts = append(e.regOpts, registry.WithoutDockerConfig()) }
}

// WithArchiveLimits bounds every directoryTree resource as it is unpacked:
// at most maxSize bytes of file content and maxFiles entries in all. A
// value of 0 or less keeps its default, so a limit cannot be switched off:
// 256 MiB and 10 000 files (package archive's DefaultMaxSize and
// DefaultMaxFiles).
func WithArchiveLimits(maxSize int64, maxFiles int) EngineOption {
	return func(e *Engine) {
		e.archiveOpts = []archive.Option{archive.WithMaxSize(maxSize), archive.WithMaxFiles(maxFiles)}
	}
}

// NewEngine builds an Engine; see the options for defaults.
func NewEngine(opts ...EngineOption) *Engine {
	e := &Engine{keys: map[string]publicKey{}, unpacker: ctf.NewUnpacker()}
	for _, opt := range opts {
		opt(e)
	}
	if !e.cacheSet {
		e.cacheDir, e.cacheErr = cache.DefaultDir()
	}
	e.cacheUsage = cache.NewUsage()
	return e
}

// Rule reads the sidecar rule of one generation: the policy file's rule for
// the Application's project, or without a policy the default rule of the
// ARGOCD_OCM_* variables (policy.FromEnvironment). getenv is the
// generation's environment (the project is request-scoped); nil: the
// process's (os.Getenv). The file is read every time, so an updated ConfigMap applies
// to the next generation.
func (e *Engine) Rule(getenv func(string) string) (*policy.Rule, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	return policy.FromEnvironment(getenv)
}

// Generation is what one render brings to Engine.Renderer.
type Generation struct {
	// Rule is the generation's sidecar rule (Engine.Rule): what the operator
	// allows, which the Request never carries. It configures the registry
	// client, and the renderer applies it to every request: local archives
	// (Rule.LocalArchives), the image origin guard
	// (Rule.RequireComponentImages) and the platform allowances
	// (Rule.Platform). nil: the rule of a sidecar without a policy or
	// settings (any repository, the sidecar's own credentials, local
	// archives, no image guard, platform children inherit).
	Rule *policy.Rule
	// Logger receives the log of the registry client, the cache and the
	// pipeline; nil: discarded.
	Logger *slog.Logger
	// Notes receives notes for people (Renderer.Log); nil: discarded.
	Notes io.Writer
	// BodyObserver, when set, is told the size of every body read from a
	// registry (a progress line).
	BodyObserver func(n int)
}

// Renderer builds the renderer of one generation: a registry client of its
// own configured by g.Rule (nothing is connected to before the rule allowed
// it), the rule's allowances applied to every request it renders (local
// archives, the image origin guard, platform children), sharing the engine's connections, tokens, tag resolutions and cache.
// The caller may set signatures, provenance and Explain on the result
// before it renders.
func (e *Engine) Renderer(g Generation) (*Renderer, error) {
	rule := g.Rule
	if rule == nil {
		rule = policy.Legacy(func(string) string { return "" }, "")
	}
	src, err := e.source(rule, g)
	if err != nil {
		return nil, err
	}
	return &Renderer{OpenRepository: src.Open, access: access.Resolver{Artifacts: src}, Log: g.Notes, archiveOptions: e.archiveOpts,
		helmCRDs: e.crds, helmCharts: e.charts, ctfOptions: []ctf.Option{ctf.WithUnpacker(e.unpacker), ctf.WithCache(src.Client.Cache())},
		rule: rule}, nil
}

// Render renders one request with a renderer of its own under the
// rule of the process's environment (Engine.Rule(nil)), as the plugin
// does: deployment definitions (the request's DefinitionFile, else the
// component's own), a kro RGD the component ships, instance Parameters
// (an unknown one is refused). Notes go to log (nil: discarded).
func (e *Engine) Render(ctx context.Context, req Request, log io.Writer) (*Result, error) {
	rule, err := e.Rule(nil)
	if err != nil {
		return nil, errdef.Wrap(err, errdef.Error{Application: req.Application, Component: req.Component, Version: req.Version})
	}
	r, err := e.Renderer(Generation{Rule: rule, Notes: log})
	if err != nil {
		return nil, errdef.Wrap(err, errdef.Error{Application: req.Application, Component: req.Component, Version: req.Version})
	}
	return r.Render(ctx, req)
}

// source is the registry source of one generation, configured by its rule.
func (e *Engine) source(rule *policy.Rule, g Generation) (*resolve.Source, error) {
	logger := g.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ropts := append(policyregistry.For(rule, nil), e.regOpts...)
	if g.BodyObserver != nil {
		ropts = append(ropts, registry.WithBodyObserver(g.BodyObserver))
	}
	if e.shared != nil {
		ropts = append(ropts, registry.WithShared(e.shared))
	}
	oopts := []oci.Option{oci.WithRegistryOptions(ropts...), oci.WithLogger(logger), oci.WithCache(e.blobCache(logger))}
	if e.tags != nil {
		oopts = append(oopts, oci.WithRecentTags(e.tags))
	}
	src, err := resolve.NewSource(oopts...)
	if err != nil {
		return nil, err
	}
	src.AllowLocalArchive = rule.AllowLocalArchive
	return src, nil
}

// blobCache is the cache of one generation, its warnings to logger.
func (e *Engine) blobCache(logger *slog.Logger) *cache.Cache {
	switch {
	case e.cacheErr != nil:
		logger.Warn("blob cache disabled", "cause", e.cacheErr.Error())
		return nil
	case e.cacheDir == "":
		return nil
	}
	return cache.Open(e.cacheDir, cache.WithLogger(logger), cache.WithUsage(e.cacheUsage))
}

// Verifier pairs signature names with public key files and root CA files,
// each list holding one file per name or one for every name ("" in a
// per-name list: none for that name; a rule's SignatureFlags, or the CLI's
// --signature, --public-key and --root-ca): nil when nothing is given. Every
// name needs a key or a root CA; with both, a PEM signature that carries a
// certificate is checked against the root CA and every other signature with
// the key (signing.Trust). Files are read every time, so a rotated key
// applies to the next generation; a file is parsed again only when it
// changed.
func (e *Engine) Verifier(names, keyFiles, rootFiles []string) (*signing.Verifier, error) {
	if len(names) == 0 && len(keyFiles) == 0 && len(rootFiles) == 0 {
		return nil, nil
	}
	if len(names) == 0 || (len(keyFiles) == 0 && len(rootFiles) == 0) {
		return nil, fmt.Errorf("%w: signature verification needs both a signature name and a public key or root CA", errdef.ErrInvalidInput)
	}
	for what, files := range map[string][]string{"public keys": keyFiles, "root CAs": rootFiles} {
		if len(files) > 1 && len(files) != len(names) {
			return nil, fmt.Errorf("%w: %d signature names but %d %s: give one, or one per name", errdef.ErrInvalidInput, len(names), len(files), what)
		}
	}
	pick := func(files []string, i int) string {
		switch len(files) {
		case 0:
			return ""
		case 1:
			return files[0]
		}
		return files[i]
	}
	v := &signing.Verifier{Keys: map[string]crypto.PublicKey{}}
	for i, name := range names {
		kf, rf := pick(keyFiles, i), pick(rootFiles, i)
		if kf == "" && rf == "" {
			return nil, fmt.Errorf("%w: signature %s has neither a public key nor a root CA", errdef.ErrInvalidInput, name)
		}
		var key crypto.PublicKey
		if kf != "" {
			k, err := e.parsedFile(kf, "public key", name, signing.ParsePublicKey)
			if err != nil {
				return nil, err
			}
			key = k
		}
		if rf == "" {
			v.Keys[name] = key
			continue
		}
		r, err := e.parsedFile(rf, "root CA", name, func(b []byte) (crypto.PublicKey, error) { return signing.ParseRootCAs(b) })
		if err != nil {
			return nil, err
		}
		v.Keys[name] = &signing.Trust{Key: key, Roots: r.(*signing.RootCAs)}
	}
	return v, nil
}

// parsedFile reads file and parses it with parse, reusing the last result
// while the file's bytes are unchanged.
func (e *Engine) parsedFile(file, what, name string, parse func([]byte) (crypto.PublicKey, error)) (crypto.PublicKey, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %s for signature %s: %v", errdef.ErrInvalidInput, what, name, err)
	}
	sum := sha256.Sum256(b)
	cacheKey := what + "\x00" + file
	e.keysMu.Lock()
	k, ok := e.keys[cacheKey]
	e.keysMu.Unlock()
	if ok && k.sum == sum {
		return k.key, nil
	}
	key, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, file, err)
	}
	e.keysMu.Lock()
	e.keys[cacheKey] = publicKey{sum: sum, key: key}
	e.keysMu.Unlock()
	return key, nil
}
