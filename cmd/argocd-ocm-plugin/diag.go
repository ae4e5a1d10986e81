package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/bytesize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// envLogLevel sets the sidecar's log level (debug, info, warn, error); like
// every ARGOCD_OCM_ setting it is the sidecar's, an Application cannot set it.
const envLogLevel = "ARGOCD_OCM_LOG_LEVEL"

// diagnostics is what a command line says about itself besides its result:
// the log (-v/--verbose, ARGOCD_OCM_LOG_LEVEL) and render's progress line.
type diagnostics struct {
	verbose bool
	stderr  io.Writer
	// log, when set, receives the log lines of info and debug level instead
	// of stderr: the render server's own log (the sidecar's container log), so
	// that what a client gets back stays its result and its error line.
	log io.Writer
	// terminal reports whether w is a terminal (a seam for tests).
	terminal func(w io.Writer) bool
}

// newDiagnostics: log is the render server's log of its generations (process.log), else nil.
func newDiagnostics(stderr, log io.Writer) *diagnostics {
	return &diagnostics{stderr: stderr, log: log, terminal: isTerminal}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// logger returns the logger of one command. By default warnings go to
// notes, which reach stderr only on success, so a failure stays one line;
// at info or debug level every line goes to stderr (or the server's log) as
// it happens, failures included: the user asked for them.
func (d *diagnostics) logger(notes io.Writer, getenv func(string) string) (*slog.Logger, error) {
	level := slog.LevelWarn
	if s := strings.TrimSpace(getenv(envLogLevel)); s != "" {
		if err := level.UnmarshalText([]byte(s)); err != nil {
			return nil, fmt.Errorf("%w: %s=%s: want debug, info, warn or error", errdef.ErrInvalidInput, envLogLevel, errdef.Quote(s))
		}
	}
	if d.verbose {
		level = slog.LevelDebug
	}
	if level >= slog.LevelWarn {
		return slog.New(slog.NewTextHandler(notes, &slog.HandlerOptions{Level: level})), nil
	}
	w := d.stderr
	if d.log != nil && !d.verbose { // -v is someone at a terminal: their stderr
		w = d.log
	}
	l := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	if app := getenv("ARGOCD_APP_NAME"); app != "" {
		l = l.With("application", app)
	}
	return l, nil
}

// loggedRepository logs what the pipeline asks a repository, with timings.
type loggedRepository struct {
	ocm.Repository
	log *slog.Logger
}

// logOpened is a argocdocm.Renderer.Opened that logs what the pipeline asks
// each repository, with timings; nil below the debug level.
func logOpened(log *slog.Logger) func(string, ocm.Repository) ocm.Repository {
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return nil
	}
	return func(name string, repo ocm.Repository) ocm.Repository {
		log.Debug("repository opened", "repository", redactSpec(name), "type", fmt.Sprintf("%T", repo))
		return &loggedRepository{Repository: repo, log: log}
	}
}

func (r *loggedRepository) ListVersions(ctx context.Context, component string) ([]string, error) {
	start := time.Now()
	vs, err := r.Repository.ListVersions(ctx, component)
	if err != nil {
		r.log.Debug("versions not listed", "component", component, "ms", since(start), "cause", err.Error())
		return nil, err
	}
	r.log.Debug("versions listed", "component", component, "versions", len(vs), "ms", since(start))
	return vs, nil
}

func (r *loggedRepository) LookupComponentVersion(ctx context.Context, component, version string) (ocm.ComponentVersion, error) {
	start := time.Now()
	cv, err := r.Repository.LookupComponentVersion(ctx, component, version)
	if err != nil {
		r.log.Debug("component version not found", "component", component, "version", version, "ms", since(start), "cause", err.Error())
		return nil, err
	}
	r.log.Debug("component version resolved", "component", component, "version", version,
		"descriptor", cv.DescriptorDigest(), "resources", len(cv.Descriptor().Resources), "ms", since(start))
	return cv, nil
}

// ListComponents passes the repository's component listing through (see
// suggestComponents).
func (r *loggedRepository) ListComponents(ctx context.Context) ([]string, error) {
	if l, ok := r.Repository.(componentLister); ok {
		return l.ListComponents(ctx)
	}
	return nil, errNoListing
}

func since(t time.Time) int64 { return time.Since(t).Milliseconds() }

// redactSpec drops user information from URL-ish repository specs: they are
// logged, and a user may have written http://user:password@host/….
func redactSpec(spec string) string {
	if u, err := url.Parse(spec); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	return spec
}

// progress is render's download progress: one line on a terminal's stderr,
// rewritten in place, shown once downloads take longer than progressAfter.
type progress struct {
	w     io.Writer
	start time.Time
	now   func() time.Time

	mu      sync.Mutex
	bytes   int64
	printed time.Time
	shown   bool
}

const (
	progressAfter = time.Second
	progressEvery = 200 * time.Millisecond
)

func newProgress(w io.Writer) *progress {
	return &progress{w: w, start: time.Now(), now: time.Now}
}

// add counts n bytes read from the network.
func (p *progress) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bytes += int64(n)
	now := p.now()
	if now.Sub(p.start) < progressAfter || now.Sub(p.printed) < progressEvery {
		return
	}
	p.printed, p.shown = now, true
	fmt.Fprintf(p.w, "\rdownloading: %s", bytesize.Format(p.bytes))
}

// done clears the line (the manifests or the error come next).
func (p *progress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
