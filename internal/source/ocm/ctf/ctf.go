package ctf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// File names inside a CTF and a component archive.
const (
	IndexFileName      = "artifact-index.json"
	DescriptorFileName = "component-descriptor.yaml"
	BlobsDir           = "blobs"

	maxIndexSize = 64 << 20
)

// Index is artifact-index.json.
type Index struct {
	SchemaVersion int             `json:"schemaVersion"`
	Artifacts     []IndexArtifact `json:"artifacts"`
}

// IndexArtifact is one tagged (or untagged) artifact of a CTF.
type IndexArtifact struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag,omitempty"`
	Digest     string `json:"digest"`
	MediaType  string `json:"mediaType,omitempty"`
}

// Open opens a CTF or a component archive at path, in directory, tar or tgz
// form. It reads any path it is given (the CLI's render, for people); what an
// Argo CD Application names is opened inside its directory first (package
// confine) and read with OpenDir or OpenFile. FIFOs, devices and sockets are
// refused before they are opened.
func Open(path string, opts ...Option) (ocm.Repository, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("repository %s: %w: no such file or directory", path, errdef.ErrNotFound)
		}
		return nil, fmt.Errorf("repository %s: %w", path, err)
	}
	switch {
	case fi.IsDir():
		d, err := os.OpenRoot(path)
		if err != nil {
			return nil, fmt.Errorf("repository %s: %w", path, err)
		}
		return OpenDir(d, path, opts...)
	case fi.Mode().IsRegular():
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		if err != nil {
			return nil, fmt.Errorf("repository %s: %w", path, err)
		}
		if ffi, err := f.Stat(); err != nil || !ffi.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("repository %s: %w: not a file or directory", path, errdef.ErrInvalidInput)
		}
		return OpenFile(f, path, opts...)
	default:
		return nil, fmt.Errorf("repository %s: %w: not a file or directory", path, errdef.ErrInvalidInput)
	}
}

// OpenDir reads a CTF or component archive directory through dir: names
// inside it are resolved beneath it, links in it are refused. name is how
// messages call it. OpenDir takes dir over: the repository's Close closes it.
// Of opts, WithDescriptors applies (a directory is not unpacked).
func OpenDir(dir *os.Root, name string, opts ...Option) (ocm.Repository, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return open(dirStore{root: dir}, name, o)
}

// OpenFile reads a CTF or component archive in tar or tgz form from f, an
// open regular file. name is how messages call it. OpenFile takes f over: the
// repository's Close closes it (also when OpenFile fails).
func OpenFile(f *os.File, name string, opts ...Option) (ocm.Repository, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	ts, err := openFileStore(f, o)
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", name, err)
	}
	return open(ts, name, o)
}

// open detects the form by content.
func open(s store, path string, o options) (ocm.Repository, error) {
	switch {
	case s.exists(IndexFileName):
		r := &Repository{path: path, s: s, descs: o.descs}
		if err := r.readIndex(); err != nil {
			s.close()
			return nil, fmt.Errorf("repository %s: %w", path, err)
		}
		return r, nil
	case s.exists(DescriptorFileName):
		ca, err := openComponentArchive(path, s)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("repository %s: %w", path, err)
		}
		return ca, nil
	default:
		s.close()
		return nil, fmt.Errorf("repository %s: %w: neither a CTF (%s) nor a component archive (%s); %s",
			path, errdef.ErrInvalidInput, IndexFileName, DescriptorFileName, RepositoryForms)
	}
}

// Repository is a CTF.
type Repository struct {
	path  string
	s     store
	index Index
	descs *ocimapping.Descriptors // nil: decoded by each lookup
}

var _ ocm.Repository = (*Repository)(nil)

