package registrytest

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"

	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

// Request is one request the registry served.
type Request struct {
	Method string
	Path   string
	Status int
}

// IsBlob reports whether the request read a blob (GET /v2/…/blobs/…).
func (r Request) IsBlob() bool {
	return r.Method == http.MethodGet && strings.Contains(r.Path, "/blobs/sha")
}

// IsManifest reports whether the request read a manifest (GET or HEAD).
func (r Request) IsManifest() bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.Contains(r.Path, "/manifests/")
}

// String is "METHOD path -> status".
func (r Request) String() string { return fmt.Sprintf("%s %s -> %d", r.Method, r.Path, r.Status) }

// Registry is a CNCF distribution registry served in-process.
type Registry struct {
	// URL is the base URL: http://127.0.0.1:PORT (https:// with WithTLS).
	URL string
	// Host is 127.0.0.1:PORT, as it appears in references.
	Host string
	// Username and Password of WithBasicAuth, "" without.
	Username, Password string

	server *httptest.Server
	app    *handlers.App

	mu         sync.Mutex
	requests   []Request
	generation int // Reset calls so far
}

type config struct {
	user, pass string
	storageDir string
	addr       string
	tls        bool
	middleware []func(http.Handler) http.Handler
	proxy      *configuration.Proxy
	notify     []configuration.Endpoint
}

// Option configures Start.
type Option func(*config)

// WithBasicAuth requires HTTP basic auth (htpasswd with a bcrypt hash).
func WithBasicAuth(user, pass string) Option {
	return func(c *config) { c.user, c.pass = user, pass }
}

// WithStorageDir serves a filesystem storage directory (default: in memory).
// The registry writes to it: pass a copy of anything shared.
func WithStorageDir(dir string) Option { return func(c *config) { c.storageDir = dir } }

// WithAddr listens on addr (default 127.0.0.1:0). ErrAddrInUse is returned
// through Start's test failure unless the caller uses StartErr.
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithTLS serves HTTPS with httptest's self-signed certificate (see CAPEM).
func WithTLS() Option { return func(c *config) { c.tls = true } }

// WithMiddleware wraps the registry handler (inside the request recorder),
// e.g. to inject failures.
func WithMiddleware(m func(http.Handler) http.Handler) Option {
	return func(c *config) { c.middleware = append(c.middleware, m) }
}

// WithProxy makes the registry a pull-through cache of the registry at
// remoteURL (distribution's proxy mode), reading it with user and pass when
// set. The cache keeps what it fetched for as long as the test runs.
func WithProxy(remoteURL, user, pass string) Option {
	return func(c *config) {
		ttl := time.Duration(0) // never expire
		c.proxy = &configuration.Proxy{RemoteURL: remoteURL, Username: user, Password: pass, TTL: &ttl}
	}
}

// WithNotifications makes the registry send its notifications (CNCF
// distribution's events of pushes, pulls and deletes) to url with the given
// headers, as `notifications.endpoints` in its configuration does.
func WithNotifications(url string, headers http.Header) Option {
	return func(c *config) {
		c.notify = append(c.notify, configuration.Endpoint{
			Name: fmt.Sprintf("endpoint-%d", len(c.notify)), URL: url, Headers: headers,
			// A notification that times out is sent again: the timeout is a
			// safety net, so that a loaded machine does not deliver one event
			// twice.
			Timeout: 30 * time.Second, Threshold: 3, Backoff: 100 * time.Millisecond,
		})
	}
}

// ErrAddrInUse: WithAddr's address is taken.
var ErrAddrInUse = errors.New("address in use")

var quietOnce sync.Once

