package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Repository is an OCM repository in an OCI registry.
type Repository struct {
	c    *Client
	spec Spec
	loc  location
	own  bool // the client was made by New
}

var (
	_ ocm.Repository   = (*Repository)(nil)
	_ ArtifactResolver = (*Repository)(nil)
)

// New opens the OCM repository of an OCI registry. spec is a string (see
// ParseSpec: "ghcr.io/org/ocm", "http://127.0.0.1:5000/ocm", a YAML/JSON
// OCIRegistry spec) or a Spec. An http:// base URL allows plain HTTP to its
// host: writing it is the explicit choice. Nothing is requested until the
// first lookup. A CTF spec is refused here; Open handles both.
func New[S string | Spec](spec S, opts ...Option) (*Repository, error) {
	var sp Spec
	var err error
	switch s := any(spec).(type) {
	case string:
		sp, err = ParseSpec(s)
	case Spec:
		sp, err = s.normalize()
	}
	if err != nil {
		return nil, err
	}
	if sp.Type != TypeOCIRegistry {
		return nil, fmt.Errorf("%w: %s is a %s repository, not an OCI registry (use resolve.Open)", errdef.ErrInvalidInput, sp, sp.Type)
	}
	loc, err := sp.location()
	if err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	c, own := o.client, false
	if c == nil {
		if c, err = newClient(o); err != nil {
			return nil, err
		}
		own = true
	}
	if loc.scheme == "http" {
		c.reg.AllowPlainHTTP(loc.host)
	}
	return &Repository{c: c, spec: sp, loc: loc, own: own}, nil
}

// Client is the repository's client, an ArtifactResolver for absolute
// references.
func (r *Repository) Client() *Client { return r.c }

// Spec is the repository's spec, normalised.
func (r *Repository) Spec() Spec { return r.spec }

// String is the repository in URL-ish form.
func (r *Repository) String() string { return r.spec.String() }

// Close implements ocm.Repository. Connections of a shared Client stay open.
func (r *Repository) Close() error { return nil }

// descriptorRef is the reference of a component's descriptors.
func (r *Repository) descriptorRef(component string) (imageref.Reference, error) {
	if component == "" || len(component) > 255 || strings.ContainsAny(component, ":@ \\") {
		return imageref.Reference{}, fmt.Errorf("%w: component name %s", errdef.ErrInvalidInput, errdef.Quote(component))
	}
	for _, seg := range strings.Split(component, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return imageref.Reference{}, fmt.Errorf("%w: component name %s", errdef.ErrInvalidInput, errdef.Quote(component))
		}
	}
	return imageref.Reference{
		Scheme:     r.loc.scheme,
		Registry:   r.loc.host,
		Repository: path.Join(r.loc.prefix, ocm.DescriptorRepository(component)),
	}, nil
}

// ListVersions implements ocm.Repository: the component's tags mapped back to
// versions; tags that are not semantic versions are skipped. Sorted by
// version. The registry is asked once per Client.
func (r *Repository) ListVersions(ctx context.Context, component string) ([]string, error) {
	ref, err := r.descriptorRef(component)
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.c.op(ctx)
	defer cancel()
	tags, err := r.c.listTags(ctx, ref)
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return nil, fmt.Errorf("component %s %w in %s: %w", component, errdef.ErrNotFound, r, err)
		}
		return nil, fmt.Errorf("component %s: list versions: %w", component, err)
	}
	var out []string
	for _, t := range tags {
		v := ocm.TagToVersion(t)
		if _, err := semver.NewVersion(v); err == nil {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("component %s %w in %s (the repository has no version tags)", component, errdef.ErrNotFound, r)
	}
	SortVersions(out)
	return out, nil
}

// SortVersions sorts semantic versions ascending (build metadata, which
// semver ignores, breaks ties by string order). Non-versions sort first.
func SortVersions(vs []string) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, ea := semver.NewVersion(vs[i])
		b, eb := semver.NewVersion(vs[j])
		switch {
		case ea != nil || eb != nil:
			if (ea == nil) != (eb == nil) {
				return ea != nil
			}
			return vs[i] < vs[j]
		case a.Equal(b):
			return vs[i] < vs[j]
		default:
			return a.LessThan(b)
		}
	})
}

func (c *Client) listTags(ctx context.Context, ref imageref.Reference) ([]string, error) {
	return c.lists.Do(ctx, ref.Name(), func(ctx context.Context) ([]string, error) {
		repo, err := c.repo(ref)
		if err != nil {
			return nil, err
		}
		var tags []string
		err = repo.Tags(ctx, "", func(page []string) error {
			tags = append(tags, page...)
			if len(tags) > maxTags {
				return fmt.Errorf("%w: more than %d tags", errdef.ErrLimitExceeded, maxTags)
			}
			return nil
		})
		if err != nil {
			return nil, c.reg.Wrap(err, "list tags", ref)
		}
		return tags, nil
	})
}

const maxTags = 100_000

// hostHint says what a registry host is.
const hostHint = "a registry host is a name or an IP address, with a port or not; not percent-encoded, no IPv6 zone"

// LookupComponentVersion implements ocm.Repository. version is a version
// ("1.1.0+build.7", read from tag 1.1.0.build-build.7) or a version pinned to
// its descriptor manifest, "<version>@sha256:<hex>": a pinned version already
// in the cache costs no request at all. A tag costs one manifest request per
// process; the descriptor's blobs come from the cache.
func (r *Repository) LookupComponentVersion(ctx context.Context, component, version string) (ocm.ComponentVersion, error) {
	ref, err := r.descriptorRef(component)
	if err != nil {
		return nil, err
	}
	version, pin, err := ocm.SplitPinnedVersion(component, version)
	if err != nil {
		return nil, err
	}
	ref.Tag = ocm.VersionToTag(version)
	ref.Digest = pin
	// The registry and repository first: a host no registry can have (a
	// percent-encoded one, an IPv6 zone) is not the version's fault.
	if err := (imageref.Reference{Registry: ref.Registry, Repository: ref.Repository}).Validate(); err != nil {
		return nil, fmt.Errorf("repository %s: %w (%s)", errdef.Quote(r.String()), err, hostHint)
	}
	if err := (imageref.Reference{Registry: ref.Registry, Repository: ref.Repository, Tag: ref.Tag}).Validate(); err != nil {
		return nil, fmt.Errorf("%w: version %s of component %s cannot be an OCI tag", errdef.ErrInvalidInput, errdef.Quote(version), errdef.Quote(component))
	}
	genCtx := ctx
	ctx, cancel := r.c.op(ctx)
	defer cancel()
	repo, err := r.c.repo(ref)
	if err != nil {
		return nil, err
	}
	mdesc, err := r.c.manifestDesc(ctx, ref, repo)
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			if pin != "" {
				return nil, r.pinMismatch(ctx, ref, repo, component, version, err)
			}
			return nil, r.notFound(ctx, component, version, err)
		}
		return nil, err
	}
	f := &fetcher{c: r.c, ref: ref, repo: repo}
	v, err := ocimapping.ResolveVersion(ctx, f, mdesc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	used := v.Desc
	// The chart layers of the index's artifacts are read while the
	// descriptor is (bounded, verified; see Speculate), for as long as the
	// generation, not this lookup, lasts.
	specCtx, specCancel := r.c.op(genCtx)
	wait := v.Speculate(specCtx, f)
	go func() { wait(); specCancel() }()
	d, err := r.c.o.descs.Read(ctx, f, v.Manifest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	if d.Name != component || d.Version != version {
		if pin != "" {
			return nil, r.pinMismatch(ctx, ref, repo, component, version, nil)
		}
		return nil, fmt.Errorf("%w: %s holds the descriptor of %s:%s", errdef.ErrInvalidDescriptor, ref, d.Name, d.Version)
	}
	return &componentVersion{repo: r, f: f, v: v, digest: used.Digest.String(), desc: d}, nil
}

// pinMismatch explains a pinned digest that does not name the version: it
// resolves the version's tag (one request, on this error path only) to say
// which digest the version has; a missing tag is the not-found error.
func (r *Repository) pinMismatch(ctx context.Context, ref imageref.Reference, repo *remote.Repository, component, version string, cause error) error {
	byTag := ref
	byTag.Digest = ""
	mdesc, err := r.c.manifestDesc(ctx, byTag, repo)
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			if cause == nil {
				cause = err
			}
			return r.notFound(ctx, component, version, cause)
		}
		return err
	}
	return ocm.PinMismatch(component, version, ref.Digest, mdesc.Digest.String())
}

// notFound explains a missing version with the versions that exist. A
// version whose tag the registry lists but whose manifest it does not serve
// by that tag is no missing version: the registry is still writing a push
// (distribution links a tag into the tag list before it points the tag at
// its manifest, and sends its push notification before either), or the tag
// is broken. That is the registry's state, not the request's fault, and the
// message says so instead of "not found (available: …, <the version>)".
func (r *Repository) notFound(ctx context.Context, component, version string, cause error) error {
	versions, err := r.ListVersions(ctx, component)
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return err
		}
		return fmt.Errorf("version %s of component %s %w in %s: %w", version, component, errdef.ErrNotFound, r, cause)
	}
	if slices.Contains(versions, version) {
		return fmt.Errorf("%w: version %s of component %s: %s lists its tag %s but serves no manifest for it (a push still being written, or a broken tag); retry", ErrTagNotServed, version, component, r, ocm.VersionToTag(version))
	}
	return fmt.Errorf("version %s of component %s %w in %s (available: %s)", version, component, errdef.ErrNotFound, r, errdef.Cut(strings.Join(versions, ", ")))
}

// ErrTagNotServed: a registry lists a version's tag but serves no manifest
// for it (see notFound). Not errdef.ErrNotFound: retrying may succeed.
var ErrTagNotServed = errors.New("tag listed but not served")

// VersionDigest resolves a version's tag to the digest of its descriptor
// manifest: one request, the descriptor is not read. A tag the registry does
// not serve (yet) is errdef.ErrNotFound.
func (r *Repository) VersionDigest(ctx context.Context, component, version string) (string, error) {
	ref, err := r.descriptorRef(component)
	if err != nil {
		return "", err
	}
	ref.Tag = ocm.VersionToTag(version)
	if err := ref.Validate(); err != nil {
		return "", fmt.Errorf("%w: version %s of component %s cannot be an OCI tag", errdef.ErrInvalidInput, errdef.Quote(version), errdef.Quote(component))
	}
	ctx, cancel := r.c.op(ctx)
	defer cancel()
	repo, err := r.c.repo(ref)
	if err != nil {
		return "", err
	}
	d, err := r.c.manifestDesc(ctx, ref, repo)
	if err != nil {
		return "", err
	}
	return d.Digest.String(), nil
}

type componentVersion struct {
	repo   *Repository
	f      *fetcher
	v      *ocimapping.Version
	digest string
	desc   *ocm.Descriptor
}

var _ ocm.LocalArtifactOpener = (*componentVersion)(nil)

func (cv *componentVersion) Descriptor() *ocm.Descriptor { return cv.desc }
func (cv *componentVersion) DescriptorDigest() string    { return cv.digest }
func (cv *componentVersion) Repository() ocm.Repository  { return cv.repo }

// LocalBlobSize is the size of a localBlob as the version's manifest
// lists it, without a request (see access.Resolver: a read with a lower
// limit than the client's is refused before anything is fetched).
func (cv *componentVersion) LocalBlobSize(acc ocm.Access) (int64, bool) {
	if acc.Kind() != ocm.AccessLocalBlob {
		return 0, false
	}
	return cv.v.LocalBlobSize(acc.String("localReference"))
}

// OpenLocalBlob opens a localBlob: the manifest layer(s) named by its
// localReference, through the cache. A blob that is not a layer but has a
// globalAccess (ociArtifact or ociBlob) is read from there.
func (cv *componentVersion) OpenLocalBlob(ctx context.Context, acc ocm.Access) (ocm.Blob, error) {
	if acc.Kind() != ocm.AccessLocalBlob {
		return nil, fmt.Errorf("%w: %s is not a local blob of an OCI registry", errdef.ErrUnsupportedAccess, acc.Type)
	}
	layers, artifact, err := cv.v.LocalBlob(acc.String("localReference"))
	if err != nil {
		if ga, ok := acc.GlobalAccess(); ok && errors.Is(err, errdef.ErrNotFound) {
			return cv.repo.openGlobal(ctx, *ga)
		}
		return nil, err
	}
	if artifact != nil {
		return cv.openArtifactBlob(ctx, acc, *artifact)
	}
	var total int64
	for _, l := range layers {
		total += l.Size
	}
	if total > cv.repo.c.o.maxBlob {
		return nil, fmt.Errorf("%w: local blob is %d bytes, more than the limit of %d", errdef.ErrLimitExceeded, total, cv.repo.c.o.maxBlob)
	}
	opCtx, cancel := cv.repo.c.op(ctx)
	if cv.repo.c.cache.Enabled() {
		// Download every layer into the cache now, so that errors (auth, not
		// found, digest) surface here rather than on Read, and the reader
		// below reads local files.
		for _, l := range layers {
			rc, err := cv.f.Fetch(opCtx, l)
			if err != nil {
				cancel()
				return nil, err
			}
			if len(layers) == 1 {
				// The cache verified this file as it stored or opened it.
				return cv.newBlob(acc, layers, rc, cancel), nil
			}
			rc.Close()
		}
	}
	rc, _, err := ocimapping.OpenLayers(opCtx, cv.f, layers)
	if err != nil {
		cancel()
		return nil, err
	}
	return cv.newBlob(acc, layers, rc, cancel), nil
}

// openArtifactBlob opens a local blob that is an OCI manifest in the
// version's index (OCM CLI v0.13+): its bytes are the manifest's, and the
// reader fetches and verifies the config and layers after them.
func (cv *componentVersion) openArtifactBlob(ctx context.Context, acc ocm.Access, entry ocispec.Descriptor) (ocm.Blob, error) {
	opCtx, cancel := cv.repo.c.op(ctx)
	rc, size, mt, err := cv.v.ArtifactBlob(opCtx, cv.f, entry, cv.repo.c.o.maxBlob)
	if err != nil {
		cancel()
		return nil, err
	}
	if m := acc.String("mediaType"); m != "" {
		mt = m
	}
	return &Blob{ReadCloser: rc, size: size, mediaType: mt, digest: entry.Digest.String(), cancel: cancel}, nil
}

// OpenLocalArtifact implements ocm.LocalArtifactOpener: the content layer of
// an artifact local blob, through the cache.
func (cv *componentVersion) OpenLocalArtifact(ctx context.Context, acc ocm.Access) (ocm.Blob, string, error) {
	if acc.Kind() != ocm.AccessLocalBlob {
		return nil, "", fmt.Errorf("%w: %s is not a local blob of an OCI registry", errdef.ErrUnsupportedAccess, acc.Type)
	}
	opCtx, cancel := cv.repo.c.op(ctx)
	a, l, entry, err := cv.v.LocalArtifactLayer(opCtx, cv.f, acc.String("localReference"))
	if err != nil {
		cancel()
		return nil, "", err
	}
	var rc io.ReadCloser
	if raw, ok := cv.v.Speculated(opCtx, l); ok && l.Size <= cv.repo.c.o.maxBlob {
		// Read ahead while the descriptor was, verified.
		cv.f.keep(opCtx, l, raw)
		rc = io.NopCloser(bytes.NewReader(raw))
	} else if rc, err = a.OpenLayer(opCtx, cv.f, l, cv.repo.c.o.maxBlob); err != nil {
		cancel()
		return nil, "", err
	}
	size := l.Size
	if size == 0 {
		size = -1
	}
	return &Blob{ReadCloser: rc, size: size, mediaType: l.MediaType, digest: l.Digest.String(), cancel: cancel}, entry.Digest.String(), nil
}

func (cv *componentVersion) newBlob(acc ocm.Access, layers []ocispec.Descriptor, rc io.ReadCloser, cancel func()) ocm.Blob {
	mt := acc.String("mediaType")
	if mt == "" {
		mt = layers[0].MediaType
	}
	d := ""
	if len(layers) == 1 {
		d = layers[0].Digest.String()
	}
	var total int64
	for _, l := range layers {
		total += l.Size
	}
	return &Blob{ReadCloser: rc, size: total, mediaType: mt, digest: d, cancel: cancel}
}

// openGlobal reads a localBlob's globalAccess, through the global opener
// of its type (openers.go).
func (r *Repository) openGlobal(ctx context.Context, ga ocm.Access) (ocm.Blob, error) {
	o, ok := openerOf(ga.Type)
	if !ok || o.global == nil {
		return nil, fmt.Errorf("globalAccess: %w", accessmethod.Unsupported(ga.Type, opensGlobal))
	}
	return o.global(r.c, ctx, ga)
}

// Resolve makes a relativeOciReference absolute: it is relative to the
// registry that hosts this repository (host only, not the sub path), as in
// the OCM CLI. The result keeps the repository's scheme (http:// for a
// plain-HTTP registry). A reference that carries a scheme or whose first
// segment is this registry's host is refused.
func (r *Repository) Resolve(relative string) (string, error) {
	if relative == "" || strings.Contains(relative, "://") || strings.HasPrefix(relative, "/") {
		return "", fmt.Errorf("%w: relativeOciReference %s must be repository[:tag][@digest] without scheme or leading /", errdef.ErrInvalidInput, errdef.Quote(relative))
	}
	abs := r.loc.host + "/" + relative
	ref, err := imageref.Parse(abs)
	if err != nil || ref.Registry != r.loc.host {
		return "", fmt.Errorf("%w: relativeOciReference %s", errdef.ErrInvalidInput, errdef.Quote(relative))
	}
	if r.loc.scheme != "" {
		abs = r.loc.scheme + "://" + abs
	}
	return abs, nil
}

// OpenChart implements ArtifactResolver: ref is absolute, or relative to this
// repository's registry when it has no registry host (see Resolve).
func (r *Repository) OpenChart(ctx context.Context, ref string) (*Chart, error) {
	abs, err := r.absolute(ref)
	if err != nil {
		return nil, err
	}
	return r.c.OpenChart(ctx, abs)
}

// OpenBlob implements ArtifactResolver, resolving ref like OpenChart.
func (r *Repository) OpenBlob(ctx context.Context, ref, dgst string, size int64, mediaType string) (ocm.Blob, error) {
	abs, err := r.absolute(ref)
	if err != nil {
		return nil, err
	}
	return r.c.OpenBlob(ctx, abs, dgst, size, mediaType)
}

// OpenAccess implements ArtifactResolver.
func (r *Repository) OpenAccess(ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (ocm.Blob, string, error) {
	return r.c.OpenAccess(ctx, cv, acc)
}

// OpenHelm implements ArtifactResolver (no repository context is needed).
func (r *Repository) OpenHelm(ctx context.Context, h HelmAccess) (*Chart, error) {
	return r.c.OpenHelm(ctx, h)
}

func (r *Repository) absolute(ref string) (string, error) {
	if strings.Contains(ref, "://") {
		return ref, nil
	}
	first, _, _ := strings.Cut(ref, "/")
	if strings.ContainsAny(first, ".:") || first == "localhost" {
		return ref, nil
	}
	return r.Resolve(ref)
}

// Blob is a verified blob of a registry.
type Blob struct {
	io.ReadCloser
	size      int64
	mediaType string
	digest    string
	cancel    func()
}

func (b *Blob) Size() int64       { return b.size }
func (b *Blob) MediaType() string { return b.mediaType }
func (b *Blob) Digest() string    { return b.digest }

// Close closes the content and ends the operation's deadline.
func (b *Blob) Close() error {
	err := b.ReadCloser.Close()
	if b.cancel != nil {
		b.cancel()
	}
	return err
}
