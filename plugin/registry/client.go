package registry

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// Page limits for tag listing: a hostile registry cannot make the plugin loop.
const (
	maxTagPages = 100
)

// Client talks to OCI registries with the plugin's credentials, trust and
// plain-HTTP policy. It is safe for concurrent use; share one per process so
// that tokens and connections are reused.
type Client struct {
	o      options
	creds  *credentials
	pool   *x509.CertPool
	http   *http.Client // guard + retry, no registry auth: for chart repositories
	auth   *auth.Client
	logger *slog.Logger

	mu     sync.RWMutex
	plain  map[string]bool
	caMu   sync.Mutex
	withCA map[string]*http.Client // HTTPClientWithCA, by PEM
}

// NewClient builds a Client. It fails only on configuration errors the user
// must fix: an unreadable CA bundle or a malformed Docker config file.
func NewClient(opts ...Option) (*Client, error) {
	o := options{
		lookupEnv:     os.LookupEnv,
		retries:       DefaultRetries,
		minBackoff:    DefaultMinBackoff,
		maxBackoff:    DefaultMaxBackoff,
		headerTimeout: DefaultResponseHeaderTimeout,
		userAgent:     "argocd-ocm-plugin",
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	c := &Client{o: o, logger: o.logger, plain: map[string]bool{}}
	c.AllowPlainHTTP(o.plainHTTP...)

	c.creds = &credentials{static: o.static, lookupEnv: o.lookupEnv}
	if !o.noDockerConfig {
		p := o.dockerConfig
		if p == "" {
			p = DefaultDockerConfig()
		}
		if p != "" {
			m, warn, err := loadDockerConfig(p)
			if err != nil {
				return nil, err
			}
			if warn != "" {
				c.logger.Warn(warn)
			}
			c.creds.docker, c.creds.dockerPath = m, p
		}
	}

	pool, trust, err := certPool(o)
	if err != nil {
		return nil, err
	}
	c.pool = pool
	base := o.base
	tokens := auth.NewCache()
	if o.shared != nil {
		// Same trust, same transport: its idle connections (and TLS
		// sessions) serve the next generation of a long-lived process.
		if base == nil {
			base = o.shared.transport(fmt.Sprintf("%s\x00%d", trust, c.o.headerTimeout), func() http.RoundTripper { return c.newTransport(pool) })
		}
		tokens = o.shared.tokenCache()
	}
	if base == nil {
		base = c.newTransport(pool)
	}
	c.http = &http.Client{Transport: c.wrapTransport(base)}
	c.auth = &auth.Client{
		Client:     c.http,
		Credential: c.creds.get,
		Cache:      tokens,
		Header:     http.Header{"User-Agent": []string{o.userAgent}},
	}
	return c, nil
}

// Shared holds what the clients of one long-lived process (the render
// server) share: a transport per trust configuration, so that connections
// and TLS sessions outlive one generation, and registry tokens, so that a
// generation does not ask the token service again. All clients given one
// Shared must use the same credentials: tokens are cached by registry and
// scope, not by credential. The zero value is ready to use.
type Shared struct {
	mu         sync.Mutex
	transports map[string]http.RoundTripper
	tokens     auth.Cache
}

func (s *Shared) transport(key string, create func() http.RoundTripper) http.RoundTripper {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.transports == nil {
		s.transports = map[string]http.RoundTripper{}
	}
	t, ok := s.transports[key]
	if !ok {
		t = create()
		s.transports[key] = t
	}
	return t
}

func (s *Shared) tokenCache() auth.Cache {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = auth.NewCache()
	}
	return s.tokens
}

