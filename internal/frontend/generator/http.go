package generator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
)

// Paths of Argo CD's plugin generator contract.
const (
	PathGetParams = "/api/v1/getparams.execute"
	PathHealth    = "/healthz"
	// PathReady answers 200 once the generator holds a usable token, 503
	// before: the readiness probe, so that a generator installed before its
	// token is set waits (no restarts) and gets no traffic.
	PathReady = "/readyz"
)

// Defaults of Handler.
const (
	// DefaultMaxBodyBytes bounds a request body; Argo CD sends a few hundred bytes.
	DefaultMaxBodyBytes = 64 << 10
	// DefaultRequestTimeout bounds one request, queueing included; below
	// Argo CD's default client timeout (30 s), so that our error is what
	// the ApplicationSet's status shows.
	DefaultRequestTimeout = 25 * time.Second
	// DefaultMaxConcurrent requests are served at once; the others wait in
	// line until their deadline. One ApplicationSet name holds at most one
	// of them (see Handler).
	DefaultMaxConcurrent = 4
)

// TokenSource returns the token requests must present. An error refuses
// every request (403) until it returns a token again.
type TokenSource func() ([]byte, error)

// Handler serves the contract over a Generator.
//
// Fairness: an ApplicationSet name (the request's applicationSetName) has at
// most one request served or waiting at a time; another request of that name
// meanwhile is answered 503 with Retry-After at once, without taking a turn
// or a place in line. Argo CD asks for one ApplicationSet's parameters one
// call at a time, so a second concurrent call is a retry of a call still
// running or an abuse; either way it must not take the turns other
// ApplicationSets wait for.
type Handler struct {
	Generator *Generator
	Token     TokenSource
	// MaxBodyBytes, RequestTimeout, MaxConcurrent: see the defaults (0 keeps them).
	MaxBodyBytes   int64
	RequestTimeout time.Duration
	MaxConcurrent  int
	Log            *slog.Logger
	// Webhook serves registry push events (PathWebhook), authenticated by
	// each source's own secret, not the token; nil: none.
	Webhook *Webhook

	sem chan struct{}

	mu     sync.Mutex
	active map[string]bool // ApplicationSet names with a request served or waiting
}

// Init applies the defaults; ServeHTTP calls it on first use otherwise.
// Call it before serving concurrently.
func (h *Handler) Init() {
	if h.MaxBodyBytes <= 0 {
		h.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if h.RequestTimeout <= 0 {
		h.RequestTimeout = DefaultRequestTimeout
	}
	if h.MaxConcurrent <= 0 {
		h.MaxConcurrent = DefaultMaxConcurrent
	}
	if h.Log == nil {
		h.Log = slog.New(slog.DiscardHandler)
	}
	if h.sem == nil {
		h.sem = make(chan struct{}, h.MaxConcurrent)
	}
	h.mu.Lock()
	if h.active == nil {
		h.active = map[string]bool{}
	}
	h.mu.Unlock()
}

// ServiceRequest is Argo CD's request (applicationset/services/plugin).
type ServiceRequest struct {
	ApplicationSetName string `json:"applicationSetName"`
	Input              struct {
		Parameters map[string]json.RawMessage `json:"parameters"`
	} `json:"input"`
}

// ServiceResponse is Argo CD's response.
type ServiceResponse struct {
	Output struct {
		Parameters []map[string]any `json:"parameters"`
	} `json:"output"`
}

// ErrorBody is the JSON body of every failure.
type ErrorBody struct {
	Error   string `json:"error"`   // the HTTP status text
	Message string `json:"message"` // what is wrong, one line (Argo CD shows it)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.sem == nil {
		h.Init()
	}
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			// A bug, not the caller's fault; no stack to the caller.
			h.Log.Error("panic serving request", "path", r.URL.Path, "panic", fmt.Sprint(p))
			writeError(w, http.StatusInternalServerError, "internal error")
		}
	}()
	if !h.route(w, r) {
		return
	}
	h.getParams(w, r, start)
}

