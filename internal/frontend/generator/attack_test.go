package generator_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/generator"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Hostile ApplicationSets: every author of one can send any parameters and
// name any repository the policy admits. These tests hold the generator to
// its bounds (doc.go, docs/security.md "The ApplicationSet generator").

// counting wraps an opener and counts descriptor lookups: all of them, and
// those begun after their request's context had ended.
type counting struct {
	open          generator.OpenFunc
	lookups, late atomic.Int32
}

func (c *counting) Open(ctx context.Context, spec string) (ocm.Repository, error) {
	r, err := c.open(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &countingRepo{Repository: r, c: c}, nil
}

type countingRepo struct {
	ocm.Repository
	c *counting
}

func (r *countingRepo) LookupComponentVersion(ctx context.Context, component, version string) (ocm.ComponentVersion, error) {
	r.c.lookups.Add(1)
	if ctx.Err() != nil {
		r.c.late.Add(1)
	}
	return r.Repository.LookupComponentVersion(ctx, component, version)
}

// fakeTags makes the registry list n version tags for component, none of
// which exists; with block, a request for one of them is answered only when
// its client gives up (or release closes): a registry that is slow on
// purpose.
func fakeTags(component string, n int, block bool, release <-chan struct{}) registrytest.Option {
	repo := "/v2/ocm/" + ocm.DescriptorRepository(component)
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.%d.%d", i/1000, i%1000)
	}
	list, _ := json.Marshal(map[string]any{"name": strings.TrimPrefix(repo, "/v2/"), "tags": tags})
	return registrytest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == repo+"/tags/list":
				w.Header().Set("Content-Type", "application/json")
				w.Write(list)
				return
			case block && strings.HasPrefix(r.URL.Path, repo+"/manifests/"):
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}
			next.ServeHTTP(w, r)
		})
	})
}

// fanOut pushes a platform of levels levels, each referencing the next
// level's platform refs times (the last the leaf application): refs^levels
// parameter sets from levels+1 small components. It returns the top's name.
func fanOut(t testing.TB, reg *registrytest.Registry, prefix string, levels, refs int) string {
	t.Helper()
	child := "example.org/" + prefix + "/leaf"
	comps := []*ocmbuild.Component{app(child, "1.0.0")}
	for l := levels; l >= 1; l-- {
		name := fmt.Sprintf("example.org/%s/level%02d", prefix, l)
		var rs []ocmbuild.Reference
		for i := 0; i < refs; i++ {
			rs = append(rs, ocmbuild.Reference{Name: fmt.Sprintf("r%d", i), ComponentName: child, Version: "1.0.0"})
		}
		comps = append(comps, platformOf(name, "1.0.0", rs...))
		child = name
	}
	reg.Push(t, "ocm", comps...)
	return child
}

// serveHandler serves h with the package's server settings, through the
// middleware wrap if any.
func serveHandler(t *testing.T, h *generator.Handler, wrap ...func(http.Handler) http.Handler) string {
	t.Helper()
	if h.Token == nil {
		tok := []byte(testToken)
		h.Token = func() ([]byte, error) { return tok, nil }
	}
	srv := generator.NewServer("", h)
	for _, w := range wrap {
		srv.Handler = w(srv.Handler)
	}
	ts := httptest.NewUnstartedServer(srv.Handler)
	ts.Config = srv
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL
}

// callerHeader repeats the ApplicationSet's name for a test's middleware
// (the handler does not read it).
const callerHeader = "X-Test-Application-Set"

// callAs is call as ApplicationSet appSet (callerHeader names it for a
// test's middleware); it returns the headers too. It fails no test, so
// that an attacker's loop and a test's goroutines can use it: a request
// that could not be made answers status 0 with the error as its body,
// which the caller's check of the status shows.
func callAs(url, appSet string, params map[string]any) (response, http.Header) {
	b, err := json.Marshal(map[string]any{"applicationSetName": appSet, "input": map[string]any{"parameters": params}})
	if err != nil {
		return response{0, []byte(err.Error())}, nil
	}
	req, err := http.NewRequest(http.MethodPost, url+generator.PathGetParams, bytes.NewReader(b))
	if err != nil {
		return response{0, []byte(err.Error())}, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set(callerHeader, appSet)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{0, []byte(err.Error())}, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{0, []byte(err.Error())}, nil
	}
	return response{resp.StatusCode, body}, resp.Header
}

