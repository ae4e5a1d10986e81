package transfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	perr "github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// store is one side of a transfer: an OCM repository seen as OCI
// repositories (paths relative to the repository's prefix) holding blobs,
// manifests and tags. Readers it returns are NOT verified; the transfer
// verifies everything it reads.
type store interface {
	// Resolve returns the descriptor of the manifest a tag names, or an
	// error wrapping errdef.ErrNotFound.
	Resolve(ctx context.Context, repo, tag string) (ocispec.Descriptor, error)
	// Fetch opens a blob or manifest.
	Fetch(ctx context.Context, repo string, d ocispec.Descriptor) (io.ReadCloser, error)
	// Exists reports whether the store holds the blob or manifest in repo.
	Exists(ctx context.Context, repo string, d ocispec.Descriptor) (bool, error)
	// Push stores a blob (config, layer) read from r; the store verifies
	// digest and size before it keeps it.
	Push(ctx context.Context, repo string, d ocispec.Descriptor, r io.Reader) error
	// PushManifest stores a manifest or index, under tag when tag is set.
	PushManifest(ctx context.Context, repo string, d ocispec.Descriptor, b []byte, tag string) error
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
func (l *location) ref(repo string) registry.Reference {
	return registry.Reference{Scheme: l.scheme, Registry: l.host, Repository: path.Join(l.prefix, repo)}
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
		return nil, fmt.Errorf("%w: repository %s has no registry host", perr.ErrInvalidInput, registry.Quote(sp.String()))
	}
	return l, nil
}

// registryStore is an OCM repository in an OCI registry, reached with the
// plugin's registry client (credentials, TLS, plain-HTTP policy, gate).
type registryStore struct {
	reg   *registry.Client
	loc   *location
	repos map[string]*remote.Repository
}

func newRegistryStore(reg *registry.Client, sp oci.Spec) (*registryStore, error) {
	loc, err := parseLocation(sp)
	if err != nil {
		return nil, err
	}
	if loc.scheme == "http" {
		reg.AllowPlainHTTP(loc.host)
	}
	return &registryStore{reg: reg, loc: loc, repos: map[string]*remote.Repository{}}, nil
}

func (s *registryStore) repo(repo string) (*remote.Repository, registry.Reference, error) {
	// The planning checked every name a descriptor derived, with its
	// context; this keeps any path that missed it below the prefix.
	if err := checkRepositoryName("repository", repo); err != nil {
		return nil, registry.Reference{}, err
	}
	ref := s.loc.ref(repo)
	if r, ok := s.repos[repo]; ok {
		return r, ref, nil
	}
	r, err := s.reg.Repository(ref)
	if err != nil {
		return nil, ref, err
	}
	s.repos[repo] = r
	return r, ref, nil
}

func (s *registryStore) Resolve(ctx context.Context, repo, tag string) (ocispec.Descriptor, error) {
	r, ref, err := s.repo(repo)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	ref.Tag = tag
	d, err := r.Resolve(ctx, tag)
	if err != nil {
		return ocispec.Descriptor{}, s.reg.Wrap(err, "resolve tag", ref)
	}
	return d, nil
}

// Tags lists the tags of repo (bounded by the registry client's page limit).
func (s *registryStore) Tags(ctx context.Context, repo string) ([]string, error) {
	r, ref, err := s.repo(repo)
	if err != nil {
		return nil, err
	}
	var tags []string
	err = r.Tags(ctx, "", func(page []string) error {
		tags = append(tags, page...)
		if len(tags) > 100_000 {
			return fmt.Errorf("%w: more than 100000 tags", perr.ErrLimitExceeded)
		}
		return nil
	})
	if err != nil {
		return nil, s.reg.Wrap(err, "list tags", ref)
	}
	return tags, nil
}

func (s *registryStore) Fetch(ctx context.Context, repo string, d ocispec.Descriptor) (io.ReadCloser, error) {
	r, ref, err := s.repo(repo)
	if err != nil {
		return nil, err
	}
	ref.Digest = d.Digest.String()
	rc, err := r.Fetch(ctx, d)
	if err != nil {
		return nil, s.reg.Wrap(err, fetchOp(d), ref)
	}
	return rc, nil
}

func (s *registryStore) Exists(ctx context.Context, repo string, d ocispec.Descriptor) (bool, error) {
	r, ref, err := s.repo(repo)
	if err != nil {
		return false, err
	}
	ok, err := r.Exists(ctx, d)
	if err != nil {
		ref.Digest = d.Digest.String()
		return false, s.reg.Wrap(err, "check "+strings.TrimPrefix(fetchOp(d), "fetch "), ref)
	}
	return ok, nil
}

func (s *registryStore) Push(ctx context.Context, repo string, d ocispec.Descriptor, rd io.Reader) error {
	r, ref, err := s.repo(repo)
	if err != nil {
		return err
	}
	ref.Digest = d.Digest.String()
	// The registry verifies digest and size of what it receives (a
	// monolithic upload names the digest); oras streams the body.
	if err := r.Blobs().Push(ctx, d, rd); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return s.reg.Wrap(err, "push blob", ref)
	}
	return nil
}

func (s *registryStore) PushManifest(ctx context.Context, repo string, d ocispec.Descriptor, b []byte, tag string) error {
	r, ref, err := s.repo(repo)
	if err != nil {
		return err
	}
	if tag == "" {
		ref.Digest = d.Digest.String()
		if err := r.Manifests().Push(ctx, d, bytes.NewReader(b)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return s.reg.Wrap(err, "push manifest", ref)
		}
		return nil
	}
	ref.Tag = tag
	if err := r.Manifests().PushReference(ctx, d, bytes.NewReader(b), tag); err != nil {
		return s.reg.Wrap(err, "push manifest", ref)
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