// route answers the health endpoint, unknown endpoints and wrong methods,
// and refuses a caller without the token. It returns true for an
// authorized getparams request, which it leaves unanswered.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	if strings.HasSuffix(path, PathGetParams) {
		path = PathGetParams // baseUrl may have a path (a proxy's prefix)
	}
	if strings.Contains(path, PathWebhook) && h.Webhook != nil {
		h.Webhook.ServeHTTP(w, r)
		return false
	}
	switch path {
	case PathHealth:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "use GET")
			return false
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return false
	case PathReady:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "use GET")
			return false
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if tok, err := h.Token(); err != nil || len(tok) == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "no token yet: every request is refused until the token file holds one\n")
			return false
		}
		io.WriteString(w, "ok\n")
		return false
	case PathGetParams:
	default:
		refuse(w, http.StatusNotFound, "no such endpoint: POST "+PathGetParams+", GET "+PathHealth+" or GET "+PathReady)
		return false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		refuse(w, http.StatusMethodNotAllowed, "use POST")
		return false
	}
	// The token before anything else: an unauthenticated caller gets no
	// body read and no parsing, and its answer does not wait for its body.
	if !h.authorized(r) {
		h.Log.Warn("request refused: wrong or missing token", "remote", r.RemoteAddr)
		refuse(w, http.StatusForbidden, "wrong or missing bearer token")
		return false
	}
	return true
}

// refuse answers a request whose body is not read, and closes the
// connection: otherwise net/http reads (up to 256 KiB of) the unread body
// before it sends the answer, so a client that announces a body and never
// sends it would get its 403 only at the server's read timeout.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Connection", "close")
	writeError(w, status, msg)
}

