package generator

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/platform"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// Defaults of Options.
const (
	// DefaultListTTL is how long a component's version list (and a prefix's
	// component list) is reused. Short: it is what makes a pushed version
	// appear; long enough that a matrix over 100 clusters lists once.
	DefaultListTTL = 30 * time.Second
	// DefaultVersionTTL is how long a version's descriptor digest (and what
	// the entries need of the descriptor) is reused.
	DefaultVersionTTL = 10 * time.Minute
	// DefaultParallelism bounds the descriptor lookups of one request.
	DefaultParallelism = 8
	// MaxEntries bounds the parameter sets of one response. It is checked
	// while they are built (a platform whose references fan out can name
	// billions), and the selected versions are checked against it before
	// any descriptor is looked up.
	MaxEntries = 5000
	// MaxLookups bounds the distinct component versions one request looks
	// up (selected, signature candidates, references), cached or not: what
	// one ApplicationSet can make the generator fetch.
	MaxLookups = 5000
	// maxComponents bounds what a prefix pattern may match.
	maxComponents = 1000
	// maxDepth bounds reference expansion.
	maxDepth = platform.DefaultMaxDepth
)

// OpenFunc opens a repository spec (see oci.ParseSpec) for one request.
type OpenFunc func(ctx context.Context, spec string) (ocm.Repository, error)

// RepositoryGate decides which repositories the generator may list. The
// intent: the sidecar's policy (which registries and CTFs each Argo CD
// project may use) is consulted before any file is opened or any connection
// made. The ApplicationSet controller's request names no Argo CD project, so
// the generator asks with project "": the policy's rule for what may be
// listed by the generator at all.
type RepositoryGate interface {
	AllowRepository(project, spec string) error
}

// AllowAll is the permissive default gate.
type AllowAll struct{}

// AllowRepository implements RepositoryGate.
func (AllowAll) AllowRepository(string, string) error { return nil }

// Options configure New.
type Options struct {
	// Open opens repositories (required): the sidecar's registry client,
	// credentials and plain-HTTP settings.
	Open OpenFunc
	// Gate is consulted first (default AllowAll).
	Gate RepositoryGate
	// Keys are the public keys signature names verify with (the "signature"
	// parameter names them). Empty: the parameter is refused.
	Keys map[string]crypto.PublicKey
	// CTFRoots are the directories CTFs and component archives may be read
	// from; a relative CTF path is below the first. Empty: CTFs are refused.
	CTFRoots []string
	// ListTTL and VersionTTL: see the defaults; 0 keeps the default, < 0
	// turns that cache off.
	ListTTL, VersionTTL time.Duration
	// Parallelism of descriptor lookups per request (default DefaultParallelism).
	Parallelism int
	Log         *slog.Logger
	// RendersItself says whether a component version that looks like a
	// platform (references, nothing of its own to render) renders by itself
	// instead (a kro RGD one of its references ships), so that `references`
	// lists it as one entry rather than expanding it; it may read the
	// version's resources. nil: every such version is a platform.
	RendersItself func(ctx context.Context, cv ocm.ComponentVersion) (bool, error)
}

// Generator lists component versions as ApplicationSet parameter sets. It
// owns the caches; one per process, safe for concurrent use.
type Generator struct {
	o        Options
	roots    []string // CTFRoots, absolute and with symlinks resolved
	lists    *cache.Memo[string, []string]
	comps    *cache.Memo[string, []string]
	versions *cache.Memo[string, *summary]
	verified *cache.Memo[string, bool]
}

// New builds a Generator.
func New(o Options) (*Generator, error) {
	if o.Open == nil {
		return nil, fmt.Errorf("%w: generator: no repository opener", errdef.ErrInvalidInput)
	}
	if o.Gate == nil {
		o.Gate = AllowAll{}
	}
	if o.Parallelism <= 0 {
		o.Parallelism = DefaultParallelism
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	g := &Generator{o: o, verified: &cache.Memo[string, bool]{}}
	for _, r := range o.CTFRoots {
		abs, err := filepath.Abs(r)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: CTF directory %s: %v", errdef.ErrInvalidInput, r, err)
		}
		g.roots = append(g.roots, abs)
	}
	g.lists = newMemo[[]string](o.ListTTL, DefaultListTTL)
	g.comps = newMemo[[]string](o.ListTTL, DefaultListTTL)
	g.versions = newMemo[*summary](o.VersionTTL, DefaultVersionTTL)
	return g, nil
}

