package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// guard refuses plain-HTTP requests to hosts that are not allowed. It sits
// below redirects, so an https registry cannot redirect the client to http.
type guard struct {
	base http.RoundTripper
	c    *Client
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.c.PlainHTTPAllowed(req.URL.Host) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%w: plain HTTP to %s is not allowed (use an http:// repository URL or allow the host explicitly)", errdef.ErrInsecure, req.URL.Host)
	}
	// A request with a body over plain HTTP to a host the operator did not
	// allow would be a token request carrying a password or refresh token
	// (registry reads are GET and HEAD): refused.
	if req.URL.Scheme == "http" && req.Body != nil && req.Body != http.NoBody && !g.c.CredentialsOverPlainHTTP(req.URL.Host) {
		req.Body.Close()
		return nil, fmt.Errorf("%w: no request body goes over plain HTTP to %s unless the operator allows the host", errdef.ErrInsecure, req.URL.Host)
	}
	// Credentials travel in clear text only to hosts the operator allowed;
	// the credential functions already hold them back, this is the last line.
	strip := req.URL.Scheme == "http" && req.Header.Get("Authorization") != "" && !g.c.CredentialsOverPlainHTTP(req.URL.Host)
	if req.Header.Get("User-Agent") == "" || strip {
		req = req.Clone(req.Context())
		if req.Header.Get("User-Agent") == "" {
			req.Header.Set("User-Agent", g.c.o.userAgent)
		}
		if strip {
			req.Header.Del("Authorization")
		}
	}
	start := time.Now()
	resp, err := g.base.RoundTrip(req)
	g.c.logRequest(req, resp, err, start)
	if err == nil && g.c.o.observe != nil && resp.Body != nil {
		resp.Body = &observedBody{ReadCloser: resp.Body, observe: g.c.o.observe}
	}
	return resp, err
}

// retryPolicy implements oras-go's retry.Policy: bounded exponential backoff
// on connection errors, 408, 429 and 5xx (not 501/505).
type retryPolicy struct {
	max      int
	min, cap time.Duration
	logger   *slog.Logger
}

func (p *retryPolicy) Retry(attempt int, resp *http.Response, err error) (time.Duration, error) {
	if attempt >= p.max {
		return -1, nil
	}
	if err != nil {
		if !retryableError(err) {
			return -1, nil
		}
	} else if !retryableStatus(resp.StatusCode) {
		return -1, nil
	}
	d := p.min << attempt
	if d <= 0 || d > p.cap {
		d = p.cap
	}
	// ±10 % jitter so that many workers do not retry in lockstep.
	d = d - d/10 + time.Duration(rand.Int64N(int64(d/5)+1))
	if resp != nil {
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			d = min(time.Duration(s)*time.Second, p.cap)
		}
	}
	what := ""
	if err != nil {
		what = "connection error"
	} else {
		what = "HTTP " + strconv.Itoa(resp.StatusCode)
		if resp.Request != nil {
			what += " from " + resp.Request.URL.Host
		}
	}
	p.logger.Debug("registry request failed, retrying", "cause", what, "attempt", attempt+1, "wait", d)
	return d, nil
}

func retryableStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return true
	case code == http.StatusNotImplemented, code == http.StatusHTTPVersionNotSupported:
		return false
	default:
		return code >= 500 && code <= 599
	}
}

// RetryableReadError reports whether an error reading a response body is
// worth fetching again: the connection was reset or cut off, or stalled past
// a transport timeout. The caller's deadline and cancellation are not.
func RetryableReadError(err error) bool {
	return err != nil && !errors.Is(err, io.EOF) && retryableError(err)
}

func retryableError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errdef.ErrInsecure) {
		return false
	}
	if isTLSError(err) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
