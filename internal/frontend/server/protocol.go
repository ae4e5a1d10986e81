package server

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// ProtocolVersion changes whenever Request or the response framing changes.
// 2: the server acknowledges a request it runs before the result (see Do).
const ProtocolVersion = 2

// EnvSocket names the server's socket. `argocd-ocm-plugin serve -- COMMAND`
// sets it for COMMAND (argocd-cmp-server), whose generate commands inherit it.
const EnvSocket = "ARGOCD_OCM_SERVER_SOCKET"

// MaxRequestSize bounds a request. Argo CD passes an Application's
// parameters in the environment of the client it starts, and Linux bounds
// that: one variable (ARGOCD_APP_PARAMETERS) to 128 KiB (MAX_ARG_STRLEN), all
// of them to a quarter of the stack limit (2 MiB by default). A request
// larger than this did not come from argocd-cmp-server.
const MaxRequestSize = 4 << 20

// MaxRequestBytes bounds the request bytes the server holds at once, over
// all connections: past it, a request is refused with one error line
// instead of growing the supervisor (see Server.RequestBudget).
const MaxRequestBytes = 32 << 20

// ErrUnavailable means the server did not run the request (no server, another
// protocol or environment, shutting down, connection lost before a complete
// result). The caller can safely render by itself: nothing was written.
var ErrUnavailable = errors.New("render server unavailable")

// ErrLost means the server accepted the request and then gave no complete
// result (it died, or the client's own deadline passed). The request may
// still be running or have run: the caller must not run it a second time,
// only report the failure (Argo CD retries the generation).
var ErrLost = errors.New("render server accepted the request but gave no result")

// Request is one command for the server.
type Request struct {
	Protocol int      `json:"protocol"`
	Args     []string `json:"args"`
	// Dir is the client's working directory: the Application's path.
	Dir string `json:"dir"`
	// Env holds the request-scoped variables of the client ("NAME=value").
	Env []string `json:"env"`
	// Fingerprint is Fingerprint of the client's whole environment.
	Fingerprint string `json:"fingerprint"`
	// EnvDigests is EnvDigests of the client's environment: it lets a
	// server that refuses the request log which variables differ (names
	// only). Optional.
	EnvDigests []string `json:"envDigests,omitempty"`
	// Deadline is when the generation must be done: set by the supervisor
	// for its worker (arrival + the generation deadline); a client's value
	// is ignored.
	Deadline time.Time `json:"deadline,omitzero"`
}

// NewRequest builds a request from a client's arguments, working directory
// and environment (os.Environ()).
func NewRequest(args []string, dir string, environ []string) *Request {
	req := &Request{Protocol: ProtocolVersion, Args: args, Dir: dir, Fingerprint: Fingerprint(environ), EnvDigests: EnvDigests(environ)}
	for _, kv := range environ {
		if name, _, ok := strings.Cut(kv, "="); ok && RequestScoped(name) {
			req.Env = append(req.Env, kv)
		}
	}
	return req
}

// Getenv returns the environment a command of this request sees:
// request-scoped variables from the request only (unset when it does not
// carry them), everything else from sidecar (the server's os.Getenv).
func (r *Request) Getenv(sidecar func(string) string) func(string) string {
	own := make(map[string]string, len(r.Env))
	for _, kv := range r.Env {
		if name, value, ok := strings.Cut(kv, "="); ok && RequestScoped(name) {
			own[name] = value
		}
	}
	return func(name string) string {
		if RequestScoped(name) {
			return own[name]
		}
		return sidecar(name)
	}
}

// RequestScoped reports whether a variable belongs to one generation rather
// than to the sidecar: what argocd-cmp-server adds for an Application
// (ARGOCD_APP_*, ARGOCD_ENV_*, PARAM_*, KUBE_VERSION, KUBE_API_VERSIONS).
func RequestScoped(name string) bool {
	switch name {
	case "KUBE_VERSION", "KUBE_API_VERSIONS":
		return true
	}
	return strings.HasPrefix(name, "ARGOCD_APP_") || strings.HasPrefix(name, "ARGOCD_ENV_") || strings.HasPrefix(name, "PARAM_")
}

// volatile variables differ between a process and its children without
// meaning anything to the plugin (shells and os/exec set them).
func volatile(name string) bool {
	switch name {
	case "PWD", "OLDPWD", "SHLVL", "_", EnvSocket:
		return true
	}
	return false
}