// Start starts a registry for the test; it is stopped at cleanup.
func Start(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	r, err := StartErr(t, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// StartErr is Start returning the error (ErrAddrInUse when WithAddr's
// address is taken), so a test can skip.
func StartErr(t testing.TB, opts ...Option) (*Registry, error) {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	quietOnce.Do(func() {
		// distribution logs every request through logrus at info level.
		logrus.SetLevel(logrus.ErrorLevel)
		logrus.SetOutput(io.Discard)
	})
	cfg := &configuration.Configuration{}
	storage := configuration.Storage{
		"delete":      configuration.Parameters{"enabled": true},
		"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
		"redirect":    configuration.Parameters{"disable": true},
	}
	if c.storageDir != "" {
		storage["filesystem"] = configuration.Parameters{"rootdirectory": c.storageDir}
	} else {
		storage["inmemory"] = configuration.Parameters{}
	}
	cfg.Storage = storage
	cfg.HTTP.Secret = "registrytest"
	cfg.Catalog.MaxEntries = 1000 // what the YAML configuration defaults to; 0 lists nothing
	if c.user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(c.pass), bcrypt.MinCost)
		if err != nil {
			return nil, err
		}
		f := filepath.Join(t.TempDir(), "htpasswd")
		if err := os.WriteFile(f, []byte(c.user+":"+string(hash)+"\n"), 0o600); err != nil {
			return nil, err
		}
		cfg.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "registrytest", "path": f}}
	}
	if c.proxy != nil {
		cfg.Proxy = *c.proxy
	}
	cfg.Notifications.Endpoints = c.notify
	ctx, cancel := context.WithCancel(context.Background())
	app := handlers.NewApp(ctx, cfg)
	reg := &Registry{app: app, Username: c.user, Password: c.pass}

	var h http.Handler = app
	for _, m := range c.middleware {
		h = m(h)
	}
	h = reg.record(h)

	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS handshake failures are what some tests provoke
	if c.addr != "" {
		l, err := net.Listen("tcp", c.addr)
		if err != nil {
			cancel()
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("%w: %s: %v", ErrAddrInUse, c.addr, err)
			}
			return nil, err
		}
		srv.Listener.Close()
		srv.Listener = l
	}
	if c.tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	reg.server = srv
	reg.URL = srv.URL
	reg.Host = strings.TrimPrefix(strings.TrimPrefix(srv.URL, "http://"), "https://")
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		app.Shutdown()
		cancel()
	})
	return reg, nil
}

// statusWriter records a request's status in the registry's log as the
// status goes out, before the client can see any of the response: a test
// that counts requests right after its client got an answer must find
// them all (recording after the handler returned raced with the client).
type statusWriter struct {
	http.ResponseWriter
	status int
	set    func(status int)
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.set(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		w.set(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Flush keeps streaming handlers working.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *Registry) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// Logged as it arrives; its status is filled in as it goes out.
		r.mu.Lock()
		gen := r.generation
		i := len(r.requests)
		r.requests = append(r.requests, Request{Method: req.Method, Path: req.URL.Path})
		r.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w, set: func(status int) {
			r.mu.Lock()
			if r.generation == gen && i < len(r.requests) {
				r.requests[i].Status = status
			}
			r.mu.Unlock()
		}}
		next.ServeHTTP(sw, req)
		if sw.status == 0 {
			sw.WriteHeader(http.StatusOK) // what net/http sends for a handler that wrote nothing
		}
	})
}

// Requests returns the requests served so far (all, including pushes).
func (r *Registry) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// Count counts the requests served so far that match (all when match is nil).
func (r *Registry) Count(match func(Request) bool) int {
	n := 0
	for _, q := range r.Requests() {
		if match == nil || match(q) {
			n++
		}
	}
	return n
}

// Reset forgets the requests served so far (call it after pushing).
func (r *Registry) Reset() {
	r.mu.Lock()
	r.requests = nil
	r.generation++ // requests in flight no longer update the log
	r.mu.Unlock()
}

// CAPEM is the PEM certificate of a WithTLS registry (nil otherwise).
func (r *Registry) CAPEM() []byte {
	c := r.server.Certificate()
	if c == nil || r.server.TLS == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// CertPool trusts a WithTLS registry.
func (r *Registry) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	if c := r.server.Certificate(); c != nil {
		p.AddCert(c)
	}
	return p
}

// HTTPClient is a client that trusts a WithTLS registry.
func (r *Registry) HTTPClient() *http.Client { return r.server.Client() }
