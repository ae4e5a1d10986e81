package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/artifactset"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
)

// Client reads OCI content for the plugin: component versions (through
// Repository) and artifacts named by access specifications (charts). It
// holds the registry client, the blob cache and the memo of tag
// resolutions. It is safe for concurrent use. One serves one generation: its
// registry client carries that generation's sidecar rule, and it remembers a
// tag's resolution for its whole life; what may outlive a generation is
// passed in (WithRecentTags, registry.WithShared). argocdocm.Engine decides
// these lifetimes.
type Client struct {
	reg     *registry.Client
	cache   *cache.Cache
	o       options
	logger  *slog.Logger
	tags    cache.Memo[string, ocispec.Descriptor] // "<registry>/<repo>:<tag>" → manifest
	lists   cache.Memo[string, []string]           // "<registry>/<repo>" → tags
	indexes cache.Memo[string, *helmIndex]         // chart repository URL → index

	mu   sync.Mutex
	meta map[digest.Digest][]byte // manifests read by tag, for this process
}

var _ ArtifactResolver = (*Client)(nil)

// NewClient builds a Client; see the options for defaults.
func NewClient(opts ...Option) (*Client, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return newClient(o)
}

func newClient(o options) (*Client, error) {
	if o.logger == nil {
		o.logger = slog.Default()
	}
	reg := o.reg
	if reg == nil {
		var err error
		reg, err = registry.NewClient(append([]registry.Option{registry.WithLogger(o.logger)}, o.regOpts...)...)
		if err != nil {
			return nil, err
		}
	}
	reg.AllowPlainHTTP(o.allowPlain...)
	c := o.cache
	if !o.cacheSet {
		dir, err := cache.DefaultDir()
		if err != nil {
			o.logger.Warn("blob cache disabled", "cause", err.Error())
			c = cache.Disabled()
		} else {
			c = cache.Open(dir, cache.WithLogger(o.logger))
		}
	}
	if c == nil {
		c = cache.Disabled()
	}
	return &Client{reg: reg, cache: c, o: o, logger: o.logger, meta: map[digest.Digest][]byte{}}, nil
}

// Registry is the client's registry client.
func (c *Client) Registry() *registry.Client { return c.reg }

// Cache is the client's blob cache.
func (c *Client) Cache() *cache.Cache { return c.cache }

// op bounds one operation by the client's timeout.
func (c *Client) op(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.o.timeout > 0 {
		return context.WithTimeout(ctx, c.o.timeout)
	}
	return context.WithCancel(ctx)
}

// repo returns the oras repository of ref.
func (c *Client) repo(ref imageref.Reference) (*remote.Repository, error) {
	return c.reg.Repository(ref)
}

const maxMeta = 512

func (c *Client) putMeta(d digest.Digest, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.meta) >= maxMeta {
		for k := range c.meta {
			delete(c.meta, k)
			break
		}
	}
	c.meta[d] = b
}

func (c *Client) getMeta(d digest.Digest) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.meta[d]
	return b, ok
}

// fetcher implements ocimapping.Fetcher for one repository: manifests read
// by tag in this process, then the disk cache, then the registry.
type fetcher struct {
	c    *Client
	ref  imageref.Reference
	repo *remote.Repository

	mu    sync.Mutex
	aside map[digest.Digest]bool // read ahead from the registry, not yet in the cache
}

var _ ocimapping.AsideFetcher = (*fetcher)(nil)

