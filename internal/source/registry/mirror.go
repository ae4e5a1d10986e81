package registry

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/go-digest"
	orasreg "oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
)

// Mirror is a pull-through cache of one upstream registry host: a CNCF
// distribution registry in proxy mode, a Harbor proxy-cache project, a Zot
// registry with the sync extension. The upstream repository r is read from the
// mirror as PathPrefix/r.
type Mirror struct {
	// Host is the mirror's exact host[:port].
	Host string
	// PathPrefix is where the mirror keeps the upstream's repositories:
	// Harbor's proxy project ("ghcr-proxy": ghcr.io/acme/app is read as
	// harbor.example/ghcr-proxy/acme/app), Zot's sync destination; "" for a
	// distribution registry in proxy mode, which mirrors one upstream at its
	// root.
	PathPrefix string
	// PlainHTTP reaches the mirror without TLS (credentials too: the mirror
	// is the operator's, as a WithPlainHTTP host).
	PlainHTTP bool
	// ResolveTags asks the mirror by tag, so that it learns the tag: its
	// answer must name the digest the upstream's HEAD named (else it is out
	// of date and the next source is asked). When the upstream cannot be
	// reached (connection error or 5xx after retries), such mirrors answer
	// tags alone. Default: the mirror serves content by digest only, and a
	// tag the upstream cannot resolve fails.
	ResolveTags bool
	// CredentialName names the credential in messages and keys its registry
	// tokens ("" for the mirror host's default credential).
	CredentialName string
	// Credential returns the mirror's credential. nil: the mirror host's
	// credential from WithCredential, the environment or the Docker config,
	// as for any host (none with WithOnlyScopedCredentials). The upstream's
	// credentials never go to a mirror, nor a mirror's to the upstream.
	Credential func(context.Context) (Credential, error)
}

// Environment variables of mirrors (without a sidecar policy). <HOST> folds
// the upstream host as the credential variables do, and belongs to exactly
// one host by the same rule (ARGOCD_OCM_REGISTRY_<HOST>_HOST names it when
// the folding is ambiguous).
const (
	// EnvMirrorsSuffix: ARGOCD_OCM_REGISTRY_<HOST>_MIRRORS is a
	// comma-separated, ordered list of [http://|https://]host[:port][/prefix];
	// http:// reaches that mirror without TLS.
	EnvMirrorsSuffix = "_MIRRORS"
	// EnvMirrorTagsSuffix: ARGOCD_OCM_REGISTRY_<HOST>_MIRRORS_RESOLVE_TAGS=true
	// lets those mirrors answer tags when the upstream cannot be reached.
	EnvMirrorTagsSuffix = "_MIRRORS_RESOLVE_TAGS"
)

// DefaultMirrorPause is how long a mirror that could not be connected to is
// left out before it is tried again, so that a mirror that is down costs one
// failed connection, not one per blob.
const DefaultMirrorPause = 30 * time.Second

// WithMirrors sets the ordered mirrors of an upstream registry host
// (host[:port]); they replace ARGOCD_OCM_REGISTRY_<HOST>_MIRRORS for that host.
// Manifests and blobs named by digest are read from the first mirror that
// serves them and verified against the digest; on a connection error or any
// other failure status the next mirror, and last the upstream, is asked. A
// mirror that serves other content than the digest names fails the request:
// it is never accepted and the upstream is not substituted for it.
func WithMirrors(upstream string, mirrors ...Mirror) Option {
	return func(o *options) {
		if o.mirrors == nil {
			o.mirrors = map[string][]Mirror{}
		}
		h := CanonicalHost(upstream)
		o.mirrors[h] = append(o.mirrors[h], mirrors...)
	}
}