// argoCDOwn reports whether a variable is one of Argo CD's own settings
// (ARGOCD_*, other than the plugin's ARGOCD_OCM_* and the request-scoped
// ones). The plugin reads none of them (TestPluginReadsNoArgoCDSetting), and
// argocd-cmp-server changes some in its own environment at start-up
// (ARGOCD_LOG_FORMAT, ARGOCD_LOG_LEVEL), which its commands inherit: counted,
// they would make every client differ from the server that started it.
func argoCDOwn(name string) bool {
	return strings.HasPrefix(name, "ARGOCD_") && !strings.HasPrefix(name, "ARGOCD_OCM_") && !RequestScoped(name)
}

// fingerprinted reports whether a variable counts in Fingerprint.
func fingerprinted(name string) bool {
	return name != "" && !RequestScoped(name) && !volatile(name) && !argoCDOwn(name)
}

// Fingerprint hashes the sidecar-level part of an environment: everything
// that is neither request-scoped, volatile nor Argo CD's own. Client and
// server compare it so that a client started with other settings (registry
// credentials, signature policy, cache directory, timeouts) is never served
// with the server's.
func Fingerprint(environ []string) string {
	kept := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if fingerprinted(name) {
			kept = append(kept, kv)
		}
	}
	slices.Sort(kept)
	kept = slices.Compact(kept)
	h := sha256.New()
	for _, kv := range kept {
		h.Write([]byte(kv))
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// EnvDigests lists the variables Fingerprint counts as "NAME=h", h a short
// hash of the value, sorted: enough to name the variables two environments
// disagree on (DifferingVariables), without their values.
func EnvDigests(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if fingerprinted(name) {
			sum := sha256.Sum256([]byte(value))
			out = append(out, name+"="+hex.EncodeToString(sum[:6]))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// DifferingVariables names the variables of two EnvDigests lists that are
// set in one only or set to other values, sorted.
func DifferingVariables(a, b []string) []string {
	index := func(ds []string) map[string]string {
		m := make(map[string]string, len(ds))
		for _, d := range ds {
			name, h, _ := strings.Cut(d, "=")
			m[name] = h
		}
		return m
	}
	ma, mb := index(a), index(b)
	var names []string
	for name, h := range ma {
		if hb, ok := mb[name]; !ok || hb != h {
			names = append(names, name)
		}
	}
	for name := range mb {
		if _, ok := ma[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Result is what the command did.
type Result struct {
	Exit   int
	Stdout []byte
	Stderr []byte
}

// header precedes the raw stdout and stderr bytes of a response.
type header struct {
	Exit   int `json:"exit"`
	Stdout int `json:"stdout"`
	Stderr int `json:"stderr"`
	// Refused says why the server did not run the request.
	Refused string `json:"refused,omitempty"`
	// Accepted precedes the result of a request the server runs: from then
	// on the client must not run the request itself. A worker sends it to
	// its supervisor for each job it read, before it runs it: without it,
	// the job did not run in that worker.
	Accepted bool `json:"accepted,omitempty"`
	// Ready is a worker's first message: its process id, once it is past
	// package initialisation and reads requests.
	Ready int `json:"ready,omitempty"`
}

func writeRequest(w io.Writer, req *Request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(b) > MaxRequestSize {
		return fmt.Errorf("request of %d bytes is larger than %d", len(b), MaxRequestSize)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func readRequest(r *bufio.Reader) (*Request, error) {
	req, _, err := readRequestLine(r, nil)
	return req, err
}

// readRequestLine reads one request and returns it with its line (without
// the newline). take, when set, is asked for every chunk of the line before
// it is kept; a refusal ends the read with errBudget.
func readRequestLine(r *bufio.Reader, take func(int) bool) (*Request, []byte, error) {
	line, err := readLineBudget(r, MaxRequestSize, take)
	if err != nil {
		return nil, nil, err
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, nil, fmt.Errorf("malformed request: %v", err)
	}
	return &req, line, nil
}

// errBudget: the server holds as many request bytes as it may.
var errBudget = errors.New("request budget exhausted")

// jobHeader precedes a request line from a supervisor to its worker.
// Supervisor and worker are the same binary; a field added here is
// optional (omitempty, zero means "as before"), so that a worker ignores
// what it does not know and a missing field changes nothing.
type jobHeader struct {
	// Deadline is when the generation must be done (arrival + the deadline).
	Deadline time.Time `json:"deadline"`
	// Procs is how many Ps (runtime.GOMAXPROCS) the worker renders this
	// generation with: the supervisor's share of the cores for it (see
	// Pool.Procs). 0: keep the worker's current setting.
	Procs int `json:"procs,omitempty"`
	// GC is the GOGC the worker renders this generation with (see
	// Pool.GCAlone). 0: the worker's own (its environment's).
	GC int `json:"gc,omitempty"`
}

// writeJob sends a worker one request: the job header, then the client's
// request line as it came (not decoded and encoded again). A request of up
// to maxJoinedJob bytes (all of argocd-cmp-server's but those with very
// large parameters) goes with its header in one write, which wakes the
// worker once; a larger one is not copied.
func writeJob(w io.Writer, h jobHeader, raw []byte) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if len(raw) <= maxJoinedJob {
		b = append(append(append(b, '\n'), raw...), '\n')
		_, err = w.Write(b)
		return err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	_, err = w.Write([]byte{'\n'})
	return err
}

// maxJoinedJob is the largest request writeJob copies behind its header.
const maxJoinedJob = 64 << 10

// readJob is the worker's side of writeJob.
func readJob(r *bufio.Reader) (*Request, jobHeader, error) {
	var h jobHeader
	line, err := readLine(r, 4096)
	if err != nil {
		return nil, h, err
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, h, fmt.Errorf("malformed job: %v", err)
	}
	req, err := readRequest(r)
	if err != nil {
		return nil, h, err
	}
	req.Deadline = h.Deadline
	return req, h, nil
}

func writeResult(w io.Writer, h header, stdout, stderr []byte) error {
	return writeResultBuffered(bufio.NewWriterSize(w, 64<<10), h, stdout, stderr)
}

// writeResultBuffered is writeResult through bw, which it flushes.
func writeResultBuffered(bw *bufio.Writer, h header, stdout, stderr []byte) error {
	h.Stdout, h.Stderr = len(stdout), len(stderr)
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	bw.Write(append(b, '\n'))
	bw.Write(stdout)
	bw.Write(stderr)
	return bw.Flush()
}

// maxOutput bounds what a client accepts; Argo CD's own gRPC limit is 100 MiB.
const maxOutput = 1 << 30

func readHeader(r *bufio.Reader) (header, error) {
	var h header
	line, err := readLine(r, 4096)
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, fmt.Errorf("malformed response: %v", err)
	}
	return h, nil
}

func writeHeader(w io.Writer, h header) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func readResult(r *bufio.Reader) (*Result, string, error) {
	h, err := readHeader(r)
	if err != nil {
		return nil, "", err
	}
	if h.Refused != "" {
		return nil, h.Refused, nil
	}
	return readBody(r, h)
}

// readBody reads the output a result header announces.
func readBody(r *bufio.Reader, h header) (*Result, string, error) {
	if h.Stdout < 0 || h.Stderr < 0 || h.Stdout > maxOutput || h.Stderr > maxOutput {
		return nil, "", fmt.Errorf("malformed response: output sizes %d, %d", h.Stdout, h.Stderr)
	}
	res := &Result{Exit: h.Exit, Stdout: make([]byte, h.Stdout), Stderr: make([]byte, h.Stderr)}
	if _, err := io.ReadFull(r, res.Stdout); err != nil {
		return nil, "", fmt.Errorf("response cut short: %w", err)
	}
	if _, err := io.ReadFull(r, res.Stderr); err != nil {
		return nil, "", fmt.Errorf("response cut short: %w", err)
	}
	return res, "", nil
}

// readLine reads up to '\n', refusing lines longer than limit.
func readLine(r *bufio.Reader, limit int) ([]byte, error) { return readLineBudget(r, limit, nil) }

// readLineBudget is readLine asking take (when set) for every chunk it
// keeps.
func readLineBudget(r *bufio.Reader, limit int, take func(int) bool) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if take != nil && len(chunk) > 0 && !take(len(chunk)) {
			return nil, errBudget
		}
		line = append(line, chunk...)
		if len(line) > limit+1 {
			return nil, fmt.Errorf("message longer than %d bytes", limit)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}