// getParams answers an authorized getparams request: the parameter sets
// of its query, generated in one of the handler's turns within its timeout.
func (h *Handler) getParams(w http.ResponseWriter, r *http.Request, start time.Time) {
	ctx, cancel := context.WithTimeout(r.Context(), h.RequestTimeout)
	defer cancel()
	req, status, err := h.decode(w, r)
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	q, err := ParseQuery(req.Input.Parameters)
	if err != nil {
		h.finish(w, req.ApplicationSetName, start, http.StatusBadRequest, err, 0)
		return
	}
	if !h.claim(req.ApplicationSetName) {
		w.Header().Set("Retry-After", h.retryAfter())
		h.finish(w, req.ApplicationSetName, start, http.StatusServiceUnavailable,
			fmt.Errorf("%w: ApplicationSet %s already has a request in progress (one at a time per ApplicationSet)", errBusy, errdef.Quote(req.ApplicationSetName)), 0)
		return
	}
	defer h.release(req.ApplicationSetName)
	select {
	case h.sem <- struct{}{}:
		defer func() { <-h.sem }()
	case <-ctx.Done():
		w.Header().Set("Retry-After", h.retryAfter())
		h.finish(w, req.ApplicationSetName, start, http.StatusServiceUnavailable, fmt.Errorf("%w: no turn within %s", errBusy, h.RequestTimeout), 0)
		return
	}
	entries, err := h.Generator.Generate(ctx, q)
	if err != nil {
		status := status4(ctx, err)
		if status == http.StatusGatewayTimeout {
			err = fmt.Errorf("no answer within %s: %w", h.RequestTimeout, err)
		}
		h.finish(w, req.ApplicationSetName, start, status, err, 0)
		return
	}
	body, err := encodeResponse(entries)
	if err != nil {
		h.finish(w, req.ApplicationSetName, start, http.StatusInternalServerError, err, 0)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
	h.finish(nil, req.ApplicationSetName, start, http.StatusOK, nil, len(entries))
}

// encodeResponse is the JSON response of the parameter sets (an empty list,
// never null), HTML characters unescaped.
func encodeResponse(entries []map[string]any) ([]byte, error) {
	var resp ServiceResponse
	resp.Output.Parameters = entries
	if resp.Output.Parameters == nil {
		resp.Output.Parameters = []map[string]any{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// finish logs one line per request and, with w, writes the error.
func (h *Handler) finish(w http.ResponseWriter, appSet string, start time.Time, status int, err error, n int) {
	attrs := []any{"applicationSet", errdef.Field(appSet), "status", status, "ms", time.Since(start).Milliseconds()}
	if err != nil {
		// Bounded: Argo CD keeps it in the ApplicationSet's status.
		msg := registry.Sanitize(err.Error())
		attrs = append(attrs, "error", msg)
		h.Log.Warn("getparams", attrs...)
		if w != nil {
			writeError(w, status, msg)
		}
		return
	}
	h.Log.Info("getparams", append(attrs, "parameterSets", n)...)
}

// errBusy: no turn for the request (HTTP 503).
var errBusy = errors.New("the generator is busy")

// claim marks name as having a request in progress; false if it has one.
func (h *Handler) claim(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.active[name] {
		return false
	}
	h.active[name] = true
	return true
}

func (h *Handler) release(name string) {
	h.mu.Lock()
	delete(h.active, name)
	h.mu.Unlock()
}

// retryAfter is when a turn is sure to have ended: the request timeout,
// in whole seconds.
func (h *Handler) retryAfter() string {
	return strconv.Itoa(int((h.RequestTimeout + time.Second - 1) / time.Second))
}

// requestFaults are what the request (its parameters, the components it
// names, the policy it runs into) can change: HTTP 400, whatever the
// deadline, so that the ApplicationSet's status says what to fix.
var requestFaults = []error{
	errdef.ErrInvalidInput, errdef.ErrNotFound, errdef.ErrLimitExceeded,
	errdef.ErrForbidden, errdef.ErrNotAllowed, errdef.ErrInsecure, errCycle,
}

// status4 maps an error to its HTTP status: the request's fault 400, no
// turn 503, the deadline 504, anything else (the registry's, the network's
// or the content's fault) 502.
func status4(ctx context.Context, err error) int {
	if errors.Is(err, errBusy) {
		return http.StatusServiceUnavailable
	}
	for _, f := range requestFaults {
		if errors.Is(err, f) {
			return http.StatusBadRequest
		}
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

func (h *Handler) authorized(r *http.Request) bool {
	want, err := h.Token()
	if err != nil || len(want) == 0 {
		if err != nil {
			h.Log.Error("no usable token: every request is refused", "cause", err.Error())
		}
		return false
	}
	auth := r.Header.Get("Authorization")
	scheme, got, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	// Hashes of equal length: the comparison time says nothing about the
	// token, not even its length.
	a, b := sha256.Sum256([]byte(strings.TrimSpace(got))), sha256.Sum256(want)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// decode reads the bounded body as one JSON object.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request) (*ServiceRequest, int, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		w.Header().Set("Connection", "close") // the body stays unread (see refuse)
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("content type %s: want application/json", errdef.Quote(ct))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request body larger than %d bytes", h.MaxBodyBytes)
		}
		return nil, http.StatusBadRequest, errors.New("reading the request body failed")
	}
	var req ServiceRequest
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&req); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("%v: the request is not {\"applicationSetName\": \"…\", \"input\": {\"parameters\": {…}}}: %s", errdef.ErrInvalidInput, jsonProblem(err))
	}
	if d.More() {
		return nil, http.StatusBadRequest, fmt.Errorf("%v: data after the request object", errdef.ErrInvalidInput)
	}
	return &req, 0, nil
}

// jsonProblem says what is wrong with a body without quoting it.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("%s must be %s, not a JSON %s", typ.Field, typeName(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "empty or truncated body"
	default:
		return "malformed JSON"
	}
}

func typeName(k string) string {
	switch k {
	case "map", "struct":
		return "an object"
	case "string":
		return "a string"
	default:
		return k
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(ErrorBody{Error: http.StatusText(status), Message: msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// Server timeouts (NewServer).
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	IdleTimeout       = 90 * time.Second
	MaxHeaderBytes    = 16 << 10
)

// NewServer is an http.Server for h with the timeouts above; a slow client
// (headers or body) is cut off, the response may take the request timeout
// and some.
func NewServer(addr string, h *Handler) *http.Server {
	h.Init()
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      h.RequestTimeout + ReadTimeout + 5*time.Second,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(h.Log.Handler(), slog.LevelDebug),
	}
}