// ParseMirror parses [http://|https://]host[:port][/path/prefix]: http://
// sets PlainHTTP. User info, a query or a fragment is refused (credentials
// go in the mirror host's own ARGOCD_OCM_REGISTRY_<HOST>_* variables).
func ParseMirror(s string) (Mirror, error) {
	s = strings.TrimSpace(s)
	var m Mirror
	switch {
	case strings.HasPrefix(s, "http://"):
		m.PlainHTTP, s = true, strings.TrimPrefix(s, "http://")
	case strings.HasPrefix(s, "https://"):
		s = strings.TrimPrefix(s, "https://")
	case strings.Contains(s, "://"):
		return Mirror{}, errors.New("want http:// or https://")
	}
	if strings.ContainsAny(s, "@?#") {
		return Mirror{}, errors.New("no user info, query or fragment: credentials go in the mirror host's own variables")
	}
	host, prefix, _ := strings.Cut(s, "/")
	u, err := url.Parse("https://" + host)
	if host == "" || err != nil || u.Host != host || strings.ContainsAny(host, " *[]\\") {
		return Mirror{}, errors.New("want host[:port]")
	}
	if p := u.Port(); strings.Contains(host, ":") && (p == "" || strings.Trim(p, "0123456789") != "") {
		return Mirror{}, errors.New("bad port")
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		for _, seg := range strings.Split(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return Mirror{}, errors.New("path prefix has an empty, . or .. segment")
			}
		}
		if err := (orasreg.Reference{Registry: "x", Repository: prefix + "/x"}).ValidateRepository(); err != nil {
			return Mirror{}, errors.New("path prefix is not a repository path (lower case letters, digits, . _ - separated by /)")
		}
	}
	m.Host, m.PathPrefix = CanonicalHost(host), prefix
	return m, nil
}

// mirrorState is a Client's mirror configuration and what it learnt: the
// mirrors read from the environment per upstream host, and the mirrors that
// could not be connected to lately.
type mirrorState struct {
	http *http.Client // guard, no retries: a failing mirror hands over to the upstream at once

	mu    sync.Mutex
	env   map[string]envMirrors // upstream host → parsed variables
	pause mirrorPauses          // without WithShared
}

// mirrorPauses are the mirrors that could not be connected to lately, by
// host: kept in Shared when there is one, so that a long-lived process
// (the render server) learns it once for all its generations.
type mirrorPauses struct {
	mu    sync.Mutex
	until map[string]time.Time
}

type envMirrors struct {
	mirrors []Mirror
	err     error
}

// initMirrors is NewClient's part for mirrors: the mirrors' own HTTP client
// over base, and plain HTTP (with credentials) to the WithMirrors hosts that
// ask for it.
func (c *Client) initMirrors(base http.RoundTripper) {
	c.mirrors.http = newHTTPClient(&guard{base: base, c: c})
	for _, ms := range c.o.mirrors {
		for _, m := range ms {
			if m.PlainHTTP {
				c.operator[CanonicalHost(m.Host)] = true
			}
		}
	}
}

// Mirrors returns the ordered mirrors of an upstream host: WithMirrors', else
// those of ARGOCD_OCM_REGISTRY_<HOST>_MIRRORS. A malformed variable is an
// error, and so is the variable under WithOnlyScopedCredentials (the sidecar
// policy, which names mirrors itself): it would be ignored.
func (c *Client) Mirrors(upstream string) ([]Mirror, error) {
	host := CanonicalHost(upstream)
	if c.o.noMirrors {
		return nil, nil
	}
	if c.o.onlyScoped {
		name := EnvPrefix + EnvName(host) + EnvMirrorsSuffix
		if v, ok := c.o.lookupEnv(name); ok && strings.TrimSpace(v) != "" && envOwns(c.o.lookupEnv, host) {
			return nil, fmt.Errorf("%w: %s is set together with a sidecar policy: name the mirrors in the policy's mirrors instead", errdef.ErrInvalidInput, name)
		}
		return c.o.mirrors[host], nil
	}
	if ms, ok := c.o.mirrors[host]; ok {
		return ms, nil
	}
	c.mirrors.mu.Lock()
	defer c.mirrors.mu.Unlock()
	if e, ok := c.mirrors.env[host]; ok {
		return e.mirrors, e.err
	}
	e := c.envMirrors(host)
	if c.mirrors.env == nil {
		c.mirrors.env = map[string]envMirrors{}
	}
	c.mirrors.env[host] = e
	if e.err == nil {
		c.mu.Lock()
		for _, m := range e.mirrors {
			if m.PlainHTTP {
				c.operator[m.Host] = true
			}
		}
		c.mu.Unlock()
	}
	return e.mirrors, e.err
}