func newMemo[V any](ttl, def time.Duration) *cache.Memo[string, V] {
	switch {
	case ttl < 0:
		return nil
	case ttl == 0:
		ttl = def
	}
	return cache.NewRecent[string, V](ttl)
}

// remember calls fn through m, or directly when the cache is off.
func remember[V any](ctx context.Context, m *cache.Memo[string, V], key string, fn func(context.Context) (V, error)) (V, error) {
	if m == nil {
		return fn(ctx)
	}
	return m.Do(ctx, key, fn)
}

// summary is what entries need of a component version's descriptor (not
// the descriptor: thousands of them stay in memory).
type summary struct {
	digest     string
	labels     map[string]string
	references []ocm.Reference
	platform   bool // references and no renderable resource: expanded further
}

// Generate answers one request. Errors wrap errdef sentinels: ErrInvalidInput
// and ErrNotFound are the request's fault (HTTP 400), others the
// repository's or the network's.
func (g *Generator) Generate(ctx context.Context, q Query) ([]map[string]any, error) {
	sp, err := g.checkQuery(q)
	if err != nil {
		return nil, err
	}
	spec, key, ociRepo, err := g.locate(q.Repository, sp)
	if err != nil {
		return nil, err
	}
	out, err := g.generate(ctx, q, spec, key, ociRepo)
	if err != nil && !ociRepo {
		// The message reaches the ApplicationSet's status: the CTF is named
		// as the tenant may name it, relative to its CTF directory.
		err = g.relativePaths(err, spec)
	}
	return out, err
}

