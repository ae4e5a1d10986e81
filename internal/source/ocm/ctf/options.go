package ctf

import (
	"context"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
)

// Option configures Open.
type Option func(*options)

type options struct {
	maxSize    int64
	maxEntries int
	tempDir    string
	unpacker   *Unpacker
	cache      *cache.Cache
	ctx        context.Context
	origin     string // see WithOrigin
	descs      *ocimapping.Descriptors
}

func (o options) context() context.Context {
	if o.ctx == nil {
		return context.Background()
	}
	return o.ctx
}

// Defaults: an offline bundle may hold a whole platform with its images, so the
// limits are generous but finite.
const (
	DefaultMaxSize    int64 = 16 << 30 // 16 GiB of uncompressed archive
	DefaultMaxEntries       = 100_000
)

func defaultOptions() options {
	return options{maxSize: DefaultMaxSize, maxEntries: DefaultMaxEntries}
}

// WithMaxSize bounds the uncompressed size of a tar or tgz archive (default 16 GiB).
func WithMaxSize(n int64) Option { return func(o *options) { o.maxSize = n } }

// WithMaxEntries bounds the number of entries of a tar or tgz archive (default 100 000).
func WithMaxEntries(n int) Option { return func(o *options) { o.maxEntries = n } }

// WithTempDir sets where a tgz is decompressed (default os.TempDir()).
func WithTempDir(dir string) Option { return func(o *options) { o.tempDir = dir } }

// WithDescriptors keeps the decoded descriptors of the repository's
// versions in ds, shared with every repository given ds (see
// ocimapping.Descriptors: by the verified digest of the descriptor layer,
// which each lookup still reads). Default: a descriptor is decoded by each
// lookup.
func WithDescriptors(ds *ocimapping.Descriptors) Option { return func(o *options) { o.descs = ds } }
