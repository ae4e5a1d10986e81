package registry

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	orasreg "oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
)

// Page limits for tag listing: a hostile registry cannot make the plugin loop.
const (
	maxTagPages = 100
)

// Client talks to OCI registries with the plugin's credentials, trust and
// plain-HTTP policy. It is safe for concurrent use. One serves one
// generation, as its policy (WithGate, the credential scopes) is that
// generation's; a long-lived process shares connections and tokens between
// its clients through a Shared (WithShared).
type Client struct {
	o      options
	creds  *credentials
	pool   *x509.CertPool
	http   *http.Client // guard + retry, no registry auth: for chart repositories
	auth   *auth.Client
	logger *slog.Logger

	mu       sync.RWMutex
	plain    map[string]bool // by an http:// reference (AllowPlainHTTP)
	operator map[string]bool // by the operator (WithPlainHTTP): credentials may go there
	caMu     sync.Mutex
	withCA   map[string]*http.Client // HTTPClientWithCA, by PEM

	tokMu  sync.Mutex
	tokens map[string]auth.Cache // by credential identity (see credentialFor)

	secMu   sync.Mutex
	secrets map[string]bool // credential values handed out, redacted from errors

	mirrors mirrorState // see mirror.go
	// addresses refuses what Applications must not reach; nil: nothing.
	addresses *AddressPolicy
}

// NewClient builds a Client. It fails only on configuration errors the user
// must fix: an unreadable CA bundle or a malformed Docker config file.
func NewClient(opts ...Option) (*Client, error) {
	o := newOptions(opts)
	c := &Client{o: o, logger: o.logger, plain: map[string]bool{}, operator: map[string]bool{},
		tokens: map[string]auth.Cache{}, secrets: map[string]bool{}}
	for _, h := range o.plainHTTP {
		if h = CanonicalHost(h); h != "" {
			c.operator[h] = true
		}
	}
	creds, err := c.loadCredentials()
	if err != nil {
		return nil, err
	}
	c.creds = creds
	if o.refuseSpecial {
		if c.addresses, err = addressPolicy(o); err != nil {
			return nil, err
		}
	}
	pool, trust, err := certPool(o)
	if err != nil {
		return nil, err
	}
	c.pool = pool
	base := c.baseTransport(pool, trust)
	c.http = newHTTPClient(c.wrapTransport(base))
	c.initMirrors(base)
	c.auth = &auth.Client{
		Client: c.http,
		Header: http.Header{"User-Agent": []string{o.userAgent}},
	}
	return c, nil
}

// newOptions applies opts over the defaults.
func newOptions(opts []Option) options {
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
	return o
}

// loadCredentials is the static and environment credentials, with those of
// the Docker config file unless WithoutDockerConfig.
func (c *Client) loadCredentials() (*credentials, error) {
	o := c.o
	creds := &credentials{static: o.static, lookupEnv: o.lookupEnv}
	if o.noDockerConfig {
		return creds, nil
	}
	p := o.dockerConfig
	if p == "" {
		p = DefaultDockerConfig()
	}
	if p == "" {
		return creds, nil
	}
	m, warn, err := loadDockerConfig(p)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		c.logger.Warn(warn)
	}
	creds.docker, creds.dockerPath = m, p
	return creds, nil
}

// addressPolicy refuses special addresses except the ones allowed, the
// operator's plain-HTTP hosts and the mirrors: the operator chose those.
func addressPolicy(o options) (*AddressPolicy, error) {
	allow := slices.Clone(o.allowAddrs)
	for _, h := range o.plainHTTP {
		allow = append(allow, CanonicalHost(h))
	}
	for _, ms := range o.mirrors {
		for _, m := range ms {
			allow = append(allow, CanonicalHost(m.Host))
		}
	}
	return NewAddressPolicy(allow...)
}