// allocated runs fn and returns the bytes it allocated (the whole process's,
// so an upper bound).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Finding 1: a platform whose references fan out (4 per level) names 4^levels
// parameter sets from a handful of components. The cap is checked while they
// are built: the request stops at the 5001st with a 400 naming the cap,
// having allocated a few MiB, however deep the platform.
func TestReferenceFanOutStopsAtTheCap(t *testing.T) {
	reg := registrytest.Start(t)
	check := func(t *testing.T, top string) {
		g := (*fixture)(nil).generator(t, generator.Options{})
		q, err := generator.ParseQuery(map[string]json.RawMessage{
			"repository": json.RawMessage(fmt.Sprintf("%q", reg.URL+"/ocm")),
			"component":  json.RawMessage(fmt.Sprintf("%q", top)),
			"references": json.RawMessage("true"),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		// Once for the descriptors (the registry's and its client's
		// allocations, tens of MiB in-process), then measured: the expansion.
		if _, err := g.Generate(ctx, q); !errors.Is(err, errdef.ErrLimitExceeded) {
			t.Fatalf("cold: %v", err)
		}
		start := time.Now()
		var out []map[string]any
		bytes := allocated(func() { out, err = g.Generate(ctx, q) })
		took := time.Since(start)
		t.Logf("%s: %s, %.1f MiB allocated: %v", top, took.Round(time.Millisecond), float64(bytes)/(1<<20), err)
		if !errors.Is(err, errdef.ErrLimitExceeded) || !strings.Contains(err.Error(), "5000") || out != nil {
			t.Fatalf("%d parameter sets, error %v; want the cap of 5000", len(out), err)
		}
		// 5000 parameter sets are ~7 MiB; the 65 536 of 8 levels, built
		// before the cap was checked, were about 90 MiB.
		if bytes > 32<<20 {
			t.Errorf("allocated %.1f MiB before refusing", float64(bytes)/(1<<20))
		}
	}
	top8 := fanOut(t, reg, "fan8", 8, 4)
	if !t.Run("8 levels", func(t *testing.T) { check(t, top8) }) {
		return // 16 levels would exhaust the test's memory
	}
	top16 := fanOut(t, reg, "fan16", 16, 4)
	t.Run("16 levels", func(t *testing.T) { check(t, top16) })
	t.Run("over HTTP", func(t *testing.T) {
		url := serve(t, (*fixture)(nil).generator(t, generator.Options{}))
		r := call(t, url, map[string]any{"repository": reg.URL + "/ocm", "component": top16, "references": true})
		if r.status != http.StatusBadRequest || !strings.Contains(r.message(t), "more than 5000 parameter sets") {
			t.Errorf("%d %s", r.status, r.body)
		}
	})
}

// Finding 2: a component whose tags name versions that do not exist (the
// registry lists tags it serves no manifest for: HTTP 502). The
// first failed lookup stops the others (no new one starts, those under way
// are cancelled); a registry that never answers is given up at the deadline,
// and no lookup starts after it.
func TestLookupsStopAtFirstErrorAndDeadline(t *testing.T) {
	const missing, slow = "example.org/attack/missing", "example.org/attack/slow"
	release := make(chan struct{})
	reg := registrytest.Start(t, fakeTags(missing, 2000, false, nil), fakeTags(slow, 2000, true, release))
	t.Cleanup(func() { close(release) }) // before the registry's own cleanup
	const par = 4

	t.Run("first error", func(t *testing.T) {
		c := &counting{open: opener}
		url := serve(t, (*fixture)(nil).generator(t, generator.Options{Open: c.Open, Parallelism: par}))
		r := call(t, url, map[string]any{"repository": reg.URL + "/ocm", "component": missing, "latest": 0})
		// Tags listed but not served: the registry's fault, said as such.
		if r.status != http.StatusBadGateway || !strings.Contains(r.message(t), "but serves no manifest for it") {
			t.Errorf("%d %s", r.status, r.body)
		}
		// Those under way when the first failed, and perhaps one more.
		if n := c.lookups.Load(); n > 2*par {
			t.Errorf("%d lookups of 2000 missing versions; want those under way at the first error (≤ %d)", n, 2*par)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		c := &counting{open: opener}
		g := (*fixture)(nil).generator(t, generator.Options{Open: c.Open, Parallelism: par})
		const timeout = 500 * time.Millisecond
		url := serveHandler(t, &generator.Handler{Generator: g, RequestTimeout: timeout})
		// The registry answers none of the lookups before the test ends
		// (release): any answer is the generator giving up, a 504 says it was
		// the deadline. The minute is a safety net, not a speed goal.
		start := time.Now()
		answered := make(chan response, 1)
		go func() {
			r, _ := callAs(url, "slow", map[string]any{"repository": reg.URL + "/ocm", "component": slow, "latest": 0})
			answered <- r
		}()
		var r response
		select {
		case r = <-answered:
		case <-time.After(time.Minute):
			t.Fatalf("no answer a minute after the %s deadline: the lookups under way were not given up", timeout)
		}
		took := time.Since(start)
		if r.status != http.StatusGatewayTimeout {
			t.Errorf("%d %s", r.status, r.body)
		}
		if late := c.late.Load(); late > 0 {
			t.Errorf("answered after %s; %d lookups of %d began after the deadline", took, late, c.lookups.Load())
		}
		t.Logf("504 after %s, %d lookups", took.Round(time.Millisecond), c.lookups.Load())
	})
}

// Finding 3, the lookups: more matching versions than parameter sets may be
// answered are refused before any descriptor is looked up.
func TestSelectedVersionsCappedBeforeLookups(t *testing.T) {
	const many = "example.org/attack/many"
	reg := registrytest.Start(t, fakeTags(many, 6000, false, nil))
	c := &counting{open: opener}
	url := serve(t, (*fixture)(nil).generator(t, generator.Options{Open: c.Open}))
	start := time.Now()
	r := call(t, url, map[string]any{"repository": reg.URL + "/ocm", "component": many, "latest": 0})
	if r.status != http.StatusBadRequest || !strings.Contains(r.message(t), "more than 5000 parameter sets") {
		t.Errorf("%d %s", r.status, r.body)
	}
	if n := c.lookups.Load(); n != 0 {
		t.Errorf("%d descriptor lookups before the refusal", n)
	}
	t.Logf("400 after %s", time.Since(start).Round(time.Millisecond))
	// Under the cap, the newest of them are still selected (and looked up).
	r = call(t, url, map[string]any{"repository": reg.URL + "/ocm", "component": many, "latest": 3})
	if r.status != http.StatusBadGateway || !strings.Contains(r.message(t), "but serves no manifest for it") {
		t.Errorf("latest 3: %d %s", r.status, r.body)
	}
}

// Finding 3, the turns: an ApplicationSet holds at most one; its other
// requests meanwhile are answered 503 with Retry-After at once, and other
// ApplicationSets are served.
func TestOneTurnPerApplicationSet(t *testing.T) {
	f := newFixture(t)
	hogging := make(chan struct{}, 8)
	open := func(ctx context.Context, spec string) (ocm.Repository, error) {
		if strings.Contains(spec, "hog.example.org") {
			hogging <- struct{}{}
			<-ctx.Done() // a registry that answers at the deadline
			return nil, ctx.Err()
		}
		return opener(ctx, spec)
	}
	g := f.generator(t, generator.Options{Open: open})
	url := serveHandler(t, &generator.Handler{Generator: g, MaxConcurrent: 2, RequestTimeout: 3 * time.Second})
	hog := map[string]any{"repository": "hog.example.org/ocm", "component": "a/b"}
	first := make(chan response, 1)
	go func() { r, _ := callAs(url, "hog", hog); first <- r }()
	<-hogging

	start := time.Now()
	r, hdr := callAs(url, "hog", hog)
	if r.status != http.StatusServiceUnavailable || hdr.Get("Retry-After") != "3" || !strings.Contains(r.message(t), `ApplicationSet "hog" already has a request in progress`) {
		t.Fatalf("second request of one ApplicationSet: %d %q %s", r.status, hdr.Get("Retry-After"), r.body)
	}
	t.Logf("503 after %s", time.Since(start).Round(time.Millisecond))
	r, _ = callAs(url, "shop", map[string]any{"repository": f.repo, "component": podinfo})
	if got := joined(column(r.params(t), "version")); got != "3.0.0" {
		t.Errorf("another ApplicationSet: %s", got)
	}
	if r := <-first; r.status != http.StatusGatewayTimeout {
		t.Errorf("first request: %d %s", r.status, r.body)
	}
	// Its turn over, the ApplicationSet is served again.
	if r, _ := callAs(url, "hog", map[string]any{"repository": f.repo, "component": podinfo}); r.status != http.StatusOK {
		t.Errorf("after its turn: %d %s", r.status, r.body)
	}
}

// Finding 4: a caller without the token that announces a body and never
// sends it gets its 403 from the headers alone, at once (not at the body's
// read timeout), and the connection is closed.
//
// The server's read timeout is an hour here: an answer at all, before the
// client's safety net of a minute, was not waiting for the body.
func TestForbiddenBeforeTheBody(t *testing.T) {
	url := serve(t, (*fixture)(nil).generator(t, generator.Options{}), func(s *http.Server) { s.ReadTimeout = time.Hour })
	addr := strings.TrimPrefix(url, "http://")
	for _, auth := range []string{"", "Authorization: Bearer wrong-token-0123456789\r\n"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		head := "POST " + generator.PathGetParams + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n" + auth + "\r\n"
		start := time.Now()
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: no answer within a minute: %v", auth, err)
		}
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != http.StatusForbidden || !resp.Close {
			t.Errorf("%q: %d (close %v) after %s", auth, resp.StatusCode, resp.Close, took)
		}
		t.Logf("%q: 403 after %s", auth, took.Round(time.Millisecond))
	}
}

// Finding 5: a component reference cycle and a policy refusal are the
// request's fault, 400, not a failing registry's 502.
func TestRequestFaultsAre400(t *testing.T) {
	reg := registrytest.Start(t)
	const a, b = "example.org/cycle/a", "example.org/cycle/b"
	reg.Push(t, "ocm",
		platformOf(a, "1.0.0", ocmbuild.Reference{Name: "b", ComponentName: b, Version: "1.0.0"}),
		platformOf(b, "1.0.0", ocmbuild.Reference{Name: "a", ComponentName: a, Version: "1.0.0"}))
	refused := func(ctx context.Context, spec string) (ocm.Repository, error) {
		if strings.Contains(spec, "denied.example.org") {
			return nil, fmt.Errorf("%w: repository denied.example.org/ocm is not allowed for project \"\" (rule default)", errdef.ErrForbidden)
		}
		return opener(ctx, spec)
	}
	url := serve(t, (*fixture)(nil).generator(t, generator.Options{Open: refused}))
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"cycle", map[string]any{"repository": reg.URL + "/ocm", "component": a, "references": true}, "component reference cycle: " + a + ":1.0.0 -> " + b + ":1.0.0 -> " + a + ":1.0.0"},
		{"policy", map[string]any{"repository": "denied.example.org/ocm", "component": a}, "refused by the sidecar policy"},
	} {
		r := call(t, url, tc.params)
		if r.status != http.StatusBadRequest || !strings.Contains(r.message(t), tc.want) {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}
}

// turns records, in order, when each getparams request arrives at the
// handler and when it begins to use its repository (its turn began: the
// generator opens the repository lazily, after the turn is taken), by the
// ApplicationSet name of callerHeader.
type turns struct {
	mu     sync.Mutex
	events []turnEvent
}

type turnEvent struct {
	turn   bool // false: arrived
	appSet string
}

type appSetKey struct{}

func (l *turns) add(turn bool, appSet string) {
	l.mu.Lock()
	l.events = append(l.events, turnEvent{turn, appSet})
	l.mu.Unlock()
}

// middleware records arrivals and passes the caller's name on to open.
func (l *turns) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.Header.Get(callerHeader)
		if name != "" {
			l.add(false, name)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), appSetKey{}, name)))
	})
}