// FetchAside implements ocimapping.AsideFetcher for a read ahead: from the
// cache when it holds desc and may answer (under a policy: with this
// credential's vouch), else from the registry, verified, at most limit
// bytes. It writes nothing: the read may outlive the generation (and a
// test's directory); keep stores what the generation uses.
func (f *fetcher) FetchAside(ctx context.Context, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	if desc.Size <= 0 || desc.Size > limit || desc.Size > f.c.o.maxBlob {
		return nil, fmt.Errorf("%w: blob %s of %d bytes is not read ahead", errdef.ErrLimitExceeded, desc.Digest, desc.Size)
	}
	ref := f.ref
	ref.Tag, ref.Digest = "", desc.Digest.String()
	if f.c.cache.Enabled() && (!f.c.reg.Gated() || f.c.cache.Vouched(f.c.vouch(ref, desc.Digest))) {
		if file, ok := f.c.cache.Get(desc.Digest.String(), desc.Size); ok {
			defer file.Close()
			return blob.ReadAll(file, desc.Digest.String(), desc.Size, limit)
		}
	}
	rc, err := f.repo.Fetch(ctx, desc)
	if err != nil {
		return nil, f.c.reg.Wrap(err, fetchOp(desc), ref)
	}
	defer rc.Close()
	b, err := blob.ReadAll(rc, desc.Digest.String(), desc.Size, limit)
	if err != nil {
		return nil, wrapMismatch(err, fetchOp(desc), ref)
	}
	f.mu.Lock()
	if f.aside == nil {
		f.aside = map[digest.Digest]bool{}
	}
	f.aside[desc.Digest] = true
	f.mu.Unlock()
	return b, nil
}

// keep stores b, the verified bytes of desc that FetchAside read from the
// registry and the generation now uses, in the cache, as a download through
// it would have (vouched for under a policy).
func (f *fetcher) keep(ctx context.Context, desc ocispec.Descriptor, b []byte) {
	f.mu.Lock()
	fromRegistry := f.aside[desc.Digest]
	delete(f.aside, desc.Digest)
	f.mu.Unlock()
	if !fromRegistry || !f.c.cache.Enabled() {
		return
	}
	if err := f.c.cache.Put(ctx, desc.Digest.String(), bytes.NewReader(b)); err != nil {
		f.c.logger.Debug("blob read ahead not cached", "digest", desc.Digest.String(), "cause", err.Error())
		return
	}
	if f.c.reg.Gated() {
		ref := f.ref
		ref.Tag, ref.Digest = "", desc.Digest.String()
		f.c.cache.Vouch(f.c.vouch(ref, desc.Digest))
	}
}

func (f *fetcher) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if b, ok := f.c.getMeta(desc.Digest); ok {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	if desc.Size > f.c.o.maxBlob {
		return nil, fmt.Errorf("%w: blob %s is %d bytes, more than the limit of %d", errdef.ErrLimitExceeded, desc.Digest, desc.Size, f.c.o.maxBlob)
	}
	size := desc.Size
	if size == 0 {
		size = -1
	}
	ref := f.ref
	ref.Tag, ref.Digest = "", desc.Digest.String()
	fetch := func(ctx context.Context) (io.ReadCloser, error) {
		open := func(ctx context.Context) (io.ReadCloser, error) {
			rc, err := f.repo.Fetch(ctx, desc)
			if err != nil {
				return nil, f.c.reg.Wrap(err, fetchOp(desc), ref)
			}
			return rc, nil
		}
		rc, err := open(ctx)
		if err != nil {
			return nil, err
		}
		return &resumingReader{ctx: ctx, open: open, rc: rc, wrap: func(err error) error {
			return f.c.reg.Wrap(err, fetchOp(desc)+": read", ref)
		}}, nil
	}
	var rc io.ReadCloser
	var err error
	if f.c.reg.Gated() {
		// Under a policy the manifest naming desc may be another tenant's
		// (a registry that serves manifests naming blobs it does not hold,
		// or says yes to every digest): the shared cache answers only when
		// this credential read the digest from this repository before;
		// otherwise the repository must serve the bytes (see vouch).
		rc, err = f.c.cache.FetchVouched(ctx, f.c.vouch(ref, desc.Digest), size, fetch)
	} else {
		rc, err = f.c.cache.Fetch(ctx, desc.Digest.String(), size, fetch)
	}
	if err != nil {
		return nil, wrapMismatch(err, fetchOp(desc), ref)
	}
	return rc, nil
}

// vouch is what proves, under a policy, that the shared cache may serve d
// to this generation for ref's repository: this credential downloaded d
// from this repository, and it was verified, before (cache.FetchVouched). A
// digest is no secret; a vouch cannot be had without the bytes, so a
// registry that answers every digest (one a tenant runs) fails with a
// digest mismatch. Vouches live in the cache directory, shared by every
// process of the node; without a policy every Application has the
// sidecar's credentials and the cache answers alone.
func (c *Client) vouch(ref imageref.Reference, d digest.Digest) cache.Vouch {
	return cache.Vouch{Credential: c.reg.CredentialKey(ref), Source: ref.Name(), Digest: d.String()}
}