func (r *Repository) readIndex() error {
	rc, size, err := r.s.open(IndexFileName)
	if err != nil {
		return err
	}
	defer rc.Close()
	if size > maxIndexSize {
		return fmt.Errorf("%w: %s is %d bytes", errdef.ErrLimitExceeded, IndexFileName, size)
	}
	dec := json.NewDecoder(io.LimitReader(rc, maxIndexSize))
	if err := dec.Decode(&r.index); err != nil {
		return fmt.Errorf("%w: %s: %v", errdef.ErrInvalidDescriptor, IndexFileName, err)
	}
	if r.index.SchemaVersion != 1 {
		return fmt.Errorf("%w: %s: schemaVersion %d, want 1", errdef.ErrInvalidDescriptor, IndexFileName, r.index.SchemaVersion)
	}
	return nil
}

// Artifacts lists the index entries.
func (r *Repository) Artifacts() []IndexArtifact { return r.index.Artifacts }

// Fetch implements ocimapping.Fetcher over the CTF's flat blob directory; the
// returned reader is not verified (callers verify, see ocimapping.FetchVerified).
func (r *Repository) Fetch(_ context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	name, err := BlobFileName(desc.Digest.String())
	if err != nil {
		return nil, err
	}
	rc, _, err := r.s.open(name)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", desc.Digest, err)
	}
	return rc, nil
}

// ListVersions implements ocm.Repository.
func (r *Repository) ListVersions(_ context.Context, component string) ([]string, error) {
	repo := ocm.DescriptorRepository(component)
	var out []string
	for _, a := range r.index.Artifacts {
		if a.Repository == repo && a.Tag != "" {
			out = append(out, ocm.TagToVersion(a.Tag))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("component %s %w in %s", component, errdef.ErrNotFound, r.path)
	}
	sort.Strings(out)
	return out, nil
}

// LookupComponentVersion implements ocm.Repository. version may be pinned,
// "<version>@sha256:…": the digest must be the version's manifest digest (the
// index entry's, or the manifest's it resolves to), else an error wrapping
// errdef.ErrDigestMismatch.
func (r *Repository) LookupComponentVersion(ctx context.Context, component, version string) (ocm.ComponentVersion, error) {
	version, pin, err := ocm.SplitPinnedVersion(component, version)
	if err != nil {
		return nil, err
	}
	repo, tag := ocm.DescriptorRepository(component), ocm.VersionToTag(version)
	var entry *IndexArtifact
	for i, a := range r.index.Artifacts {
		if a.Repository == repo && a.Tag == tag {
			entry = &r.index.Artifacts[i]
			break
		}
	}
	if entry == nil {
		versions, err := r.ListVersions(ctx, component)
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("version %s of component %s %w in %s (available: %s)",
			version, component, errdef.ErrNotFound, r.path, strings.Join(versions, ", "))
	}
	dg, err := digest.Parse(entry.Digest)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: entry %s:%s has digest %s", errdef.ErrInvalidDescriptor, IndexFileName, repo, tag, errdef.Quote(entry.Digest))
	}
	mt := entry.MediaType
	if mt == "" {
		mt = ocispec.MediaTypeImageManifest
	}
	v, err := ocimapping.ResolveVersion(ctx, r, ocispec.Descriptor{MediaType: mt, Digest: dg})
	if err != nil {
		return nil, err
	}
	mdesc := v.Desc
	d, err := r.descs.Read(ctx, r, v.Manifest)
	if err != nil {
		return nil, err
	}
	if d.Name != component || d.Version != version {
		return nil, fmt.Errorf("%w: %s:%s holds the descriptor of %s:%s", errdef.ErrInvalidDescriptor, repo, tag, d.Name, d.Version)
	}
	if pin != "" && pin != dg.String() && pin != mdesc.Digest.String() {
		return nil, ocm.PinMismatch(component, version, pin, mdesc.Digest.String())
	}
	return &componentVersion{repo: r, v: v, digest: mdesc.Digest.String(), desc: d}, nil
}

// Close implements ocm.Repository.
func (r *Repository) Close() error { return r.s.close() }