// baseTransport is the transport under the client's guard and retries: the
// one given, else the Shared one for this trust and policy, else a new one.
func (c *Client) baseTransport(pool *x509.CertPool, trust string) http.RoundTripper {
	if c.o.base != nil {
		return c.o.base
	}
	if c.o.shared != nil {
		// Same trust, same transport: its idle connections (and TLS
		// sessions) serve the next generation of a long-lived process.
		return c.o.shared.transport(fmt.Sprintf("%s\x00%d\x00%s", trust, c.o.headerTimeout, c.addresses.key()), func() http.RoundTripper { return c.newTransport(pool) })
	}
	return c.newTransport(pool)
}

// newHTTPClient follows at most maxRedirects redirects and drops the
// Authorization header once a redirect chain leaves the origin (scheme, host
// and port) of its first request. net/http drops it only when the host name
// changes, so a chart repository redirecting to another port of its host, or
// from https to http, would receive the credentials. The chain is compared
// with its first request because net/http rebuilds every hop's headers from
// the first request's.
func newHTTPClient(rt http.RoundTripper) *http.Client {
	return &http.Client{Transport: rt, CheckRedirect: checkRedirect}
}

const maxRedirects = 10

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if len(via) == 0 {
		return nil
	}
	first := via[0].URL
	for _, r := range append(via[1:len(via):len(via)], req) {
		if !SameOrigin(first, r.URL) {
			req.Header.Del("Authorization")
			break
		}
	}
	return nil
}

// SameOrigin reports whether a and b have the same scheme, host and port
// (default ports made explicit).
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && originHost(a) == originHost(b)
}

func originHost(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return strings.ToLower(u.Hostname()) + ":" + port
}

// Shared holds what the clients of one long-lived process (the render
// server) share: a transport per trust configuration, so that connections
// and TLS sessions outlive one generation, and registry tokens, so that a
// generation does not ask the token service again. Tokens are kept per
// credential identity (anonymous, the client's default sources, or a named
// scope), so clients with different credentials (the projects of a policy)
// can share one Shared: a token is only reused with the credential that
// obtained it. The zero value is ready to use.
type Shared struct {
	mu         sync.Mutex
	transports map[string]http.RoundTripper
	tokens     map[string]auth.Cache

	mirrorPauses mirrorPauses // see mirror.go
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

// tokenCache is the token cache of one credential identity: a token obtained
// with one credential (or anonymously) is never used for a request made with
// another, e.g. by an Application of a project the credential is not for.
func (s *Shared) tokenCache(key string) auth.Cache {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]auth.Cache{}
	}
	t, ok := s.tokens[key]
	if !ok {
		t = newBoundedTokens()
		s.tokens[key] = t
	}
	return t
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
	t.DialContext = c.addresses.dialContext(&net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 30 * time.Second})
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