// wrapMismatch names the registry, repository and reference in a digest
// mismatch of content read from there, keeping errdef.ErrDigestMismatch
// (its text names digests and sizes only); other errors are returned as
// they are.
func wrapMismatch(err error, op string, ref imageref.Reference) error {
	var named *registry.Error
	if !errors.Is(err, errdef.ErrDigestMismatch) || errors.As(err, &named) {
		return err
	}
	return &registry.Error{Op: op, Registry: ref.Registry, Repository: ref.Repository, Reference: ref.Ref(), Err: err}
}

// maxResumes bounds how often one blob download starts over after its
// connection broke off.
const maxResumes = registry.DefaultRetries

// resumingReader reads a blob and, when the connection breaks off in the
// middle (reset, cut off, stalled past a transport timeout), fetches it again
// and skips what was already delivered. The consumer verifies the digest of
// the whole, so a registry that served different bytes the second time is
// still caught. Errors that end the read name the registry, repository and
// blob.
type resumingReader struct {
	ctx     context.Context
	open    func(context.Context) (io.ReadCloser, error)
	rc      io.ReadCloser
	n       int64 // bytes delivered
	resumes int
	wrap    func(error) error
	err     error
}

func (r *resumingReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for {
		n, err := r.rc.Read(p)
		r.n += int64(n)
		if err == nil || err == io.EOF {
			return n, err
		}
		if !registry.RetryableReadError(err) || r.ctx.Err() != nil || r.resumes >= maxResumes {
			if r.ctx.Err() != nil {
				err = r.ctx.Err()
			}
			r.err = r.wrap(err)
			return n, r.err
		}
		if rerr := r.resume(); rerr != nil {
			r.err = rerr
			return n, r.err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// resume replaces the broken body with a new one positioned after the bytes
// already delivered.
func (r *resumingReader) resume() error {
	r.rc.Close()
	for {
		r.resumes++
		t := time.NewTimer(time.Duration(r.resumes) * 100 * time.Millisecond)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return r.wrap(r.ctx.Err())
		case <-t.C:
		}
		rc, err := r.open(r.ctx)
		if err != nil {
			return err // already wrapped
		}
		_, err = io.CopyN(io.Discard, rc, r.n)
		if err == nil {
			r.rc = rc
			return nil
		}
		rc.Close()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the registry now serves less than before
		}
		if !registry.RetryableReadError(err) || r.ctx.Err() != nil || r.resumes >= maxResumes {
			if r.ctx.Err() != nil {
				err = r.ctx.Err()
			}
			return r.wrap(err)
		}
	}
}

func (r *resumingReader) Close() error { return r.rc.Close() }

func fetchOp(desc ocispec.Descriptor) string {
	switch desc.MediaType {
	case ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageIndex,
		"application/vnd.docker.distribution.manifest.v2+json", "application/vnd.docker.distribution.manifest.list.v2+json":
		return "fetch manifest"
	}
	return "fetch blob"
}

// manifestDesc resolves ref (tag or digest) to the descriptor of its manifest
// (or index), keeping the manifest bytes for the fetcher. A digest that is in
// the cache costs no request; a tag costs one GET per Client (see
// WithRecentTags for sharing it).
func (c *Client) manifestDesc(ctx context.Context, ref imageref.Reference, repo *remote.Repository) (ocispec.Descriptor, error) {
	if ref.Digest != "" {
		d := digest.Digest(ref.Digest)
		if b, ok := c.getMeta(d); ok {
			return ocispec.Descriptor{MediaType: artifactset.ManifestMediaType(b), Digest: d, Size: int64(len(b))}, nil
		}
		// Under a policy only with this credential's vouch for this
		// repository (see vouch); else read by digest, which vouches.
		if !c.reg.Gated() || c.cache.Vouched(c.vouch(ref, d)) {
			if f, ok := c.cache.Get(ref.Digest, -1); ok {
				b, err := io.ReadAll(io.LimitReader(f, ocimapping.MaxManifestSize+1))
				f.Close()
				if err == nil && int64(len(b)) <= ocimapping.MaxManifestSize {
					c.putMeta(d, b)
					return ocispec.Descriptor{MediaType: artifactset.ManifestMediaType(b), Digest: d, Size: int64(len(b))}, nil
				}
			}
		}
		return c.fetchManifestRef(ctx, ref, repo, ref.Digest)
	}
	if ref.Tag == "" {
		return ocispec.Descriptor{}, fmt.Errorf("%w: reference %s has neither tag nor digest", errdef.ErrInvalidInput, ref)
	}
	key := ref.Name() + ":" + ref.Tag
	return c.tags.Do(ctx, key, func(ctx context.Context) (ocispec.Descriptor, error) {
		if c.o.recentTags == nil {
			return c.fetchManifestRef(ctx, ref, repo, ref.Tag)
		}
		// Shared between generations: per credential, so that a resolution
		// made with one project's credential never answers another's.
		shared := c.reg.CredentialKey(ref) + "\x00" + key
		m, err := c.o.recentTags.Do(ctx, shared, func(ctx context.Context) (TaggedManifest, error) {
			d, err := c.fetchManifestRef(ctx, ref, repo, ref.Tag)
			if err != nil {
				return TaggedManifest{}, err
			}
			b, _ := c.getMeta(d.Digest)
			if len(b) > maxSharedManifest {
				b = nil // read by digest, through the cache
			}
			return TaggedManifest{Desc: d, Data: b}, nil
		})
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		if m.Data != nil {
			c.putMeta(m.Desc.Digest, m.Data) // no second request for the manifest body
		}
		return m.Desc, nil
	})
}

// TagResolutions are recent tag resolutions shared by the generations of one
// long-lived process (the render server): an ApplicationSet refresh rendering
// 100 Applications of one component asks the registry for the tag once. A
// moved tag is seen once the entry is older than its time to live.
type TagResolutions = cache.Memo[string, TaggedManifest]

// maxSharedManifest bounds the manifest bytes a shared tag resolution
// keeps: a descriptor's or a chart's manifest is about 1 KiB, and a
// tenant's registry serving 4 MiB manifests for tag after tag must not
// hold gigabytes of a worker for the generations after it (at most
// 4096 entries, cache.NewRecent).
const maxSharedManifest = 16 << 10

// TaggedManifest is a manifest a tag named when it was resolved.
type TaggedManifest struct {
	Desc ocispec.Descriptor
	Data []byte // the verified manifest bytes
}

// NewTagResolutions makes TagResolutions whose entries live for ttl.
func NewTagResolutions(ttl time.Duration) *TagResolutions {
	return cache.NewRecent[string, TaggedManifest](ttl)
}

// fetchManifestRef GETs a manifest by tag or digest, verifies it against the
// digest the registry names (or the one asked for) and keeps it.
func (c *Client) fetchManifestRef(ctx context.Context, ref imageref.Reference, repo *remote.Repository, reference string) (ocispec.Descriptor, error) {
	desc, rc, err := repo.FetchReference(ctx, reference)
	if err != nil {
		return ocispec.Descriptor{}, c.reg.Wrap(err, "fetch manifest", ref)
	}
	defer rc.Close()
	if ref.Digest != "" && desc.Digest.String() != ref.Digest {
		return ocispec.Descriptor{}, wrapMismatch(fmt.Errorf("%w: the registry returned manifest %s for %s", errdef.ErrDigestMismatch, desc.Digest, ref.Digest), "fetch manifest", ref)
	}
	b, err := blob.ReadAll(rc, desc.Digest.String(), desc.Size, ocimapping.MaxManifestSize)
	if err != nil {
		return ocispec.Descriptor{}, c.reg.Wrap(wrapMismatch(err, "fetch manifest", ref), "fetch manifest", ref)
	}
	c.putMeta(desc.Digest, b)
	if c.cache.Enabled() {
		if err := c.cache.Put(ctx, desc.Digest.String(), bytes.NewReader(b)); err != nil {
			c.logger.Debug("manifest not cached", "digest", desc.Digest.String(), "cause", err.Error())
		}
		if c.reg.Gated() {
			// Read from this repository and verified: a proof of possession.
			c.cache.Vouch(c.vouch(ref, desc.Digest))
		}
	}
	if mt := artifactset.ManifestMediaType(b); mt != "" {
		desc.MediaType = mt
	}
	return desc, nil
}
