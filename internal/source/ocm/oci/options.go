package oci

import (
	"context"
	"io"
	"log/slog"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
)

// Defaults of NewClient and New.
const (
	// DefaultTimeout bounds one operation (a lookup, a listing, opening and
	// reading a blob or chart), below Argo CD's 60 s generation deadline. The
	// CLI should also bound the whole generation with its own context.
	DefaultTimeout = 50 * time.Second
	// DefaultMaxBlobSize bounds a blob or chart the plugin downloads.
	DefaultMaxBlobSize int64 = 1 << 30
	// DefaultMaxIndexSize bounds a classic Helm repository's index.yaml.
	DefaultMaxIndexSize int64 = 64 << 20
)

// Option configures NewClient and New.
type Option func(*options)

type options struct {
	recentTags *TagResolutions
	client     *Client
	reg        *registry.Client
	regOpts    []registry.Option
	cache      *cache.Cache
	cacheSet   bool
	timeout    time.Duration
	maxBlob    int64
	maxIndex   int64
	logger     *slog.Logger
	allowPlain []string
	chartCheck ChartCheck
	descs      *ocimapping.Descriptors
}

// SignatureStore is the repository of an artifact, read for the
// artifact's signatures (an oras-go remote.Repository).
type SignatureStore interface {
	Resolve(ctx context.Context, reference string) (ocispec.Descriptor, error)
	Fetch(ctx context.Context, target ocispec.Descriptor) (io.ReadCloser, error)
	Referrers(ctx context.Context, desc ocispec.Descriptor, artifactType string, fn func(referrers []ocispec.Descriptor) error) error
}

// ChartCheck decides whether the chart manifest of ref, in store, may be
// read (its cosign signature, see signing.VerifyArtifact).
type ChartCheck func(ctx context.Context, store SignatureStore, manifest ocispec.Descriptor, ref string) error

// WithChartCheck makes OpenChart ask check before it reads a chart from a
// registry; a refusal is OpenChart's error.
func WithChartCheck(check ChartCheck) Option { return func(o *options) { o.chartCheck = check } }

// WithClient makes New use an existing Client (its registry connections,
// credentials, cache and tag memo). Other options are then ignored by New.
func WithClient(c *Client) Option { return func(o *options) { o.client = c } }

// WithRegistryClient uses an existing registry client (credentials, TLS,
// plain-HTTP policy, retries). Default: registry.NewClient(WithRegistryOptions…).
func WithRegistryClient(rc *registry.Client) Option { return func(o *options) { o.reg = rc } }

// WithRegistryOptions configures the registry client NewClient builds.
func WithRegistryOptions(opts ...registry.Option) Option {
	return func(o *options) { o.regOpts = append(o.regOpts, opts...) }
}

// WithPlainHTTP allows plain HTTP to these registry hosts (host[:port]).
// An http:// repository URL given to New allows its host as well.
func WithPlainHTTP(hosts ...string) Option {
	return func(o *options) { o.allowPlain = append(o.allowPlain, hosts...) }
}

// WithRecentTags shares tag resolutions, with the manifests they named, with
// every client given r, for r's time to live (see NewTagResolutions). Default:
// a tag is resolved once per client.
func WithRecentTags(r *TagResolutions) Option { return func(o *options) { o.recentTags = r } }

// WithDescriptors keeps decoded component descriptors in ds, shared with
// every client given ds (see ocimapping.Descriptors: by the verified digest
// of the descriptor layer, which each lookup still fetches). Default: a
// descriptor is decoded by each lookup.
func WithDescriptors(ds *ocimapping.Descriptors) Option { return func(o *options) { o.descs = ds } }

// WithCache sets the blob cache. Default: cache.Open(cache.DefaultDir()),
// which degrades to no cache with a warning when the directory is unusable.
// nil disables caching.
func WithCache(c *cache.Cache) Option {
	return func(o *options) { o.cache, o.cacheSet = c, true }
}

// WithTimeout bounds each operation (default DefaultTimeout; 0 or less: no
// bound beyond the caller's context).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithMaxBlobSize bounds blobs and charts (default DefaultMaxBlobSize).
// n <= 0 keeps the default.
func WithMaxBlobSize(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBlob = n
		}
	}
}

// WithMaxIndexSize bounds a Helm repository index.yaml (default
// DefaultMaxIndexSize). n <= 0 keeps the default.
func WithMaxIndexSize(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxIndex = n
		}
	}
}

// WithLogger receives warnings; default slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

func defaultOptions() options {
	return options{timeout: DefaultTimeout, maxBlob: DefaultMaxBlobSize, maxIndex: DefaultMaxIndexSize}
}