func (l *turns) open(open generator.OpenFunc) generator.OpenFunc {
	return func(ctx context.Context, spec string) (ocm.Repository, error) {
		if name, _ := ctx.Value(appSetKey{}).(string); name != "" {
			l.add(true, name)
		}
		return open(ctx, spec)
	}
}

// overtakes counts, per ApplicationSet, the turns that began between the
// last arrival of appSet and its turn.
func (l *turns) overtakes(appSet string) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	arrived := -1
	for i, e := range l.events {
		if e.appSet == appSet && !e.turn {
			arrived = i
		}
	}
	out := map[string]int{}
	if arrived < 0 {
		return out
	}
	for _, e := range l.events[arrived+1:] {
		if e.appSet == appSet {
			break
		}
		if e.turn {
			out[e.appSet]++
		}
	}
	return out
}

// Under attack (the requests of the findings above, each ApplicationSet
// sending several at once, more ApplicationSets than turns, one of them
// holding its turn as long as its registry does not answer), a normal
// ApplicationSet's request is served, and it waits in line behind at most
// one request of each other ApplicationSet: the turns are handed out in
// order of arrival, one per ApplicationSet.
//
// Nothing here is timed, so that a loaded machine cannot fail it: at load
// 30-60 on 2 cores a fixed 3 s request timeout was exceeded (4.7 s) while
// the order held. The timeout is a safety net (the slow registry's requests
// hold their turn until the test ends); the order is what is asserted:
// between a normal request's arrival and its turn, each other
// ApplicationSet begins at most two turns (the one ahead in line, and one
// that may slip in while the request is read and parsed, before it lines
// up). Without the one turn per ApplicationSet, three requests of each were
// seen to begin their turns first (and the slow one's held three of four).
func TestNormalRequestUnderAttack(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds of load")
	}
	const missing, slow, many = "example.org/attack/missing", "example.org/attack/slow", "example.org/attack/many"
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	f := newFixture(t, fakeTags(missing, 300, false, nil), fakeTags(slow, 300, true, release), fakeTags(many, 6000, false, nil))
	t.Cleanup(releaseAll)
	fan := fanOut(t, f.reg, "fan", 16, 4)
	var cold []*ocmbuild.Component
	for i := 0; i < 200; i++ {
		cold = append(cold, app("example.org/attack/cold", fmt.Sprintf("1.%d.0", i)))
	}
	f.reg.Push(t, "ocm", cold...)

	// No version cache: every attack costs its lookups again.
	log := &turns{}
	g := f.generator(t, generator.Options{Open: log.open(opener), VersionTTL: -1, ListTTL: -1})
	const timeout = 5 * time.Minute // at load 60 on 2 cores a normal request took up to 57 s
	url := serveHandler(t, &generator.Handler{Generator: g, RequestTimeout: timeout}, log.middleware)
	addr := strings.TrimPrefix(url, "http://")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var attacks atomic.Int32
	attack := func(name string, params map[string]any) {
		for i := 0; i < 3; i++ { // several at once per ApplicationSet
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					// Not asserted, errors included: under load the slow
					// registry's requests can outlast the server's write
					// timeout (the connection closes, EOF).
					r, _ := callAs(url, name, params)
					attacks.Add(1)
					if r.status == http.StatusServiceUnavailable {
						// Pace a refused loop so that it does not just burn the CPU.
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}
			}()
		}
	}
	defer func() {
		close(stop)
		releaseAll() // the slow registry's requests end now, not at the deadline
		wg.Wait()
	}()
	repo := f.repo
	attackers := []string{"fan", "missing", "slow", "many", "cold"}
	attack("fan", map[string]any{"repository": repo, "component": fan, "references": true})
	attack("missing", map[string]any{"repository": repo, "component": missing, "latest": 0})
	attack("slow", map[string]any{"repository": repo, "component": slow, "latest": 0})
	attack("many", map[string]any{"repository": repo, "component": many, "latest": 0})
	attack("cold", map[string]any{"repository": repo, "component": "example.org/attack/cold", "latest": 0})
	// And callers without the token whose bodies never come.
	for i := 0; i < 20; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST "+generator.PathGetParams+" HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n")
	}

	overtaken := 0
	for i := 0; i < 5; i++ {
		start := time.Now()
		r, _ := callAs(url, "shop", map[string]any{"repository": repo, "component": podinfo, "version": "~2.3"})
		took := time.Since(start)
		if r.status != http.StatusOK {
			t.Fatalf("normal request %d under attack: %d after %s: %s", i, r.status, took, r.body)
		}
		if got := joined(column(r.params(t), "version")); got != "2.3.1" {
			t.Fatalf("normal request: %s", got)
		}
		ahead := log.overtakes("shop")
		for _, a := range attackers {
			if ahead[a] > 2 {
				t.Errorf("normal request %d: ApplicationSet %q began %d turns between its arrival and its turn, want at most 2", i, a, ahead[a])
			}
			overtaken += ahead[a]
		}
		t.Logf("normal request %d: 200 after %s, turns begun ahead of it: %v", i, took.Round(time.Millisecond), ahead)
	}
	// The attack was under way: its requests took turns while the normal
	// ones waited.
	if overtaken == 0 {
		t.Errorf("no attack request began a turn while the normal ones waited")
	}
	t.Logf("%d attack requests answered meanwhile", attacks.Load())
}
