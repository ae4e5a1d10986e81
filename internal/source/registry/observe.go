package registry

import (
	"io"
	"log/slog"
	"net/http"
	"time"
)

// WithBodyObserver calls observe with the number of bytes of every read of a
// response body (manifests, blobs, tag lists), e.g. for a progress line.
// observe may be called from several goroutines at once. Default: none.
func WithBodyObserver(observe func(n int)) Option {
	return func(o *options) { o.observe = observe }
}

// logRequest writes one debug line per HTTP exchange: method, host, path,
// status and duration. Never headers or the query: they may carry
// credentials or tokens.
func (c *Client) logRequest(req *http.Request, resp *http.Response, err error, start time.Time) {
	if !c.logger.Enabled(req.Context(), slog.LevelDebug) {
		return
	}
	attrs := []any{"method", req.Method, "host", req.URL.Host, "path", req.URL.Path, "ms", time.Since(start).Milliseconds()}
	if err != nil {
		c.logger.Debug("registry request failed", append(attrs, "cause", err.Error())...)
		return
	}
	c.logger.Debug("registry request", append(attrs, "status", resp.StatusCode, "bytes", resp.ContentLength)...)
}

type observedBody struct {
	io.ReadCloser
	observe func(int)
}

func (b *observedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.observe(n)
	}
	return n, err
}