// AllowPlainHTTP allows plain HTTP to the given hosts (host[:port]) from now
// on: what an http:// repository URL does. Such a host is reached without
// credentials unless the operator allowed it too (WithPlainHTTP), so that a
// URL an Application writes cannot make the client send a password in clear
// text. With WithStrictPlainHTTP it does nothing.
func (c *Client) AllowPlainHTTP(hosts ...string) {
	if c.o.strictPlain {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range hosts {
		if h = CanonicalHost(h); h != "" {
			c.plain[h] = true
		}
	}
}

// PlainHTTPAllowed reports whether plain HTTP to host (host[:port]) is allowed.
func (c *Client) PlainHTTPAllowed(host string) bool {
	return c.plainIn(c.plain, host) || c.plainIn(c.operator, host)
}

// CredentialsOverPlainHTTP reports whether the operator allowed plain HTTP to
// host, the only case in which credentials are sent without TLS.
func (c *Client) CredentialsOverPlainHTTP(host string) bool { return c.plainIn(c.operator, host) }

func (c *Client) plainIn(m map[string]bool, host string) bool {
	host = CanonicalHost(host)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if m[host] {
		return true
	}
	if h, port, err := net.SplitHostPort(host); err == nil && port == "80" {
		return m[h]
	}
	return !strings.Contains(host, ":") && m[host+":80"]
}

// Allow asks the gate (WithGate) whether the repository at host and path may
// be used; nil without a gate.
func (c *Client) Allow(host, path string) error {
	if c.o.gate == nil {
		return nil
	}
	return c.o.gate.AllowRepository(CanonicalHost(host), strings.Trim(path, "/"))
}

// Repository returns an oras-go repository for ref (its Tag and Digest are
// ignored), over plain HTTP when the host is allowed, else HTTPS. The gate is
// asked first. A reference written with http:// whose host is not allowed
// fails with errdef.ErrInsecure. No request is made here.
func (c *Client) Repository(ref imageref.Reference) (*remote.Repository, error) {
	if err := c.Allow(ref.Registry, ref.Repository); err != nil {
		return nil, err
	}
	plain := c.PlainHTTPAllowed(ref.Registry)
	if ref.Scheme == "http" && !plain {
		return nil, &Error{Registry: ref.Registry, Repository: ref.Repository, Reference: ref.Ref(), Kind: errdef.ErrInsecure,
			Err: errors.New("the reference asks for plain HTTP"), Hint: "plain HTTP is used only for hosts the operator allowed (ARGOCD_OCM_PLAIN_HTTP or the policy's plainHTTP)"}
	}
	key, cred := c.credentialFor(ref.Registry, ref.Repository, plain)
	ac := *c.auth
	ac.Credential, ac.Cache = cred, c.tokenCache(key)
	rc, err := c.mirroredClient(ref, &ac)
	if err != nil {
		return nil, err
	}
	return &remote.Repository{
		Client:          rc,
		Reference:       refToOras(ref),
		PlainHTTP:       plain,
		TagListMaxPages: maxTagPages,
		SkipReferrersGC: true,
	}, nil
}

// credentialFor picks the credential source of a repository and names its
// identity, which keys the token cache: plain HTTP to a host the operator did
// not allow is anonymous; then the scope of the exact host with the longest
// matching path prefix; then (unless WithOnlyScopedCredentials) the
// host's credential from the options, the environment or the Docker config.
func (c *Client) credentialFor(host, repository string, plain bool) (string, auth.CredentialFunc) {
	host = CanonicalHost(host)
	anonymous := func(context.Context, string) (Credential, error) { return auth.EmptyCredential, nil }
	if plain && !c.CredentialsOverPlainHTTP(host) {
		return "anonymous", anonymous
	}
	if s, ok := c.scopeFor(host, repository); ok {
		return "scope\x00" + s.Name + "\x00" + host + "\x00" + s.PathPrefix, func(ctx context.Context, h string) (Credential, error) {
			if CanonicalHost(h) != host || s.Get == nil {
				return auth.EmptyCredential, nil
			}
			cred, err := s.Get(ctx)
			c.remember(cred)
			return cred, err
		}
	}
	if c.o.onlyScoped {
		return "anonymous", anonymous
	}
	return "default", func(ctx context.Context, h string) (Credential, error) {
		if CanonicalHost(h) != host {
			return auth.EmptyCredential, nil
		}
		cred, err := c.creds.get(ctx, h)
		c.remember(cred)
		return cred, err
	}
}

// Gated reports whether a gate (WithGate: the sidecar policy) is set.
func (c *Client) Gated() bool { return c.o.gate != nil }

// CredentialKey names the credential requests for ref are made with
// ("anonymous", "default", or a scope): what a result shared beyond one
// client must be keyed by, so that one credential's answers never serve
// another's requests.
func (c *Client) CredentialKey(ref imageref.Reference) string {
	key, _ := c.credentialFor(ref.Registry, ref.Repository, c.PlainHTTPAllowed(ref.Registry))
	return key
}

func (c *Client) scopeFor(host, repository string) (CredentialScope, bool) {
	var best CredentialScope
	found := false
	for _, s := range c.o.scopes {
		if CanonicalHost(s.Host) != host || !PathHasPrefix(repository, s.PathPrefix) {
			continue
		}
		if !found || len(strings.Trim(s.PathPrefix, "/")) > len(strings.Trim(best.PathPrefix, "/")) {
			best, found = s, true
		}
	}
	return best, found
}

// PathHasPrefix reports whether path is prefix or below it, by whole
// segments ("a/b" is below "a", "ab" is not). An empty prefix matches all.
func PathHasPrefix(path, prefix string) bool {
	path, prefix = strings.Trim(path, "/"), strings.Trim(prefix, "/")
	if prefix == "" {
		return true
	}
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func (c *Client) tokenCache(key string) auth.Cache {
	if c.o.shared != nil {
		return c.o.shared.tokenCache(key)
	}
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	t, ok := c.tokens[key]
	if !ok {
		t = newBoundedTokens()
		c.tokens[key] = t
	}
	return t
}

// remember keeps the secret parts of a credential handed out, so that a
// registry that echoes them finds them redacted from its errors.
func (c *Client) remember(cred Credential) {
	if cred == auth.EmptyCredential {
		return
	}
	c.secMu.Lock()
	defer c.secMu.Unlock()
	for _, v := range []string{cred.Password, cred.AccessToken, cred.RefreshToken} {
		if len(v) >= 4 {
			c.secrets[v] = true
		}
	}
	if cred.Username != "" || cred.Password != "" {
		c.secrets[base64.StdEncoding.EncodeToString([]byte(cred.Username+":"+cred.Password))] = true
	}
}

// redact removes every remembered credential value from msg.
func (c *Client) redact(msg string) string {
	c.secMu.Lock()
	defer c.secMu.Unlock()
	for v := range c.secrets {
		msg = strings.ReplaceAll(msg, v, "[redacted]")
	}
	return msg
}

// Wrap classifies err from operation op on ref as an *Error naming registry,
// repository, reference and HTTP status, with the errdef sentinel
// (ErrNotFound, ErrUnauthorized, ErrInsecure) attached. nil stays nil.
func (c *Client) Wrap(err error, op string, ref imageref.Reference) error {
	return c.wrapError(err, op, ref)
}

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
	hc := newHTTPClient(c.wrapTransport(base))
	if c.withCA == nil {
		c.withCA = map[string]*http.Client{}
	}
	c.withCA[string(pem)] = hc
	return hc, nil
}

// Credential returns the credential configured for host (host[:port]) by
// the options, the environment or the Docker config; an empty Credential when
// there is none. It ignores scopes and the plain-HTTP rule: use
// CredentialForURL for a request.
func (c *Client) Credential(ctx context.Context, host string) (Credential, error) {
	return c.creds.get(ctx, host)
}

// CredentialForURL is the credential to send with a request for u (a classic
// Helm repository's index or chart), chosen as for an OCI repository: scoped
// by exact host and path, none over plain HTTP the operator did not allow.
func (c *Client) CredentialForURL(ctx context.Context, u *url.URL) (Credential, error) {
	plain := strings.EqualFold(u.Scheme, "http")
	_, get := c.credentialFor(u.Host, u.Path, plain)
	return get(ctx, u.Host)
}

// CredentialKeyForURL is CredentialKey for the credential CredentialForURL
// returns for u.
func (c *Client) CredentialKeyForURL(u *url.URL) string {
	key, _ := c.credentialFor(u.Host, u.Path, strings.EqualFold(u.Scheme, "http"))
	return key
}

// UserAgent is the User-Agent the client sends.
func (c *Client) UserAgent() string { return c.o.userAgent }

func refToOras(r imageref.Reference) orasreg.Reference {
	return orasreg.Reference{Registry: r.Registry, Repository: r.Repository, Reference: r.Ref()}
}
