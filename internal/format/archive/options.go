package archive

// Default limits. They bound memory: the whole tree is held in memory.
const (
	// DefaultMaxSize is the default limit on the total uncompressed bytes of
	// all file contents (every entry read counts, duplicates and link copies included).
	DefaultMaxSize int64 = 256 << 20
	// DefaultMaxFiles is the default limit on the number of archive entries
	// (files, directories, links and pax headers alike).
	DefaultMaxFiles = 10_000
)

// Longest entry name or link target accepted. Names are held in memory per
// entry, so without a cap a bomb of long pax names could exhaust memory while
// staying under the content-size limit.
const maxNameLen = 4096

// Longest chain of links followed before giving up.
const maxLinkDepth = 16

// Option configures ReadTree.
type Option func(*options)

type options struct {
	maxSize     int64
	maxFiles    int
	maxFileSize int64 // 0: same as maxSize
}

// WithMaxSize limits the total uncompressed bytes of all file contents read
// from the archive. Default DefaultMaxSize (256 MiB). n <= 0 keeps the default,
// so a limit cannot be switched off by accident.
func WithMaxSize(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxSize = n
		}
	}
}

// WithMaxFiles limits the number of archive entries. Default DefaultMaxFiles
// (10 000). n <= 0 keeps the default.
func WithMaxFiles(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxFiles = n
		}
	}
}

// WithMaxFileSize limits the size of any one file. Default: the total size
// limit (see WithMaxSize). n <= 0 keeps the default.
func WithMaxFileSize(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxFileSize = n
		}
	}
}

func newOptions(opts []Option) options {
	o := options{maxSize: DefaultMaxSize, maxFiles: DefaultMaxFiles}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.maxFileSize == 0 || o.maxFileSize > o.maxSize {
		o.maxFileSize = o.maxSize
	}
	return o
}