// certPool builds the trust pool; trust identifies it (a hash of the PEM
// bytes added to the system roots; "" for the system roots alone).
func certPool(o options) (*x509.CertPool, string, error) {
	files := o.caFiles
	if f, ok := o.lookupEnv(EnvCAFile); ok && f != "" {
		files = append(files, f)
	}
	if len(files) == 0 && len(o.caPEM) == 0 {
		return nil, "", nil // system roots
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, "", fmt.Errorf("%w: CA bundle %s: cannot read it", errdef.ErrInvalidInput, f)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, "", fmt.Errorf("%w: CA bundle %s holds no PEM certificate", errdef.ErrInvalidInput, f)
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	for _, b := range o.caPEM {
		if !pool.AppendCertsFromPEM(b) {
			return nil, "", fmt.Errorf("%w: CA certificates hold no PEM certificate", errdef.ErrInvalidInput)
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	return pool, hex.EncodeToString(h.Sum(nil)), nil
}

func (c *Client) newTransport(pool *x509.CertPool) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	t.TLSHandshakeTimeout = DefaultDialTimeout
	t.ResponseHeaderTimeout = c.o.headerTimeout
	t.DialContext = (&net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.MaxIdleConnsPerHost = 16
	return t
}

// wrapTransport adds the plain-HTTP guard (innermost, so redirects are
// checked too) and retries.
func (c *Client) wrapTransport(base http.RoundTripper) http.RoundTripper {
	g := &guard{base: base, c: c}
	if c.o.retries == 0 {
		return g
	}
	return &retry.Transport{Base: g, Policy: func() retry.Policy {
		return &retryPolicy{max: c.o.retries, min: c.o.minBackoff, cap: c.o.maxBackoff, logger: c.logger}
	}}
}

// AllowPlainHTTP allows plain HTTP to the given hosts (host[:port]) from now on.
func (c *Client) AllowPlainHTTP(hosts ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			c.plain[h] = true
		}
	}
}

// PlainHTTPAllowed reports whether plain HTTP to host (host[:port]) is allowed.
func (c *Client) PlainHTTPAllowed(host string) bool {
	host = strings.ToLower(host)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.plain[host] {
		return true
	}
	if h, port, err := net.SplitHostPort(host); err == nil && port == "80" {
		return c.plain[h]
	}
	return !strings.Contains(host, ":") && c.plain[host+":80"]
}

// Repository returns an oras-go repository for ref (its Tag and Digest are
// ignored), over plain HTTP when the host is allowed, else HTTPS. A reference
// written with http:// whose host is not allowed fails with errdef.ErrInsecure.
func (c *Client) Repository(ref Reference) (*remote.Repository, error) {
	plain := c.PlainHTTPAllowed(ref.Registry)
	if ref.Scheme == "http" && !plain {
		return nil, &Error{Registry: ref.Registry, Repository: ref.Repository, Reference: ref.Ref(), Kind: errdef.ErrInsecure,
			Err: errors.New("the reference asks for plain HTTP"), Hint: "plain HTTP is used only for hosts allowed explicitly, e.g. by an http:// repository URL"}
	}
	return &remote.Repository{
		Client:          c.auth,
		Reference:       refToOras(ref),
		PlainHTTP:       plain,
		TagListMaxPages: maxTagPages,
		SkipReferrersGC: true,
	}, nil
}

// Wrap classifies err from operation op on ref as an *Error naming registry,
// repository, reference and HTTP status, with the errdef sentinel
// (ErrNotFound, ErrUnauthorized, ErrInsecure) attached. nil stays nil.
func (c *Client) Wrap(err error, op string, ref Reference) error { return c.wrapError(err, op, ref) }

// HTTPClient returns a client with the plain-HTTP guard, the CA pool and
// retries but no registry authentication, for classic Helm chart repositories.
func (c *Client) HTTPClient() *http.Client { return c.http }

// HTTPClientWithCA is HTTPClient trusting extra PEM CA certificates as well
// (a helm access's caCert).
func (c *Client) HTTPClientWithCA(pem []byte) (*http.Client, error) {
	if len(pem) == 0 {
		return c.http, nil
	}
	c.caMu.Lock()
	defer c.caMu.Unlock()
	if hc, ok := c.withCA[string(pem)]; ok {
		return hc, nil
	}
	pool := c.pool
	if pool == nil {
		if p, err := x509.SystemCertPool(); err == nil && p != nil {
			pool = p
		} else {
			pool = x509.NewCertPool()
		}
	} else {
		pool = pool.Clone()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: caCert holds no PEM certificate", errdef.ErrInvalidInput)
	}
	var base http.RoundTripper
	if c.o.base != nil {
		base = c.o.base
	} else {
		base = c.newTransport(pool)
	}
	hc := &http.Client{Transport: c.wrapTransport(base)}
	if c.withCA == nil {
		c.withCA = map[string]*http.Client{}
	}
	c.withCA[string(pem)] = hc
	return hc, nil
}

// Credential returns the credential configured for host (host[:port]); an
// empty Credential when there is none.
func (c *Client) Credential(ctx context.Context, host string) (Credential, error) {
	return c.creds.get(ctx, host)
}

// UserAgent is the User-Agent the client sends.
func (c *Client) UserAgent() string { return c.o.userAgent }
