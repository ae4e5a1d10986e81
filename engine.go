package argocdocm

import (
	"context"
	"crypto"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/compose/policyregistry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
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
	crds     *helm.CRDCache          // decoded CRDs of charts (WithSharing); nil: decoded per render
	charts   *helm.ChartCache        // loaded charts (WithSharing); nil: loaded per render
	sets     *access.ArtifactSets    // chart layers of artifact sets (WithSharing); nil: unpacked per generation
	descs    *ocimapping.Descriptors // decoded component descriptors (WithSharing); nil: decoded per lookup
	unpacker *ctf.Unpacker           // CTF tgz archives unpacked into the blob cache, with their indexes

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
// (helm.ChartCache, helm.DefaultChartCacheSize), the chart layers of OCI artifact sets by the digest of the
// set (access.ArtifactSets), decoded component descriptors by the digest of their layer
// (ocimapping.Descriptors), and a tag's resolution for tagTTL (0 or less: not shared). Default:
// nothing is shared, for a process that renders once.
func WithSharing(tagTTL time.Duration) EngineOption {
	return func(e *Engine) {
		e.shared = &registry.Shared{}
		e.crds = helm.NewCRDCache(0)
		e.charts = helm.NewChartCache(0)
		e.sets = access.NewArtifactSets(0)
		e.descs = ocimapping.NewDescriptors(0)
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
// ARGOCD_OCM_* variables, with the sidecar's tenancy switches added
// (policy.FromEnvironment). getenv is the generation's environment (the
// project is request-scoped); nil: the process's (os.Getenv). The file is
// read every time, so an updated ConfigMap applies to the next generation.
func (e *Engine) Rule(getenv func(string) string) (*policy.Rule, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	return policy.FromEnvironment(getenv)
}

// Generation is what one render brings to Engine.Renderer.
type Generation struct {
	// Rule is the generation's sidecar rule (Engine.Rule): what the operator
	// allows and requires, which the Request never carries. It configures
	// the registry client, and the renderer applies it to every request:
	// the signatures that must verify (Rule.Signatures, or the variables'
	// Rule.SignatureFlags), local archives (Rule.LocalArchives), the image
	// origin guard (Rule.RequireComponentImages), the platform allowances
	// (Rule.Platform) and forced provenance (Rule.Provenance). nil: the rule
	// of a sidecar without a policy or settings (any repository, the
	// sidecar's own credentials, local archives, no signatures, no image
	// guard, platform children inherit).
	Rule *policy.Rule
	// Getenv, when Rule is nil, is the generation's environment, which the
	// rule is read from (Engine.Rule): the way a caller gets the rule
	// generate applies. Both nil: the rule of no settings, as above.
	Getenv func(string) string
	// Person, when set, is a person running a command (render, verify,
	// convert), not Argo CD generating for an Application: see Person for
	// what it decides instead of Rule. nil: the rule decides everything.
	Person *Person
	// Logger receives the log of the registry client, the cache and the
	// pipeline; nil: discarded.
	Logger *slog.Logger
	// Notes receives notes for people (Renderer.Log); nil: discarded.
	Notes io.Writer
	// BodyObserver, when set, is told the size of every body read from a
	// registry (a progress line).
	BodyObserver func(n int)
}

// Person is what a person running a command decides instead of the
// sidecar's rule, with the command's flags. The rule's repositories,
// credentials, plain-HTTP hosts and local archives still apply; beyond
// them the person's generation may connect to any address
// (policy.Rule.ForPerson), give platform children any project and
// destination, and the rule's signatures, image guard and forced
// provenance give way to the flags.
type Person struct {
	// Signatures must verify (render's and verify's --signature,
	// --public-key, --root-ca); zero: none.
	Signatures Signatures
	// RequireComponentImages turns the image origin guard on
	// (render's --require-component-images).
	RequireComponentImages bool
}

// Renderer builds the renderer of one generation, the one place where a
// generation's rule becomes a renderer: a registry client of its own
// configured by the rule (nothing is connected to before the rule allowed
// it), the signature verifier of the rule (or of g.Person), and the rule's
// allowances applied to every request it renders (local archives, the image
// origin guard, platform children, provenance); it shares the engine's
// connections, tokens, tag resolutions and cache. A key file that cannot be
// read or parsed is an error here, before anything is opened.
func (e *Engine) Renderer(g Generation) (*Renderer, error) {
	rule := g.Rule
	switch {
	case rule == nil && g.Getenv != nil:
		var err error
		if rule, err = e.Rule(g.Getenv); err != nil {
			return nil, err
		}
	case rule == nil:
		rule = policy.Legacy(func(string) string { return "" }, "")
	}
	trust := ruleSignatures(rule)
	if g.Person != nil {
		rule, trust = forPerson(rule, *g.Person), g.Person.Signatures
	}
	v, err := e.verifier(trust)
	if err != nil {
		return nil, err
	}
	src, err := e.source(rule, g)
	if err != nil {
		return nil, err
	}
	return &Renderer{open: src.Open, access: access.Resolver{Artifacts: src, Sets: e.sets}, Log: g.Notes, archiveOptions: e.archiveOpts,
		helmCRDs: e.crds, helmCharts: e.charts, ctfOptions: []ctf.Option{ctf.WithUnpacker(e.unpacker), ctf.WithCache(src.Client.Cache()), ctf.WithDescriptors(e.descs)},
		rule: rule, signatures: v}, nil
}

// forPerson is rule as p decides it: any address (policy.Rule.ForPerson),
// any project and destination for platform children, the image guard as p
// says, no forced provenance.
func forPerson(rule *policy.Rule, p Person) *policy.Rule {
	r := rule.ForPerson()
	r.Platform.AllowOtherProjects, r.Platform.AllowOtherDestinations = true, true
	r.RequireComponentImages = p.RequireComponentImages
	r.Provenance = false
	return r
}

// Render renders one request with a renderer of its own under the rule of
// the process's environment (Generation.Getenv os.Getenv), as generate does: the
// signatures the rule requires, local archives, the image origin guard,
// platform allowances, plain HTTP, addresses and forced provenance;
// deployment definitions (the request's DefinitionFile, else the
// component's own), a kro RGD the component ships, instance Parameters (an
// unknown one is refused). Notes go to log (nil: discarded).
func (e *Engine) Render(ctx context.Context, req Request, log io.Writer) (*Result, error) {
	r, err := e.Renderer(Generation{Getenv: os.Getenv, Notes: log})
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
	oopts := []oci.Option{oci.WithRegistryOptions(ropts...), oci.WithLogger(logger), oci.WithCache(e.blobCache(logger)), oci.WithDescriptors(e.descs)}
	check, err := e.chartCheck(rule, logger)
	if err != nil {
		return nil, err
	}
	if check != nil {
		oopts = append(oopts, oci.WithChartCheck(check))
	}
	if e.tags != nil {
		oopts = append(oopts, oci.WithRecentTags(e.tags))
	}
	src, err := resolve.NewSource(oopts...)
	if err != nil {
		return nil, err
	}
	return src, nil
}

// chartCheck is the check of the rule's chartSignatures (nil without):
// every chart read from a registry needs a cosign signature one of them
// verifies (signing.VerifyArtifact). Key and root files are parsed again
// only when they change.
func (e *Engine) chartCheck(rule *policy.Rule, logger *slog.Logger) (oci.ChartCheck, error) {
	if len(rule.ChartSignatures) == 0 {
		return nil, nil
	}
	trust := make([]signing.ArtifactTrust, 0, len(rule.ChartSignatures))
	for i, c := range rule.ChartSignatures {
		what := fmt.Sprintf("chartSignatures[%d]", i)
		if c.PublicKey != "" {
			k, err := e.parsedFile(c.PublicKey, "cosign public key", what, func(b []byte) (crypto.PublicKey, error) { return signing.ParseCosignPublicKey(b) })
			if err != nil {
				return nil, err
			}
			trust = append(trust, signing.ArtifactTrust{Key: k.(signature.Verifier), KeyName: filepath.Base(c.PublicKey)})
			continue
		}
		k, err := e.keyless(c.Keyless(), what, what)
		if err != nil {
			return nil, err
		}
		trust = append(trust, signing.ArtifactTrust{Keyless: k})
	}
	return func(ctx context.Context, store oci.SignatureStore, manifest ocispec.Descriptor, ref string) error {
		signer, err := signing.VerifyArtifact(ctx, store, manifest, trust)
		if err != nil {
			return fmt.Errorf("chart %s: %w", ref, err)
		}
		logger.Info("chart signature verified", "chart", ref, "signer", signer)
		return nil
	}, nil
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

// verifier is the one place a generation's signature verifier is built
// (Engine.Renderer): s's names paired with their public key and root CA
// files (see Signatures); nil when s names nothing. Files are read every
// time, so a rotated key applies to the next generation; a file is parsed
// again only when it changed.
func (e *Engine) verifier(s Signatures) (*signing.Verifier, error) {
	if len(s.Trust) > 0 {
		return e.signatureVerifier(s.Trust)
	}
	names, keyFiles, rootFiles := s.Names, s.PublicKeys, s.RootCAs
	if len(names) == 0 && len(keyFiles) == 0 && len(rootFiles) == 0 {
		return nil, nil
	}
	if len(names) == 0 || (len(keyFiles) == 0 && len(rootFiles) == 0) {
		return nil, fmt.Errorf("%w: signature verification needs both a signature name and a public key, root CA or trusted root", errdef.ErrInvalidInput)
	}
	for _, l := range []struct {
		what  string
		files []string
	}{{"public keys", keyFiles}, {"root CAs", rootFiles}} { // in this order: the same error every time
		if len(l.files) > 1 && len(l.files) != len(names) {
			return nil, fmt.Errorf("%w: %d signature names but %d %s: give one, or one per name", errdef.ErrInvalidInput, len(names), len(l.files), l.what)
		}
	}
	sigs := make([]policy.Signature, len(names))
	for i, name := range names {
		sigs[i] = policy.Signature{Name: name, PublicKey: pickPerName(keyFiles, i), RootCA: pickPerName(rootFiles, i)}
	}
	return e.signatureVerifier(sigs)
}

// pickPerName is the i-th of values given once for every name or once per
// name ("" when none is given).
func pickPerName(values []string, i int) string {
	switch len(values) {
	case 0:
		return ""
	case 1:
		return values[0]
	}
	if i < len(values) {
		return values[i]
	}
	return ""
}

// signatureVerifier verifies every one of sigs with what it names: a public
// key file and/or a root CA file (with both, a PEM signature that carries a
// certificate is checked against the root CA and every other signature with
// the key, signing.Trust), or a Sigstore trusted root with the identity
// that must have signed (keyless). Files are read every time, so a rotated
// key or root applies to the next generation; a file is parsed again only
// when it changed.
func (e *Engine) signatureVerifier(sigs []policy.Signature) (*signing.Verifier, error) {
	v := &signing.Verifier{Keys: map[string]crypto.PublicKey{}}
	for _, s := range sigs {
		if s.TrustedRoot != "" {
			if s.PublicKey != "" || s.RootCA != "" {
				return nil, fmt.Errorf("%w: signature %s: a trusted root (keyless) and a public key or root CA cannot verify one signature: configure one", errdef.ErrInvalidInput, s.Name)
			}
			k, err := e.keyless(s, s.Name, "signature "+s.Name)
			if err != nil {
				return nil, err
			}
			v.Keys[s.Name] = k
			continue
		}
		if s.Identity() != (signing.Identity{}) || s.PrivateInfrastructure {
			return nil, fmt.Errorf("%w: signature %s: a certificate identity or issuer needs a trusted root", errdef.ErrInvalidInput, s.Name)
		}
		if s.PublicKey == "" && s.RootCA == "" {
			return nil, fmt.Errorf("%w: signature %s has neither a public key, a root CA nor a trusted root", errdef.ErrInvalidInput, s.Name)
		}
		var key crypto.PublicKey
		if s.PublicKey != "" {
			k, err := e.parsedFile(s.PublicKey, "public key", s.Name, signing.ParsePublicKey)
			if err != nil {
				return nil, err
			}
			key = k
		}
		if s.RootCA == "" {
			v.Keys[s.Name] = key
			continue
		}
		r, err := e.parsedFile(s.RootCA, "root CA", s.Name, func(b []byte) (crypto.PublicKey, error) { return signing.ParseRootCAs(b) })
		if err != nil {
			return nil, err
		}
		v.Keys[s.Name] = &signing.Trust{Key: key, Roots: r.(*signing.RootCAs)}
	}
	return v, nil
}

// keyless verifies keyless signatures as s says: with its trusted root
// (parsed again only when the file changed, parsedFile) and the identity
// that must have signed. name is s in parsedFile's errors, what in the
// others.
func (e *Engine) keyless(s policy.Signature, name, what string) (*signing.Keyless, error) {
	r, err := e.parsedFile(s.TrustedRoot, "trusted root", name, func(b []byte) (crypto.PublicKey, error) { return signing.ParseTrustedRoot(b) })
	if err != nil {
		return nil, err
	}
	k, err := signing.NewKeyless(r.(*signing.TrustedRoot), s.Identity(), s.PrivateInfrastructure)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return k, nil
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