func (c *Client) envMirrors(host string) envMirrors {
	if !envOwns(c.o.lookupEnv, host) {
		return envMirrors{}
	}
	name := EnvPrefix + EnvName(host) + EnvMirrorsSuffix
	v, ok := c.o.lookupEnv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return envMirrors{}
	}
	tags := false
	if t, ok := c.o.lookupEnv(EnvPrefix + EnvName(host) + EnvMirrorTagsSuffix); ok && strings.TrimSpace(t) != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(t))
		if err != nil {
			return envMirrors{err: fmt.Errorf("%w: %s%s%s: want true or false", errdef.ErrInvalidInput, EnvPrefix, EnvName(host), EnvMirrorTagsSuffix)}
		}
		tags = b
	}
	var out []Mirror
	for i, s := range strings.Split(v, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		m, err := ParseMirror(s)
		if err != nil {
			// The entry is not quoted: it may hold what the operator
			// should not have written there (user info).
			return envMirrors{err: fmt.Errorf("%w: %s: entry %d: %v", errdef.ErrInvalidInput, name, i+1, err)}
		}
		m.ResolveTags = tags
		out = append(out, m)
	}
	return envMirrors{mirrors: out}
}

// mirroredClient is the remote.Client of a repository whose host has
// mirrors; without mirrors it is upstream itself.
func (c *Client) mirroredClient(ref imageref.Reference, upstream *auth.Client) (remote.Client, error) {
	ms, err := c.Mirrors(ref.Registry)
	if err != nil || len(ms) == 0 {
		return upstream, err
	}
	mc := &mirrorClient{c: c, upstream: upstream, ref: ref}
	for _, m := range ms {
		repo := strings.Trim(m.PathPrefix+"/"+ref.Repository, "/")
		mref := orasreg.Reference{Registry: CanonicalHost(m.Host), Repository: repo}
		if mref.ValidateRepository() != nil {
			continue // an upstream name the mirror's prefix cannot hold: the upstream serves it
		}
		mc.mirrors = append(mc.mirrors, mirrorEndpoint{m: m, ref: mref, client: c.mirrorAuth(m, repo)})
	}
	return mc, nil
}

// mirrorAuth is the authenticating client of one mirror: its credential
// only, for its exact host, with a token cache of its own.
func (c *Client) mirrorAuth(m Mirror, repo string) *auth.Client {
	host := CanonicalHost(m.Host)
	ac := *c.auth
	ac.Client = c.mirrors.http
	var key string
	var get auth.CredentialFunc
	switch {
	case m.Credential != nil:
		key = "mirror\x00" + m.CredentialName + "\x00" + host
		get = func(ctx context.Context, h string) (Credential, error) {
			if CanonicalHost(h) != host {
				return auth.EmptyCredential, nil
			}
			cred, err := m.Credential(ctx)
			c.remember(cred)
			return cred, err
		}
	default:
		// The host's own credential (exact host, as for any registry),
		// unless plain HTTP the operator did not allow or only scoped
		// credentials are in use.
		key, get = c.credentialFor(host, repo, m.PlainHTTP || c.CredentialsOverPlainHTTP(host))
		key = "mirror\x00" + key
	}
	ac.Credential, ac.Cache = get, c.tokenCache(key)
	return &ac
}

type mirrorEndpoint struct {
	m      Mirror
	ref    orasreg.Reference // the mirror's host and repository
	client *auth.Client
}

// mirrorClient implements remote.Client for one upstream repository: reads
// of a manifest or blob by digest go to the mirrors in order, then to the
// upstream; a tag is resolved by a HEAD at the upstream and its manifest read
// by digest the same way (see tag). Everything else (tag lists, referrers,
// ranges) goes to the upstream.
type mirrorClient struct {
	c        *Client
	upstream *auth.Client
	ref      imageref.Reference
	mirrors  []mirrorEndpoint
}

func (mc *mirrorClient) Do(req *http.Request) (*http.Response, error) {
	kind, reference, ok := mc.classify(req)
	if !ok {
		return mc.upstream.Do(req)
	}
	dgst, derr := digest.Parse(reference)
	if derr != nil || dgst.Validate() != nil {
		if kind != "manifests" {
			return mc.upstream.Do(req)
		}
		return mc.tag(req, kind, reference)
	}
	for _, ep := range mc.mirrors {
		resp, done, err := mc.try(req, ep, kind, reference, dgst, false)
		if done {
			return resp, err
		}
	}
	return mc.upstream.Do(req)
}

// classify reports whether req reads a manifest or blob of the repository
// (GET or HEAD /v2/<repository>/manifests|blobs/<reference>), without a
// Range header (a part of a blob cannot be verified on its own).
func (mc *mirrorClient) classify(req *http.Request) (kind, reference string, ok bool) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return "", "", false
	}
	if req.Header.Get("Range") != "" {
		return "", "", false
	}
	rest, found := strings.CutPrefix(req.URL.Path, "/v2/"+mc.ref.Repository+"/")
	if !found {
		return "", "", false
	}
	kind, reference, found = strings.Cut(rest, "/")
	if !found || (kind != "manifests" && kind != "blobs") || reference == "" || strings.Contains(reference, "/") {
		return "", "", false
	}
	return kind, reference, true
}

// tag resolves a tag at the upstream with a HEAD request and reads the
// manifest it names from the mirrors by digest (a mirror that may resolve
// tags is asked by tag, so that it learns the tag, and its answer must be the
// digest the upstream named), else from the upstream. When the upstream
// cannot be reached (connection error or 5xx after its retries), the mirrors
// that may resolve tags answer alone. The upstream's own refusal (404, 401)
// is returned as the upstream gives it.
func (mc *mirrorClient) tag(req *http.Request, kind, tag string) (*http.Response, error) {
	head := req.Clone(req.Context())
	head.Method, head.Body, head.GetBody, head.ContentLength = http.MethodHead, nil, nil, 0
	hresp, herr := mc.upstream.Do(head)
	if req.Context().Err() != nil {
		if herr == nil {
			hresp.Body.Close()
		}
		return nil, req.Context().Err()
	}
	if herr == nil {
		hresp.Body.Close()
		d, err := digest.Parse(hresp.Header.Get("Docker-Content-Digest"))
		switch {
		case hresp.StatusCode == http.StatusOK && err == nil && d.Validate() == nil:
			for _, ep := range mc.mirrors {
				if ep.m.ResolveTags {
					if resp, done, err := mc.try(req, ep, kind, tag, d, true); done {
						return resp, err
					}
				}
				if resp, done, err := mc.try(req, ep, kind, d.String(), d, false); done {
					return resp, err
				}
			}
			return mc.upstream.Do(req)
		case hresp.StatusCode < 500:
			return mc.upstream.Do(req) // its answer, with the body a HEAD lacks
		}
	}
	for _, ep := range mc.mirrors {
		if !ep.m.ResolveTags {
			continue
		}
		resp, done, err := mc.try(req, ep, kind, tag, "", false)
		if done && err == nil {
			mc.c.logger.Warn("registry tag resolved by a mirror: the upstream cannot be reached",
				"upstream", mc.ref.Registry, "repository", mc.ref.Repository, "tag", errdef.Cut(tag), "mirror", ep.ref.Registry)
		}
		if done {
			return resp, err
		}
	}
	return mc.upstream.Do(req)
}

// try asks one mirror for reference (a digest, or a tag). done reports
// whether its answer is final: a success whose body is verified against want
// as it is read, or content that contradicts want (an error naming the
// mirror). Otherwise the mirror failed and the next source is asked. want ""
// (a tag the upstream could not resolve) takes the digest the mirror names.
// stale: a mirror naming another digest than want for a tag is out of date,
// not substituting content; the next source is asked.
func (mc *mirrorClient) try(req *http.Request, ep mirrorEndpoint, kind, reference string, want digest.Digest, stale bool) (*http.Response, bool, error) {
	ctx := req.Context()
	if mc.c.mirrorPaused(ep.ref.Registry) {
		return nil, false, nil
	}
	scheme := "https"
	if ep.m.PlainHTTP || mc.c.CredentialsOverPlainHTTP(ep.ref.Registry) { // the operator's, never an http:// an Application wrote
		scheme = "http"
	}
	u := &url.URL{Scheme: scheme, Host: ep.ref.Registry, Path: "/v2/" + ep.ref.Repository + "/" + kind + "/" + reference}
	mctx := auth.AppendRepositoryScope(ctx, ep.ref, auth.ActionPull)
	mreq, err := http.NewRequestWithContext(mctx, req.Method, u.String(), nil)
	if err != nil {
		return nil, false, nil
	}
	for k, vs := range req.Header {
		if k == "Authorization" {
			continue // the upstream's, never the mirror's
		}
		mreq.Header[k] = vs
	}
	resp, err := ep.client.Do(mreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, true, ctx.Err()
		}
		if !errors.Is(err, errdef.ErrInsecure) {
			mc.c.pauseMirror(ep.ref.Registry)
		}
		mc.fellBack(ep, kind, reference, connCause(err))
		return nil, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		mc.fellBack(ep, kind, reference, "HTTP "+strconv.Itoa(resp.StatusCode)+" "+http.StatusText(resp.StatusCode))
		return nil, false, nil
	}
	claimed := resp.Header.Get("Docker-Content-Digest")
	switch {
	case want == "": // a tag only the mirror resolved: its manifest must be the one it names
		d, err := digest.Parse(claimed)
		if err != nil || d.Validate() != nil {
			resp.Body.Close()
			mc.fellBack(ep, kind, reference, "no Docker-Content-Digest for the tag")
			return nil, false, nil
		}
		want = d
	case claimed != "" && claimed != want.String() && stale:
		resp.Body.Close()
		mc.fellBack(ep, kind, reference, "the mirror's tag names other content than the upstream's")
		return nil, false, nil
	case claimed != "" && claimed != want.String():
		resp.Body.Close()
		return nil, true, mc.mismatch(ep, kind, want, "names "+errdef.Quote(claimed))
	}
	resp.Header.Set("Docker-Content-Digest", want.String())
	if req.Method == http.MethodGet {
		resp.Body = &verifyingBody{rc: resp.Body, want: want, h: want.Algorithm().Hash(), fail: func(got digest.Digest) error {
			return mc.mismatch(ep, kind, want, "served "+got.String())
		}}
	}
	mc.c.logger.Debug("registry read from mirror", "upstream", mc.ref.Registry, "mirror", ep.ref.Registry, "repository", ep.ref.Repository, "reference", errdef.Cut(reference))
	return resp, true, nil
}

func (mc *mirrorClient) fellBack(ep mirrorEndpoint, kind, reference, cause string) {
	mc.c.logger.Warn("registry mirror failed, asking the next mirror or the upstream",
		"upstream", mc.ref.Registry, "mirror", ep.ref.Registry, "repository", ep.ref.Repository,
		"kind", strings.TrimSuffix(kind, "s"), "reference", errdef.Cut(reference), "cause", cause)
}

// mismatch is the error of a mirror that served other content than the
// digest names: the request fails, naming the mirror; the upstream is not
// asked instead, so that a corrupt or compromised mirror is seen and fixed.
func (mc *mirrorClient) mismatch(ep mirrorEndpoint, kind string, want digest.Digest, what string) error {
	op := "fetch blob"
	if kind == "manifests" {
		op = "fetch manifest"
	}
	return &Error{
		Op: op + " (mirror of " + mc.ref.Registry + ")", Registry: ep.ref.Registry, Repository: ep.ref.Repository,
		Reference: want.String(), Kind: errdef.ErrDigestMismatch,
		Err:  fmt.Errorf("the mirror %s instead", what),
		Hint: "content from a mirror must match its digest; the mirror's content is refused: repair or remove the mirror",
	}
}

func (c *Client) pauses() *mirrorPauses {
	if c.o.shared != nil {
		return &c.o.shared.mirrorPauses
	}
	return &c.mirrors.pause
}

func (c *Client) mirrorPaused(host string) bool {
	p := c.pauses()
	p.mu.Lock()
	defer p.mu.Unlock()
	until, ok := p.until[host]
	return ok && time.Now().Before(until)
}

func (c *Client) pauseMirror(host string) {
	p := c.pauses()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until == nil {
		p.until = map[string]time.Time{}
	}
	p.until[host] = time.Now().Add(DefaultMirrorPause)
}

// connCause classifies a failed connection to a mirror for the log without
// quoting what the other end sent (a banner, an HTML page).
func connCause(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errdef.ErrInsecure):
		return "plain HTTP to the mirror is not allowed"
	case isTLSError(err):
		return "TLS verification failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case strings.Contains(err.Error(), "HTTP response to HTTPS client"), strings.Contains(err.Error(), "malformed HTTP"):
		return "the mirror did not answer as an HTTP registry"
	default:
		return "connection failed"
	}
}

// verifyingBody hashes a mirror's body and fails its end when the content
// is not what the digest names.
type verifyingBody struct {
	rc   io.ReadCloser
	want digest.Digest
	h    hash.Hash
	fail func(got digest.Digest) error
	err  error
}

func (b *verifyingBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	b.h.Write(p[:n])
	if err == io.EOF {
		if got := digest.NewDigest(b.want.Algorithm(), b.h); got != b.want {
			b.err = b.fail(got)
			return n, b.err
		}
	}
	return n, err
}

func (b *verifyingBody) Close() error { return b.rc.Close() }
