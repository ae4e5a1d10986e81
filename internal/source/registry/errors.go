package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	orasdef "oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
)

// Error is a failed registry operation. Its message names the registry,
// repository, reference, operation and HTTP status; errors.Is finds the
// errdef sentinel that classifies it (ErrNotFound, ErrUnauthorized,
// ErrInsecure, ErrDigestMismatch, …) when there is one.
type Error struct {
	Op         string // "fetch manifest", "fetch blob", "list tags", …
	Registry   string
	Repository string
	Reference  string // tag or digest, may be ""
	StatusCode int    // HTTP status, 0 if no response
	Hint       string // what the user can do, may be ""
	Kind       error  // errdef sentinel, may be nil
	Err        error  // cause
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "registry %s", e.Registry)
	if e.Repository != "" {
		fmt.Fprintf(&b, ": repository %s", e.Repository)
	}
	if e.Reference != "" {
		fmt.Fprintf(&b, ": reference %s", e.Reference)
	}
	if e.Op != "" {
		fmt.Fprintf(&b, ": %s", e.Op)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	if e.Err != nil {
		if m := Sanitize(e.Err.Error()); m != "" {
			b.WriteString(": ")
			b.WriteString(m)
		}
	}
	if e.Kind != nil && (e.Err == nil || !errors.Is(e.Err, e.Kind)) {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the sentinel and the cause.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

var (
	queryRe    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`((?:https?|oci)://[^\s"?#]*)[?#][^\s"]*`) })
	userinfoRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`((?:https?|oci)://)[^\s"/@]*@`) })
	// An authorization scheme and what follows it: "Basic dXNlcjpwdw==",
	// "Bearer eyJ…", also URL-encoded.
	authSchemeRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(basic|bearer|token)(?:\s+|%20|\+)[A-Za-z0-9._~+/=-]+`)
	})
	// key=value and "key": "value" pairs whose key names a secret.
	secretPairRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(password|passwd|secret|token|access_token|refresh_token|authorization|auth)("?\s*[:=]\s*"?)[^\s"',;&}]+`)
	})
	// Runs of base64/base64url characters long enough to be a credential.
	tokenRunRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9+/_=-]{16,}`) })
)

// Sanitize removes what must not reach a log or the Argo CD UI from a message:
// URL query strings (signed blob redirect URLs carry credentials there), URL
// user info, anything that looks like a credential (an authorization scheme
// and its value, secret=value pairs, base64 or token-like runs mixing upper
// case, lower case and digits; digests and repository names, which are lower
// case, are kept), and control characters, cut to errdef.MaxMessage bytes.
func Sanitize(msg string) string {
	msg = userinfoRe().ReplaceAllString(msg, "${1}")
	msg = queryRe().ReplaceAllString(msg, "${1}")
	msg = authSchemeRe().ReplaceAllString(msg, "${1} [redacted]")
	msg = secretPairRe().ReplaceAllString(msg, "${1}${2}[redacted]")
	msg = tokenRunRe().ReplaceAllStringFunc(msg, func(run string) string {
		if strings.ContainsAny(run, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && strings.ContainsAny(run, "abcdefghijklmnopqrstuvwxyz") && strings.ContainsAny(run, "0123456789+/=") {
			return "[redacted]"
		}
		return run
	})
	return printable(errdef.CutMessage(msg))
}

// printable replaces what errdef.Quote would escape in registry text
// (control characters, Unicode line breaks, bidi overrides), so that it
// cannot break or reorder the one error line.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if !errdef.Printable(r) {
			return '?'
		}
		return r
	}, s)
}

// wrapError classifies err from an operation on ref. It is what every
// operation of Client returns; a nil err stays nil.
func (c *Client) wrapError(err error, op string, ref imageref.Reference) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	e := &Error{Op: op, Registry: ref.Registry, Repository: ref.Repository, Reference: ref.Ref(), Err: err}
	var resp *errcode.ErrorResponse
	switch {
	case errors.As(err, &resp):
		e.StatusCode = resp.StatusCode
		e.Err = errors.New(registryMessage(resp, func(m string) string { return Sanitize(c.redact(m)) }))
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			e.Kind = errdef.ErrUnauthorized
			e.Hint = c.authHint(ref.Registry)
		case http.StatusNotFound:
			e.Kind = errdef.ErrNotFound
		case http.StatusTooManyRequests:
			e.Hint = "rate limited; retried with backoff"
		}
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		e.StatusCode = http.StatusUnauthorized
		e.Kind, e.Err = errdef.ErrUnauthorized, errors.New("the registry requires credentials")
		e.Hint = c.authHint(ref.Registry)
	case strings.Contains(err.Error(), "missing username or password"):
		e.StatusCode = http.StatusUnauthorized
		e.Kind, e.Err = errdef.ErrUnauthorized, errors.New("the registry requires a username and password")
		e.Hint = c.authHint(ref.Registry)
	case errors.Is(err, orasdef.ErrNotFound):
		e.Kind, e.Err = errdef.ErrNotFound, nil
	case errors.Is(err, errdef.ErrInsecure):
		// from the guard transport; its message says what to do
	case isRefused(err):
		r, _ := addressRefused(err)
		e.Kind, e.Err = errdef.ErrForbidden, fmt.Errorf("connection refused by the sidecar: %w", r)
	case errors.Is(err, context.DeadlineExceeded):
		e.Err = fmt.Errorf("timed out: %w", context.DeadlineExceeded)
	case errors.Is(err, context.Canceled):
		e.Err = context.Canceled
	case isConnectionError(err):
		// One message whatever answered: a closed port, a timeout, a TLS
		// server, a plain-HTTP server or another protocol's banner read
		// the same, so that an Application cannot scan the network
		// through its errors. The cause is logged for the operator.
		c.logger.Debug("registry connection failed", "registry", ref.Registry, "cause", Sanitize(c.redact(causeOnly(err).Error())))
		var kind error
		if isTLSError(err) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
			kind = errdef.ErrInsecure
		}
		e.Kind, e.Err = kind, &unreachable{kind: kind}
		e.Hint = fmt.Sprintf("a registry with a private CA needs %s, one without TLS an http:// URL or the operator's ARGOCD_OCM_PLAIN_HTTP; `argocd-ocm-plugin render -v` shows the cause", EnvCAFile)
	default:
		e.Err = errors.New(Sanitize(c.redact(causeOnly(err).Error())))
	}
	return e
}

// unreachable is the one message of every failed connection (see
// wrapError); it unwraps to its kind for errors.Is.
type unreachable struct{ kind error }

func (u *unreachable) Error() string {
	return "no OCI registry answered (the connection was refused, reset or timed out, or TLS or HTTP failed)"
}

func (u *unreachable) Unwrap() error { return u.kind }

// isRefused reports whether the address policy refused the connection.
func isRefused(err error) bool {
	_, ok := addressRefused(err)
	return ok
}

// isConnectionError reports whether err is a failure before an HTTP
// response: dialing, TLS, or an answer that is not HTTP. The HTTP client
// wraps all of them in a url.Error; a body cut off after an HTTP response
// (the other side is an HTTP server, whatever its bytes) and errors of the
// content are not url.Errors and keep their cause.
func isConnectionError(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// registryMessage is the registry's own error text: its OCI error codes and
// a short part of each message (never the request URL, headers or the
// detail, which could echo request data). At most three errors are named.
// clean redacts each message before it is shortened, so that a credential is
// never cut into a prefix that no longer looks like one.
func registryMessage(resp *errcode.ErrorResponse, clean func(string) string) string {
	var parts []string
	for i, e := range resp.Errors {
		if i == 3 {
			parts = append(parts, "…")
			break
		}
		code := strings.ToLower(strings.ReplaceAll(printable(errdef.Cut(clean(e.Code))), "_", " "))
		if m := printable(errdef.Cut(clean(e.Message))); m != "" && !strings.EqualFold(m, code) {
			code += ": " + m
		}
		parts = append(parts, code) // Detail is left out: it is noise (and could echo request data)
	}
	return strings.Join(parts, "; ")
}

// causeOnly drops the url.Error wrapper, whose text repeats the URL.
func causeOnly(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return fmt.Errorf("%s: %w", strings.ToUpper(ue.Op), ue.Err)
	}
	return err
}

func isTLSError(err error) bool {
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	var ve *tls.CertificateVerificationError
	return errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &ve) ||
		(errors.As(err, &rh) && !strings.Contains(err.Error(), "HTTP response"))
}

func (c *Client) authHint(host string) string {
	if c.PlainHTTPAllowed(host) && !c.CredentialsOverPlainHTTP(host) {
		return fmt.Sprintf("no credentials are sent over plain HTTP to %s unless the operator allows the host (ARGOCD_OCM_PLAIN_HTTP or the policy's plainHTTP)", host)
	}
	if c.o.onlyScoped {
		if _, ok := c.scopeFor(CanonicalHost(host), ""); !ok {
			return fmt.Sprintf("the sidecar policy names no credentials for %s for this repository", host)
		}
		return "credentials named by the sidecar policy were rejected, or do not cover this repository"
	}
	if src := c.creds.source(host); src != "" {
		return "credentials from " + src + " were rejected"
	}
	if c.o.onlyScoped {
		return fmt.Sprintf("the sidecar policy names no credentials for %s for this repository", host)
	}
	if !envOwns(c.o.lookupEnv, host) {
		return fmt.Sprintf("no credentials configured for %s: set %s%s_HOST=%s and its _USERNAME/_PASSWORD (or _TOKEN), or mount a docker config", host, EnvPrefix, EnvName(host), CanonicalHost(host))
	}
	return fmt.Sprintf("no credentials configured for %s: set %s%s_USERNAME/_PASSWORD (or _TOKEN), or mount a docker config", host, EnvPrefix, EnvName(host))
}
