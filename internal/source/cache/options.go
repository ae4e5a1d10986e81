package cache

import (
	"log/slog"
	"time"
)

// Defaults of Open.
const (
	// DefaultMaxSize caps the bytes under blobs/ (2 GiB).
	DefaultMaxSize int64 = 2 << 30
	// DefaultLockTimeout bounds the wait for another download of the same
	// blob even while it progresses (a stalled one is given up on after 2 s);
	// then the waiter downloads without caching.
	DefaultLockTimeout = 30 * time.Second
	// staleTempAge: temporary files older than this belong to dead downloads.
	staleTempAge = time.Hour
	// touchInterval: a read refreshes an entry's mtime at most this often.
	touchInterval = time.Minute
)

// EnvDir overrides the default cache directory.
const EnvDir = "ARGOCD_OCM_CACHE_DIR"

// Option configures Open.
type Option func(*options)

type options struct {
	maxSize     int64
	lockTimeout time.Duration
	logger      *slog.Logger
	usage       *Usage
}

// WithUsage shares u, the size estimate of the cache's directory, among the
// Caches a process opens on it (the render server opens one per
// generation): the directory is then listed once per process to learn its
// size, not once per generation that stores something.
func WithUsage(u *Usage) Option { return func(o *options) { o.usage = u } }

// WithMaxSize caps the cache's content size in bytes (default DefaultMaxSize).
// A blob larger than the cap is never cached. n <= 0 keeps the default.
func WithMaxSize(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxSize = n
		}
	}
}

// WithLockTimeout bounds how long a fetch waits for another process that is
// downloading the same blob (default DefaultLockTimeout). d <= 0 keeps the default.
func WithLockTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.lockTimeout = d
		}
	}
}

// WithLogger receives warnings (cache disabled, corrupt entry removed);
// default slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }
