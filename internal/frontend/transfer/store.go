package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	perr "github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
)

// store is one side of a transfer: an OCM repository seen as OCI
// repositories (paths relative to the repository's prefix), each an
// oras.Target (Fetch, Exists, Push, Resolve, Tag) that oras.Copy and
// oras.CopyGraph read and write. Readers it returns are NOT verified; the
// transfer verifies everything it reads (see source).
type store interface {
	// Repository is repo (below the prefix) as an oras.Target. Resolve
	// errors wrap errdef.ErrNotFound for a tag the repository lacks.
	Repository(repo string) (oras.Target, error)
	// Commit makes what was pushed durable (a CTF writes its index, a tgz
	// is packed); changed reports whether anything was pushed at all.
	Commit(changed bool) error
	// Close releases the store; a CTF target not committed keeps its
	// staging directory so that the next run resumes.
	Close() error
	// Registry is the location of an OCI registry store (nil for a CTF).
	Registry() *location
	String() string
}

// location is where an OCI registry store lives: what the repository
// context appended to a descriptor and the rewritten accesses name.
type location struct {
	scheme string // "http", "https" or "" as the user wrote it
	host   string
	prefix string // base path + subPath
	spec   oci.Spec
}

// ref is the reference of repo (relative to the prefix) in this registry.
func (l *location) ref(repo string) imageref.Reference {
	return imageref.Reference{Scheme: l.scheme, Registry: l.host, Repository: path.Join(l.prefix, repo)}
}

// imageReference is what an ociArtifact access of a copy says: scheme (as
// the OCM CLI writes it for plain HTTP), host, prefix, repository, tag and
// digest.
func (l *location) imageReference(repo, tag, digest string) string {
	s := l.host + "/" + path.Join(l.prefix, repo)
	if l.scheme != "" {
		s = l.scheme + "://" + s
	}
	if tag != "" {
		s += ":" + tag
	}
	return s + "@" + digest
}

// repositoryContext is the OCIRegistry repository spec the OCM CLI appends
// to repositoryContexts: baseUrl as written (scheme kept), subPath, urlPath.
func (l *location) repositoryContext() map[string]any {
	base := l.host
	if l.scheme != "" {
		base = l.scheme + "://" + l.host
	}
	m := map[string]any{"type": oci.TypeOCIRegistry, "baseUrl": base, "componentNameMapping": "urlPath"}
	if l.prefix != "" {
		m["subPath"] = l.prefix
	}
	return m
}

func parseLocation(sp oci.Spec) (*location, error) {
	s := sp.String() // normalised: [scheme://]host[/prefix]
	l := &location{spec: sp}
	if sc, rest, ok := strings.Cut(s, "://"); ok {
		l.scheme, s = sc, rest
	}
	l.host, l.prefix, _ = strings.Cut(s, "/")
	if l.host == "" {
		return nil, fmt.Errorf("%w: repository %s has no registry host", perr.ErrInvalidInput, perr.Quote(sp.String()))
	}
	return l, nil
}

// registryStore is an OCM repository in an OCI registry, reached with the
// plugin's registry client (credentials, TLS, plain-HTTP policy, gate).
type registryStore struct {
	reg   *registry.Client
	loc   *location
	repos map[string]*registryRepo
}

func newRegistryStore(reg *registry.Client, sp oci.Spec) (*registryStore, error) {
	loc, err := parseLocation(sp)
	if err != nil {
		return nil, err
	}
	if loc.scheme == "http" {
		reg.AllowPlainHTTP(loc.host)
	}
	return &registryStore{reg: reg, loc: loc, repos: map[string]*registryRepo{}}, nil
}

// Repository is repo of the registry, reached with the plugin's registry
// client (its address policy, credentials and gate); errors name the
// reference (registry.Client.Wrap).
func (s *registryStore) Repository(repo string) (oras.Target, error) {
	return s.repo(repo)
}

func (s *registryStore) repo(repo string) (*registryRepo, error) {
	// The planning checked every name a descriptor derived, with its
	// context; this keeps any path that missed it below the prefix.
	if err := checkRepositoryName("repository", repo); err != nil {
		return nil, err
	}
	if r, ok := s.repos[repo]; ok {
		return r, nil
	}
	ref := s.loc.ref(repo)
	r, err := s.reg.Repository(ref)
	if err != nil {
		return nil, err
	}
	rr := &registryRepo{reg: s.reg, r: r, ref: ref}
	s.repos[repo] = rr
	return rr, nil
}

// Tags lists the tags of repo (bounded by the registry client's page limit).
func (s *registryStore) Tags(ctx context.Context, repo string) ([]string, error) {
	rr, err := s.repo(repo)
	if err != nil {
		return nil, err
	}
	var tags []string
	err = rr.r.Tags(ctx, "", func(page []string) error {
		tags = append(tags, page...)
		if len(tags) > 100_000 {
			return fmt.Errorf("%w: more than 100000 tags", perr.ErrLimitExceeded)
		}
		return nil
	})
	if err != nil {
		return nil, s.reg.Wrap(err, "list tags", rr.ref)
	}
	return tags, nil
}

// registryRepo is one repository of a registry as an oras.Target (and
// registry.ReferencePusher, so that oras.Copy tags a manifest in the one
// request that pushes it); every error is the registry client's.
type registryRepo struct {
	reg *registry.Client
	r   *remote.Repository
	ref imageref.Reference
}

func (t *registryRepo) with(tag string, d ocispec.Descriptor) imageref.Reference {
	ref := t.ref
	ref.Tag = tag
	if d.Digest != "" {
		ref.Digest = d.Digest.String()
	}
	return ref
}

func (t *registryRepo) Resolve(ctx context.Context, tag string) (ocispec.Descriptor, error) {
	d, err := t.r.Resolve(ctx, tag)
	if err != nil {
		return ocispec.Descriptor{}, t.reg.Wrap(err, "resolve tag", t.with(tag, ocispec.Descriptor{}))
	}
	return d, nil
}

func (t *registryRepo) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := t.r.Fetch(ctx, d)
	if err != nil {
		return nil, t.reg.Wrap(err, fetchOp(d), t.with("", d))
	}
	return rc, nil
}

func (t *registryRepo) Exists(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	ok, err := t.r.Exists(ctx, d)
	if err != nil {
		return false, t.reg.Wrap(err, "check "+strings.TrimPrefix(fetchOp(d), "fetch "), t.with("", d))
	}
	return ok, nil
}

// Push stores a blob or manifest (by media type); the registry verifies
// digest and size of what it receives, oras streams the body.
func (t *registryRepo) Push(ctx context.Context, d ocispec.Descriptor, rd io.Reader) error {
	if err := t.r.Push(ctx, d, rd); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return t.reg.Wrap(err, strings.Replace(fetchOp(d), "fetch", "push", 1), t.with("", d))
	}
	return nil
}

// PushReference pushes a manifest under tag.
func (t *registryRepo) PushReference(ctx context.Context, d ocispec.Descriptor, rd io.Reader, tag string) error {
	if err := t.r.PushReference(ctx, d, rd, tag); err != nil {
		return t.reg.Wrap(err, "push manifest", t.with(tag, ocispec.Descriptor{}))
	}
	return nil
}

func (t *registryRepo) Tag(ctx context.Context, d ocispec.Descriptor, tag string) error {
	if err := t.r.Tag(ctx, d, tag); err != nil {
		return t.reg.Wrap(err, "tag manifest", t.with(tag, ocispec.Descriptor{}))
	}
	return nil
}

func (s *registryStore) Commit(bool) error   { return nil }
func (s *registryStore) Close() error        { return nil }
func (s *registryStore) Registry() *location { return s.loc }
func (s *registryStore) String() string      { return s.loc.spec.String() }

func fetchOp(d ocispec.Descriptor) string {
	if isManifestType(d.MediaType) {
		return "fetch manifest"
	}
	return "fetch blob"
}

func isManifestType(mt string) bool {
	switch mt {
	case ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageIndex,
		"application/vnd.docker.distribution.manifest.v2+json", "application/vnd.docker.distribution.manifest.list.v2+json":
		return true
	}
	return false
}