type componentVersion struct {
	repo   *Repository
	v      *ocimapping.Version
	digest string
	desc   *ocm.Descriptor
}

var _ ocm.LocalArtifactOpener = (*componentVersion)(nil)

func (c *componentVersion) Descriptor() *ocm.Descriptor { return c.desc }
func (c *componentVersion) DescriptorDigest() string    { return c.digest }
func (c *componentVersion) Repository() ocm.Repository  { return c.repo }

// LocalBlobSize is the size of a localBlob as the version's manifest
// lists it, without reading it.
func (c *componentVersion) LocalBlobSize(acc ocm.Access) (int64, bool) {
	if acc.Kind() != ocm.AccessLocalBlob {
		return 0, false
	}
	return c.v.LocalBlobSize(acc.String("localReference"))
}

func (c *componentVersion) OpenLocalBlob(ctx context.Context, acc ocm.Access) (ocm.Blob, error) {
	if acc.Kind() != ocm.AccessLocalBlob {
		return nil, fmt.Errorf("%w: %s is not a local blob of a CTF", errdef.ErrUnsupportedAccess, acc.Type)
	}
	ref := acc.String("localReference")
	layers, artifact, err := c.v.LocalBlob(ref)
	if err != nil {
		return nil, err
	}
	if artifact != nil {
		return c.openArtifactBlob(ctx, acc, *artifact)
	}
	rc, size, err := ocimapping.OpenLayers(ctx, c.repo, layers)
	if err != nil {
		return nil, err
	}
	mt := acc.String("mediaType")
	if mt == "" {
		mt = layers[0].MediaType
	}
	d := ""
	if len(layers) == 1 {
		d = layers[0].Digest.String()
	}
	return &Blob{ReadCloser: rc, size: size, mediaType: mt, digest: d}, nil
}

// openArtifactBlob opens a local blob that is an OCI manifest in the
// version's index (OCM CLI v0.13+): its bytes are the manifest's, and the
// reader verifies the config and layers after them.
func (c *componentVersion) openArtifactBlob(ctx context.Context, acc ocm.Access, entry ocispec.Descriptor) (ocm.Blob, error) {
	rc, size, mt, err := c.v.ArtifactBlob(ctx, c.repo, entry, maxArtifactSize)
	if err != nil {
		return nil, err
	}
	if m := acc.String("mediaType"); m != "" {
		mt = m
	}
	return &Blob{ReadCloser: rc, size: size, mediaType: mt, digest: entry.Digest.String()}, nil
}

// maxArtifactSize bounds the blobs of one artifact local blob together; a
// CTF's own files are read, so this only stops a manifest that declares
// absurd sizes (the consumers bound what they keep).
const maxArtifactSize int64 = 1 << 40

// OpenLocalArtifact implements ocm.LocalArtifactOpener.
func (c *componentVersion) OpenLocalArtifact(ctx context.Context, acc ocm.Access) (ocm.Blob, string, error) {
	if acc.Kind() != ocm.AccessLocalBlob {
		return nil, "", fmt.Errorf("%w: %s is not a local blob of a CTF", errdef.ErrUnsupportedAccess, acc.Type)
	}
	a, l, entry, err := c.v.LocalArtifactLayer(ctx, c.repo, acc.String("localReference"))
	if err != nil {
		return nil, "", err
	}
	rc, err := a.OpenLayer(ctx, c.repo, l, maxArtifactSize)
	if err != nil {
		return nil, "", err
	}
	size := l.Size
	if size == 0 {
		size = -1
	}
	return &Blob{ReadCloser: rc, size: size, mediaType: l.MediaType, digest: l.Digest.String()}, entry.Digest.String(), nil
}

// Blob is a verified local blob.
type Blob struct {
	io.ReadCloser
	size      int64
	mediaType string
	digest    string
}

func (b *Blob) Size() int64       { return b.size }
func (b *Blob) MediaType() string { return b.mediaType }
func (b *Blob) Digest() string    { return b.digest }