func (g *Generator) generate(ctx context.Context, q Query, spec, key string, ociRepo bool) ([]map[string]any, error) {
	var err error
	r := &lazyRepo{open: func() (ocm.Repository, error) { return g.o.Open(ctx, spec) }}
	defer r.close()
	req := &request{g: g, q: q, key: key, repo: r, oci: ociRepo}

	components := []string{q.Component}
	if q.Prefix {
		if components, err = req.components(ctx); err != nil {
			return nil, err
		}
	}
	sel, err := req.selectAll(ctx, components)
	if err != nil {
		return nil, err
	}
	out, err := req.entries(ctx, sel)
	if err != nil {
		return nil, err
	}
	if err := uniqueNames(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkQuery parses the query's repository and checks it and the
// signatures it asks for against the generator's gate and keys.
func (g *Generator) checkQuery(q Query) (oci.Spec, error) {
	// Parsed first: a spec that carries credentials is refused before any
	// message could repeat it.
	sp, err := oci.ParseSpec(q.Repository)
	if err != nil {
		return sp, err
	}
	if err := g.o.Gate.AllowRepository("", q.Repository); err != nil {
		return sp, fmt.Errorf("%w: repository %s: %v", errdef.ErrInvalidInput, errdef.Field(q.Repository), err)
	}
	for _, n := range q.Signatures {
		if _, ok := g.o.Keys[n]; !ok {
			return sp, invalid("parameter signature: the generator has no key for signature %s (it has: %s)", errdef.Quote(n), keyNames(g.o.Keys))
		}
	}
	return sp, nil
}

// selection is a component and its selected versions.
type selection struct {
	component string
	versions  []string
}

// selectAll selects the versions of each component. Of a prefix, the
// components with a matching version count; none at all is still an error
// (never an empty list).
func (r *request) selectAll(ctx context.Context, components []string) ([]selection, error) {
	var sel []selection
	var firstMiss error
	for _, c := range components {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vs, err := r.selectVersions(ctx, c)
		if err != nil {
			if r.q.Prefix && errors.Is(err, errdef.ErrNotFound) {
				if firstMiss == nil {
					firstMiss = err
				}
				continue
			}
			return nil, err
		}
		sel = append(sel, selection{c, vs})
	}
	if len(sel) == 0 {
		return nil, fmt.Errorf("no component matching %s* has a matching version (%d components; the first: %w)", r.q.Component, len(components), firstMiss)
	}
	return sel, nil
}

// entries are the parameter sets of the selected versions (with their
// references' when the query asks for them), at most MaxEntries: the cap is
// checked as each set is added, never after a list is built.
func (r *request) entries(ctx context.Context, sel []selection) ([]map[string]any, error) {
	// Names: the component's last path segment, unless two selected
	// components share it; the version appended unless one version per
	// component is wanted (then an Application keeps its name as its
	// pinned version moves).
	r.prefixed = len(sel) > 1
	short := map[string]int{}
	for _, s := range sel {
		short[lastSegment(s.component)]++
	}
	for _, s := range sel {
		base := lastSegment(s.component)
		if short[base] > 1 {
			base = s.component
		}
		for _, v := range s.versions {
			sum, err := r.lookup(ctx, s.component, v)
			if err != nil {
				return nil, err
			}
			name := base
			if r.q.Latest != 1 {
				name += "-" + v
			}
			if !r.q.References {
				err = r.emit(r.entry(s.component, v, sum, dnsName(name)))
			} else {
				err = r.expand(ctx, s.component, v, sum, name, nil)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return r.out, nil
}

// errTooMany is the cap's error; its text names the cap.
var errTooMany = fmt.Errorf("%w: more than %d parameter sets; narrow the component, version or latest (or leave references off)", errdef.ErrLimitExceeded, MaxEntries)

// emit adds one parameter set, refusing the one past MaxEntries.
func (r *request) emit(e map[string]any) error {
	if len(r.out) >= MaxEntries {
		return errTooMany
	}
	r.out = append(r.out, e)
	return nil
}

// locate checks the parsed repository spec and returns what to open, the cache key
// and whether it is an OCI registry. A CTF must lie below a CTF root.
func (g *Generator) locate(repository string, sp oci.Spec) (spec, key string, isOCI bool, err error) {
	if sp.Type != oci.TypeCTF {
		return repository, "oci|" + sp.String(), true, nil
	}
	if len(g.roots) == 0 {
		return "", "", false, invalid("repository %s is a CTF or component archive, and this generator reads none (no CTF directory configured)", errdef.Field(repository))
	}
	p := sp.FilePath
	if !filepath.IsAbs(p) {
		p = filepath.Join(g.roots[0], p)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err == nil && !g.inRoots(real) {
		err = errOutside
	}
	if err != nil {
		// The same message whether the path exists or not: no probing the
		// generator's file system.
		return "", "", false, invalid("repository %s: not a CTF or component archive below the generator's CTF directories", errdef.Field(repository))
	}
	return real, "ctf|" + real, false, nil
}

var errOutside = errors.New("outside the CTF directories")

// relativePaths rewrites err's message so that it names the CTF at real (an
// absolute path below a CTF root) and anything else below a root relative
// to that root, keeping err's chain for errors.Is: the generator's
// directories are none of an ApplicationSet's business.
func (g *Generator) relativePaths(err error, real string) error {
	msg := err.Error()
	if rel := g.relative(real); rel != "" {
		msg = strings.ReplaceAll(msg, real, rel)
	}
	// Roots as configured and as resolved, longest first (one may contain
	// another).
	roots := append(append([]string(nil), g.o.CTFRoots...), g.roots...)
	for i, r := range roots {
		if a, aerr := filepath.Abs(r); aerr == nil {
			roots[i] = a
		}
	}
	sort.Slice(roots, func(i, j int) bool { return len(roots[i]) > len(roots[j]) })
	for _, r := range roots {
		if r == string(filepath.Separator) || r == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, r+string(filepath.Separator), "")
		msg = strings.ReplaceAll(msg, r, ".")
	}
	if msg == err.Error() {
		return err
	}
	return &relativeError{msg: msg, err: err}
}

// relative is p relative to the CTF root it lies below, "" if none.
func (g *Generator) relative(p string) string {
	for _, r := range g.roots {
		if rel, err := filepath.Rel(r, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return rel
		}
	}
	return ""
}

// relativeError is err with the message relativePaths made of it.
type relativeError struct {
	msg string
	err error
}

func (e *relativeError) Error() string { return e.msg }
func (e *relativeError) Unwrap() error { return e.err }

func (g *Generator) inRoots(p string) bool {
	for _, r := range g.roots {
		if rel, err := filepath.Rel(r, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// lazyRepo opens the repository on first use: a warm request needs none.
type lazyRepo struct {
	open func() (ocm.Repository, error)
	once sync.Once
	repo ocm.Repository
	err  error
}

func (l *lazyRepo) get() (ocm.Repository, error) {
	l.once.Do(func() { l.repo, l.err = l.open() })
	return l.repo, l.err
}

func (l *lazyRepo) close() {
	if l.repo != nil {
		l.repo.Close()
	}
}

// request is one Generate call.
type request struct {
	g    *Generator
	q    Query
	key  string
	repo *lazyRepo
	oci  bool
	seen sync.Map // key → *summary: one lookup per version per request, cache or not
	// lookups counts the distinct versions looked up (MaxLookups).
	lookups atomic.Int64
	// selected counts the versions selected so far (selectAll is sequential).
	selected int
	// out are the parameter sets so far (entries is sequential).
	out []map[string]any
	// prefixed: more than one component is selected, so reference names
	// are prefixed with their platform's name.
	prefixed bool
}

func (r *request) listVersions(ctx context.Context, component string) ([]string, error) {
	return remember(ctx, r.g.lists, r.key+"\x00"+component, func(ctx context.Context) ([]string, error) {
		repo, err := r.repo.get()
		if err != nil {
			return nil, err
		}
		return repo.ListVersions(ctx, component)
	})
}

// selectVersions returns the component's matching versions, newest first, at most
// Latest (0: all), skipping versions whose signatures do not verify.
func (r *request) selectVersions(ctx context.Context, component string) ([]string, error) {
	all, err := r.listVersions(ctx, component)
	if err != nil {
		return nil, err
	}
	type pv struct {
		raw string
		v   *semver.Version
	}
	var cands []pv
	for _, raw := range all {
		v, err := semver.NewVersion(raw)
		if err != nil {
			continue // tags that are not versions
		}
		switch {
		case r.q.Exact != "":
			if raw != r.q.Exact {
				continue
			}
		case r.q.Constraint != nil:
			if !r.q.Constraint.Check(v) {
				continue
			}
		case v.Prerelease() != "":
			// No constraint: release versions, as a constraint without a
			// prerelease part selects (Masterminds/semver, the OCM CLI).
			continue
		}
		if r.q.Filter != nil && !r.q.Filter.MatchString(raw) {
			continue
		}
		cands = append(cands, pv{raw, v})
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].v.Equal(cands[j].v) {
			return cands[i].raw > cands[j].raw
		}
		return cands[i].v.GreaterThan(cands[j].v)
	})
	// Each selected version costs a lookup and is (references aside) a
	// parameter set: refuse before looking any up, not after thousands.
	take := len(cands)
	if r.q.Latest > 0 && take > r.q.Latest {
		take = r.q.Latest
	}
	if r.selected+take > MaxEntries {
		return nil, fmt.Errorf("%w: component %s: %d matching versions (%d selected before), more than %d parameter sets; narrow the version, semverFilter or latest",
			errdef.ErrLimitExceeded, errdef.Field(component), take, r.selected, MaxEntries)
	}
	var out []string
	for _, c := range cands {
		if r.q.Latest > 0 && len(out) == r.q.Latest {
			break
		}
		if len(r.q.Signatures) > 0 {
			ok, err := r.verified(ctx, component, c.raw)
			if err != nil {
				return nil, err
			}
			if !ok {
				r.g.o.Log.Info("version skipped: signature does not verify", "component", component, "version", c.raw)
				continue
			}
		}
		out = append(out, c.raw)
	}
	if len(out) == 0 {
		return nil, r.noMatch(component, all)
	}
	// Lookups of the selected versions, in parallel: their digests.
	if err := r.prefetch(ctx, component, out); err != nil {
		return nil, err
	}
	r.selected += len(out)
	return out, nil
}

// noMatch says which of the query's conditions no version of component
// met, in plain words: `no version of C matches "~9" (available: …)`.
func (r *request) noMatch(component string, all []string) error {
	var conds []string
	switch {
	case r.q.Exact != "":
		conds = append(conds, "matches "+errdef.Quote(r.q.Exact))
	case r.q.Constraint != nil:
		conds = append(conds, "matches "+errdef.Quote(r.q.Constraint.String()))
	}
	if r.q.Filter != nil {
		conds = append(conds, "matches semverFilter "+errdef.Quote(r.q.Filter.String()))
	}
	if len(r.q.Signatures) > 0 {
		conds = append(conds, "is signed with "+strings.Join(r.q.Signatures, ", ")+" and verifies")
	}
	msg := "no version of " + errdef.Field(component) + " " + strings.Join(conds, " and ")
	if len(conds) == 0 {
		// No version parameter: release versions only.
		msg = "no release version of " + errdef.Field(component) + " (a version constraint with a prerelease part selects prereleases)"
	}
	return &notFound{msg: msg + " (available: " + available(all) + ")"}
}

// notFound is errdef.ErrNotFound (a request fault, HTTP 400) with a message
// of its own, which need not end in "not found".
type notFound struct{ msg string }

func (e *notFound) Error() string { return e.msg }
func (e *notFound) Unwrap() error { return errdef.ErrNotFound }

func available(vs []string) string {
	vs = append([]string(nil), vs...)
	oci.SortVersions(vs)
	const show = 20
	if len(vs) > show {
		return strings.Join(vs[len(vs)-show:], ", ") + fmt.Sprintf(" and %d older", len(vs)-show)
	}
	if len(vs) == 0 {
		return "none"
	}
	return strings.Join(vs, ", ")
}

// prefetch looks the versions up, Parallelism at a time. The first error
// or the deadline stops it: no new lookup starts, and the ones under way are
// cancelled (their results would be thrown away).
func (r *request) prefetch(ctx context.Context, component string, versions []string) error {
	if len(versions) < 2 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, r.g.o.Parallelism)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	fail := func(err error) {
		once.Do(func() {
			first = err
			cancel()
		})
	}
	for _, v := range versions {
		if ctx.Err() != nil {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := r.lookup(ctx, component, v); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	once.Do(func() { first = ctx.Err() }) // no lookup failed: the deadline, or nil
	return first
}

// lookup returns what entries need of a component version: from this
// request's lookups, the Generator's cache, or the repository.
func (r *request) lookup(ctx context.Context, component, version string) (*summary, error) {
	key := r.key + "\x00" + component + "\x00" + version
	if s, ok := r.seen.Load(key); ok {
		return s.(*summary), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.lookups.Add(1) > MaxLookups {
		return nil, errTooManyLookups
	}
	s, err := remember(ctx, r.g.versions, key, func(ctx context.Context) (*summary, error) {
		cv, err := r.lookupCV(ctx, component, version)
		if err != nil {
			return nil, err
		}
		s := summarize(cv)
		if s.platform && r.g.o.RendersItself != nil {
			self, err := r.g.o.RendersItself(ctx, cv)
			if err != nil {
				return nil, err
			}
			s.platform = !self
		}
		return s, nil
	})
	if err == nil {
		r.seen.Store(key, s)
	}
	return s, err
}

// errTooManyLookups is MaxLookups' error; its text names the cap.
var errTooManyLookups = fmt.Errorf("%w: more than %d component versions to look up in one request; narrow the component, version or latest", errdef.ErrLimitExceeded, MaxLookups)

func (r *request) lookupCV(ctx context.Context, component, version string) (ocm.ComponentVersion, error) {
	repo, err := r.repo.get()
	if err != nil {
		return nil, err
	}
	return repo.LookupComponentVersion(ctx, component, version)
}

func summarize(cv ocm.ComponentVersion) *summary {
	d := cv.Descriptor()
	// References sorted once here, not on every visit of a shared platform.
	refs := append([]ocm.Reference(nil), d.References...)
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
	s := &summary{digest: cv.DescriptorDigest(), references: refs, platform: platform.IsPlatform(d, argocdocm.Renderable)}
	if len(d.Labels) > 0 {
		s.labels = make(map[string]string, len(d.Labels))
		for _, l := range d.Labels {
			s.labels[l.Name] = labelValue(l.Value)
		}
	}
	return s
}

// labelValue is a label's value as a string: a JSON string as itself,
// anything else as compact JSON.
func labelValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			return string(b)
		}
	}
	return string(raw)
}

// verified reports whether the version's named signatures (and its
// references' digests) verify. A verification failure is false, not an
// error; a lookup failure is an error.
func (r *request) verified(ctx context.Context, component, version string) (bool, error) {
	sum, err := r.lookup(ctx, component, version)
	if err != nil {
		return false, err
	}
	key := r.key + "\x00" + component + "\x00" + version + "@" + sum.digest + "\x00" + strings.Join(r.q.Signatures, ",")
	if sum.digest == "" {
		key = "" // no digest to remember the result by
	}
	check := func(ctx context.Context) (bool, error) {
		cv, err := r.lookupCV(ctx, component, version)
		if err != nil {
			return false, err
		}
		repo, _ := r.repo.get()
		keys := make(map[string]crypto.PublicKey, len(r.q.Signatures))
		for _, n := range r.q.Signatures {
			keys[n] = r.g.o.Keys[n]
		}
		v := &signing.Verifier{Keys: keys, Lookup: signing.RepositoryLookup(repo)}
		if _, err := v.Verify(ctx, cv.Descriptor()); err != nil {
			if errors.Is(err, errdef.ErrSignature) || errors.Is(err, errdef.ErrDigestMismatch) {
				return false, nil
			}
			return false, err
		}
		return true, nil
	}
	if key == "" {
		return check(ctx)
	}
	return r.g.verified.Do(ctx, key, check)
}

// entry is one parameter set.
func (r *request) entry(component, version string, sum *summary, name string) map[string]any {
	e := map[string]any{
		"repository":  r.q.Repository,
		"component":   component,
		"version":     version,
		"digest":      sum.digest,
		"name":        name,
		"versionName": dnsName(version),
	}
	if r.oci && sum.digest != "" {
		e["pinnedVersion"] = version + "@" + sum.digest
	}
	if r.q.Labels {
		for k, v := range sum.labels {
			if r.q.LabelNames == nil || contains(r.q.LabelNames, k) {
				e["labels."+k] = v
			}
		}
	}
	return e
}

// expand adds one entry per reference of a component version; a
// referenced platform (references, nothing renderable) is expanded in turn.
// A platform referenced several times is looked up once (r.seen), but its
// entries are repeated under each path's names: a fan-out of 4 over 16
// levels names 4^16, so the cap (emit) and the deadline are checked at each
// step, and the walk stops at the first set past MaxEntries. Every platform
// has at least one reference and the depth is bounded, so the steps are at
// most maxDepth+1 per parameter set.
func (r *request) expand(ctx context.Context, component, version string, sum *summary, name string, path []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	self := component + ":" + version
	for _, p := range path {
		if p == self {
			return fmt.Errorf("%w: %s", errCycle, errdef.Field(strings.Join(append(path, self), " -> ")))
		}
	}
	if len(path) >= maxDepth {
		return fmt.Errorf("%w: component references nest deeper than %d below %s", errdef.ErrLimitExceeded, maxDepth, errdef.Field(path[0]))
	}
	path = append(path, self)
	for _, ref := range sum.references {
		child, err := r.lookup(ctx, ref.ComponentName, ref.Version)
		if err != nil {
			return fmt.Errorf("reference %s of %s: %w", errdef.Field(ref.Name), errdef.Field(self), err)
		}
		childName := ref.Name
		if len(path) > 1 || r.q.Latest != 1 || r.prefixed {
			childName = name + "-" + ref.Name
		}
		if child.platform {
			if err := r.expand(ctx, ref.ComponentName, ref.Version, child, childName, path); err != nil {
				return err
			}
			continue
		}
		e := r.entry(ref.ComponentName, ref.Version, child, dnsName(childName))
		e["reference"] = ref.Name
		e["parent"] = component
		e["parentVersion"] = version
		if err := r.emit(e); err != nil {
			return err
		}
	}
	return nil
}

// errCycle is a reference cycle among the components a request names: the
// request's fault (HTTP 400), as an unknown component would be.
var errCycle = fmt.Errorf("%w: component reference cycle", errdef.ErrInvalidDescriptor)

func uniqueNames(entries []map[string]any) error {
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		n := e["name"].(string)
		if seen[n] {
			return invalid("two parameter sets would both be named %s (Application names must differ): select fewer components or versions", errdef.Quote(n))
		}
		seen[n] = true
	}
	return nil
}

// maxDNSLabel keeps names usable as label values and in DNS labels.
const maxDNSLabel = 63

// dnsName makes a DNS-1123 label: lower case, runs of other characters as
// "-", at most 63 characters (a long name keeps a hash of the whole so two
// long names stay apart).
func dnsName(s string) string {
	// What regexp [^a-z0-9-]+ → "-" does, without a regexp: this runs once
	// per parameter set, up to 5000 times a request.
	var b strings.Builder
	b.Grow(len(s))
	run := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteRune(c)
			run = false
		} else if !run {
			b.WriteByte('-')
			run = true
		}
	}
	n := strings.Trim(b.String(), "-")
	if len(n) > maxDNSLabel {
		h := sha256.Sum256([]byte(s))
		n = strings.TrimRight(n[:maxDNSLabel-9], "-") + "-" + hex.EncodeToString(h[:])[:8]
	}
	if n == "" {
		n = "x"
	}
	return n
}

func lastSegment(component string) string {
	if i := strings.LastIndex(component, "/"); i >= 0 {
		return component[i+1:]
	}
	return component
}

func keyNames(keys map[string]crypto.PublicKey) string {
	if len(keys) == 0 {
		return "none"
	}
	n := make([]string, 0, len(keys))
	for k := range keys {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

// Forget drops what the caches hold of a component in a registry, so that
// the next request reads its versions again: a registry said a version of it
// was pushed (see Webhook). host is the registry's host[:port], prefix the
// repository prefix the component's descriptors are below (the
// repository's path, "" at the registry's root). It returns how many cached
// entries it dropped.
func (g *Generator) Forget(host, prefix, component string) int {
	where := strings.ToLower(host)
	if prefix != "" {
		where += "/" + strings.Trim(prefix, "/")
	}
	// Keys are "oci|<spec>\x00<component>[\x00<version>]" (lists, versions)
	// and "oci|<spec>\x00<component prefix>" (a prefix's components).
	split := func(key string) (rest string, ok bool) {
		spec, rest, ok := strings.Cut(key, "\x00")
		if !ok {
			return "", false
		}
		spec, ok = strings.CutPrefix(spec, "oci|")
		if !ok {
			return "", false
		}
		if _, after, found := strings.Cut(spec, "://"); found {
			spec = after
		}
		h, p, _ := strings.Cut(spec, "/")
		if p != "" {
			h += "/" + p
		}
		return rest, strings.EqualFold(h, where)
	}
	n := 0
	if g.lists != nil {
		n += g.lists.Forget(func(k string) bool { rest, ok := split(k); return ok && rest == component })
	}
	if g.versions != nil {
		n += g.versions.Forget(func(k string) bool {
			rest, ok := split(k)
			return ok && strings.HasPrefix(rest, component+"\x00")
		})
	}
	if g.comps != nil {
		n += g.comps.Forget(func(k string) bool { rest, ok := split(k); return ok && strings.HasPrefix(component, rest) })
	}
	return n
}

// versionDigester is a repository that resolves a version's tag without
// reading its descriptor (oci.Repository).
type versionDigester interface {
	VersionDigest(ctx context.Context, component, version string) (string, error)
}

// served reports whether a registry repository, as an ApplicationSet names
// it, serves the descriptor manifest of a pushed tag: nil once it does,
// errdef.ErrNotFound while it does not, another error when it cannot tell
// (the gate refuses the repository, it is no registry, or cannot be read).
func (g *Generator) served(ctx context.Context, repository, component, tag string) error {
	sp, err := g.checkQuery(Query{Repository: repository})
	if err != nil {
		return err
	}
	spec, _, ociRepo, err := g.locate(repository, sp)
	if err != nil {
		return err
	}
	if !ociRepo {
		return errors.New("not a registry")
	}
	repo, err := g.o.Open(ctx, spec)
	if err != nil {
		return err
	}
	defer repo.Close()
	d, ok := repo.(versionDigester)
	if !ok {
		return errors.New("the repository cannot resolve a tag alone")
	}
	_, err = d.VersionDigest(ctx, component, ocm.TagToVersion(tag))
	return err
}
