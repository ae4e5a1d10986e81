package registry

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// Defaults of NewClient.
const (
	// DefaultRetries is how often a request is retried after a connection
	// error, 408, 429 or a 5xx response (so at most 4 attempts).
	DefaultRetries = 3
	// DefaultMinBackoff is the wait before the first retry; it doubles per
	// attempt (±10 % jitter) up to DefaultMaxBackoff.
	DefaultMinBackoff = 200 * time.Millisecond
	// DefaultMaxBackoff caps one wait between retries, also one asked for by
	// a Retry-After header.
	DefaultMaxBackoff = 3 * time.Second
	// DefaultResponseHeaderTimeout bounds the wait for a response's headers;
	// bodies are bounded by the caller's context.
	DefaultResponseHeaderTimeout = 30 * time.Second
	// DefaultDialTimeout bounds connecting and the TLS handshake.
	DefaultDialTimeout = 10 * time.Second
)

// Option configures NewClient.
type Option func(*options)

type options struct {
	dockerConfig   string
	noDockerConfig bool
	lookupEnv      func(string) (string, bool)
	static         map[string]Credential
	caFiles        []string
	caPEM          [][]byte
	plainHTTP      []string
	retries        int
	minBackoff     time.Duration
	maxBackoff     time.Duration
	headerTimeout  time.Duration
	base           http.RoundTripper
	userAgent      string
	logger         *slog.Logger
	shared         *Shared
	observe        func(n int)
	gate           Gate
	scopes         []CredentialScope
	onlyScoped     bool
	strictPlain    bool
	mirrors        map[string][]Mirror // by upstream host, see mirror.go
	noMirrors      bool
	refuseSpecial  bool
	allowAddrs     []string
}

// WithSpecialAddressesRefused refuses connections to the addresses an
// Application must not reach (see AddressPolicy), except those allow names
// and WithAllowedAddresses adds; the hosts of WithPlainHTTP and WithMirrors,
// which the operator named, are allowed whatever they resolve to. Default:
// every address (a program acting for its own user: render, transfer, tests).
func WithSpecialAddressesRefused(allow ...string) Option {
	return func(o *options) { o.refuseSpecial, o.allowAddrs = true, append(o.allowAddrs, allow...) }
}

// WithAllowedAddresses allows more addresses under
// WithSpecialAddressesRefused: IP addresses, CIDR ranges, hosts or
// host:port (NewAddressPolicy).
func WithAllowedAddresses(allow ...string) Option {
	return func(o *options) { o.allowAddrs = append(o.allowAddrs, allow...) }
}

// WithDockerConfig reads credentials from this Docker config file instead of
// the default ($DOCKER_CONFIG/config.json, else ~/.docker/config.json). A
// missing file is not an error; a malformed one is.
func WithDockerConfig(path string) Option {
	return func(o *options) { o.dockerConfig, o.noDockerConfig = path, false }
}

// WithoutDockerConfig reads no Docker config file.
func WithoutDockerConfig() Option { return func(o *options) { o.noDockerConfig = true } }

// WithEnv replaces os.LookupEnv as the source of ARGOCD_OCM_REGISTRY_*
// variables (tests; a CLI that filters its environment).
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) {
		if lookup != nil {
			o.lookupEnv = lookup
		}
	}
}

// WithCredential sets the credential for a registry host[:port]; it wins over
// the environment and the Docker config.
func WithCredential(host string, cred Credential) Option {
	return func(o *options) {
		if o.static == nil {
			o.static = map[string]Credential{}
		}
		o.static[CanonicalHost(host)] = cred
	}
}

// WithCAFile trusts the CA certificates of a PEM bundle in addition to the
// system roots. ARGOCD_OCM_REGISTRY_CA_FILE does the same.
func WithCAFile(path string) Option { return func(o *options) { o.caFiles = append(o.caFiles, path) } }

// WithCAPEM trusts PEM-encoded CA certificates in addition to the system roots.
func WithCAPEM(pem []byte) Option { return func(o *options) { o.caPEM = append(o.caPEM, pem) } }

// WithPlainHTTP allows plain HTTP (no TLS) to these registry hosts (host[:port]).
// No host is allowed by default.
func WithPlainHTTP(hosts ...string) Option {
	return func(o *options) { o.plainHTTP = append(o.plainHTTP, hosts...) }
}

// WithRetries sets how often a failed request is retried (default
// DefaultRetries; 0 disables retries; negative keeps the default).
func WithRetries(n int) Option {
	return func(o *options) {
		if n >= 0 {
			o.retries = n
		}
	}
}

// WithBackoff sets the first wait between retries and the cap of one wait
// (defaults DefaultMinBackoff, DefaultMaxBackoff). Values <= 0 keep the default.
func WithBackoff(min, max time.Duration) Option {
	return func(o *options) {
		if min > 0 {
			o.minBackoff = min
		}
		if max > 0 {
			o.maxBackoff = max
		}
	}
}

// WithResponseHeaderTimeout bounds the wait for response headers (default
// DefaultResponseHeaderTimeout).
func WithResponseHeaderTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.headerTimeout = d
		}
	}
}

// WithTransport replaces the base HTTP transport (default: a clone of
// http.DefaultTransport with the CA pool and timeouts). The plain-HTTP guard
// and retries still wrap it.
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.base = rt } }

// WithShared makes the client share connections and registry tokens with
// every other client given s (see Shared). Default: none, a client of its own.
func WithShared(s *Shared) Option { return func(o *options) { o.shared = s } }

// WithUserAgent sets the User-Agent header (default "argocd-ocm-plugin").
func WithUserAgent(ua string) Option { return func(o *options) { o.userAgent = ua } }

// WithLogger receives warnings (ignored credential helpers, retries); default
// slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Gate decides, before the first request, whether a repository may be used at
// all (the sidecar policy implements it). host is CanonicalHost(host[:port]);
// path is the OCI repository, or the URL path of a classic Helm repository or
// chart. A refusal is returned as is and must read the same whatever the
// target is, so that it tells nothing about the network.
type Gate interface {
	AllowRepository(host, path string) error
}

// WithGate consults g before any request for a repository (default: every
// repository is allowed).
func WithGate(g Gate) Option { return func(o *options) { o.gate = g } }

// CredentialScope is a credential for exactly one host[:port], optionally
// only below a repository path prefix (whole segments: "team-a" covers
// "team-a" and "team-a/x", not "team-ab").
type CredentialScope struct {
	// Name identifies the credential in messages and keeps registry tokens
	// obtained with it apart from those of other credentials.
	Name       string
	Host       string
	PathPrefix string
	// Get returns the credential; it is called only when a registry asks
	// for one, so files are read lazily.
	Get func(context.Context) (Credential, error)
}

// WithCredentialScopes adds scoped credentials. For a repository, the scope
// of its exact host with the longest matching path prefix wins over every
// other source.
func WithCredentialScopes(scopes ...CredentialScope) Option {
	return func(o *options) { o.scopes = append(o.scopes, scopes...) }
}

// WithOnlyScopedCredentials uses WithCredentialScopes alone: no WithCredential,
// no ARGOCD_OCM_REGISTRY_* variables, no Docker config (what the sidecar
// policy does: an Application gets only the credentials its rule names).
func WithOnlyScopedCredentials() Option { return func(o *options) { o.onlyScoped = true } }

// WithStrictPlainHTTP allows plain HTTP only to the WithPlainHTTP hosts: an
// http:// reference to any other host is refused instead of being reached
// anonymously (see Client.AllowPlainHTTP).
func WithStrictPlainHTTP() Option { return func(o *options) { o.strictPlain = true } }

// WithoutMirrors reaches every registry itself, ignoring WithMirrors and
// ARGOCD_OCM_REGISTRY_<HOST>_MIRRORS. For writers (transfer): a pull-through
// mirror answering a target's existence checks would make a copy skip blobs
// the target does not hold.
func WithoutMirrors() Option { return func(o *options) { o.noMirrors = true } }
