package ocimapping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
)

// Local blobs that are OCI artifacts (OCM CLI v0.13+, open-component-model
// monorepo): a Helm chart is not a layer of the descriptor manifest but a
// manifest of its own inside the image index the version's tag names. Its
// access is localBlob with mediaType application/vnd.oci.image.manifest.v1+json
// and localReference = that manifest's digest; the resource digest
// (genericBlobDigest/v1) is the SHA-256 of the manifest bytes, so the layers
// are covered only through the digests the manifest names.

const (
	// MaxIndexEntries bounds the manifests of a version's image index: one
	// descriptor manifest plus one per OCI-artifact local blob.
	MaxIndexEntries = 1024

	mediaTypeDockerManifest     = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json"
	// artifactTypeDescriptor marks the descriptor manifest in an index
	// written by the OCM CLI v0.13+ (it sets no software.ocm.descriptor).
	artifactTypeDescriptor = "application/vnd.ocm.software.component-descriptor.v2"
)

// IsManifestMediaType reports whether a localBlob's media type says the blob
// is an OCI (or Docker v2) image manifest, i.e. an artifact in the index.
func IsManifestMediaType(mt string) bool {
	return mt == ocispec.MediaTypeImageManifest || mt == mediaTypeDockerManifest
}

func isIndexMediaType(mt string) bool {
	return mt == ocispec.MediaTypeImageIndex || mt == mediaTypeDockerManifestList
}

// Version is a component version as an OCI store keeps it.
type Version struct {
	// Manifest is the descriptor manifest, Desc its descriptor.
	Manifest *ocispec.Manifest
	Desc     ocispec.Descriptor
	// Artifacts are the other manifests of the image index the tag names
	// (local blobs that are OCI artifacts); nil when it names a manifest.
	Artifacts []ocispec.Descriptor
	// prefetched holds the artifact manifests read while the descriptor
	// manifest was (by digest, verified): one round trip fewer for a
	// chart in the index. Missing entries are read when asked for.
	prefetched map[string][]byte

	mu sync.Mutex
	// speculative are content layers read ahead by Speculate, by digest.
	speculative map[string]*speculativeLayer
}

// speculativeLayer is a layer Speculate reads: raw holds its verified
// bytes once done is closed and err is nil.
type speculativeLayer struct {
	done chan struct{}
	raw  []byte
	err  error
}

// ResolveVersion reads what desc names: a manifest (OCM CLI v0.48 and
// earlier, and v0.13+ without artifact blobs), or an image index whose
// descriptor manifest is the entry annotated software.ocm.descriptor=true,
// else the one with the descriptor artifactType, else the first.
func ResolveVersion(ctx context.Context, f Fetcher, desc ocispec.Descriptor) (*Version, error) {
	raw, err := FetchVerified(ctx, f, desc, MaxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	idx, err := probeIndex(raw, desc)
	if err != nil {
		return nil, err
	}
	if idx == nil {
		m, err := decodeManifest(raw, desc)
		if err != nil {
			return nil, err
		}
		return &Version{Manifest: m, Desc: desc}, nil
	}
	if len(idx.Manifests) == 0 {
		return nil, fmt.Errorf("%w: index %s has no manifests", errdef.ErrInvalidDescriptor, desc.Digest)
	}
	if len(idx.Manifests) > MaxIndexEntries {
		return nil, fmt.Errorf("%w: index %s has %d manifests, more than %d", errdef.ErrLimitExceeded, desc.Digest, len(idx.Manifests), MaxIndexEntries)
	}
	pick := descriptorEntry(idx.Manifests)
	used := idx.Manifests[pick]
	if isIndexMediaType(used.MediaType) {
		return nil, fmt.Errorf("%w: nested index at %s", errdef.ErrInvalidDescriptor, used.Digest)
	}
	// The artifact manifests (small; what a chart's layer is, is in them)
	// are read while the descriptor manifest is: a render of a chart in the
	// index then waits on one round trip fewer. At most maxPrefetched of
	// them, only manifests; a failure here is not one: the entry is read
	// again, and its error reported, when it is used.
	pre := prefetchManifests(ctx, f, idx.Manifests, pick)
	mraw, err := FetchVerified(ctx, f, used, MaxManifestSize)
	prefetched := pre()
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if inner, err := probeIndex(mraw, used); err != nil {
		return nil, err
	} else if inner != nil {
		return nil, fmt.Errorf("%w: nested index at %s", errdef.ErrInvalidDescriptor, used.Digest)
	}
	m, err := decodeManifest(mraw, used)
	if err != nil {
		return nil, err
	}
	v := &Version{Manifest: m, Desc: used, prefetched: prefetched}
	for i, e := range idx.Manifests {
		if i != pick {
			v.Artifacts = append(v.Artifacts, e)
		}
	}
	return v, nil
}

// maxPrefetched bounds the artifact manifests ResolveVersion reads ahead.
const maxPrefetched = 8

// prefetchManifests starts reading the manifests of an index other than
// entry skip, concurrently; the function it returns waits for them and
// returns those read and verified, by digest.
func prefetchManifests(ctx context.Context, f Fetcher, entries []ocispec.Descriptor, skip int) func() map[string][]byte {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		out = map[string][]byte{}
	)
	n := 0
	for i, e := range entries {
		if i == skip || !IsManifestMediaType(e.MediaType) || e.Size <= 0 || e.Size > MaxManifestSize {
			continue
		}
		if n == maxPrefetched {
			break
		}
		n++
		wg.Add(1)
		go func() {
			defer wg.Done()
			if raw, err := FetchVerified(ctx, f, e, MaxManifestSize); err == nil {
				mu.Lock()
				out[e.Digest.String()] = raw
				mu.Unlock()
			}
		}()
	}
	return func() map[string][]byte {
		wg.Wait()
		return out
	}
}

// Artifact is FetchArtifact of an entry of v's index, from what
// ResolveVersion read ahead when it has it.
func (v *Version) Artifact(ctx context.Context, f Fetcher, entry ocispec.Descriptor) (*Artifact, error) {
	if raw, ok := v.prefetched[entry.Digest.String()]; ok {
		return artifactOf(raw, entry)
	}
	return FetchArtifact(ctx, f, entry)
}

// Bounds of Speculate: Applications choose what a version's index holds.
const (
	maxSpeculativeLayers       = 2
	maxSpeculativeBytes  int64 = 4 << 20 // together
)

// AsideFetcher is a Fetcher that can read content for a read ahead
// (Speculate): verified, into memory, at most limit bytes, with no lasting
// effect (no cache write: the read may run past the generation that
// started it). Speculate uses FetchVerified with a Fetcher without it.
type AsideFetcher interface {
	FetchAside(ctx context.Context, desc ocispec.Descriptor, limit int64) ([]byte, error)
}

// Speculate starts reading, in the background, the content layer of the
// artifact manifests ResolveVersion read ahead that hold a Helm chart, so
// that a render of a chart in the index waits for it while it waits for
// the descriptor (config and descriptor layer), not after: one round trip
// fewer. At most maxSpeculativeLayers layers of declared sizes up to
// maxSpeculativeBytes together, in index order; each is verified against
// its digest before Speculated hands it out, and a failed read is not an
// error here: the caller reads the layer again and reports that. ctx
// bounds the reads; it should be the generation's, not one that ends with
// the lookup. wait returns once every read it started has ended.
func (v *Version) Speculate(ctx context.Context, f Fetcher) (wait func()) {
	var wg sync.WaitGroup
	var budget int64 = maxSpeculativeBytes
	n := 0
	for _, e := range v.Artifacts {
		if n == maxSpeculativeLayers {
			break
		}
		raw, ok := v.prefetched[e.Digest.String()]
		if !ok {
			continue
		}
		a, err := artifactOf(raw, e)
		if err != nil {
			continue
		}
		l, err := a.MainLayer()
		if err != nil || (l.MediaType != mediaTypeHelmChart && l.MediaType != mediaTypeLegacyHelmChart) || l.Size <= 0 || l.Size > budget {
			continue
		}
		d := l.Digest.String()
		v.mu.Lock()
		if v.speculative == nil {
			v.speculative = map[string]*speculativeLayer{}
		}
		_, dup := v.speculative[d]
		var p *speculativeLayer
		if !dup {
			p = &speculativeLayer{done: make(chan struct{})}
			v.speculative[d] = p
		}
		v.mu.Unlock()
		if dup {
			continue
		}
		budget -= l.Size
		n++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(p.done)
			if af, ok := f.(AsideFetcher); ok {
				p.raw, p.err = af.FetchAside(ctx, l, l.Size)
				if p.err == nil && (int64(len(p.raw)) != l.Size || blob.Digest(p.raw) != d) {
					p.raw, p.err = nil, fmt.Errorf("%w: read ahead of layer %s", errdef.ErrDigestMismatch, d)
				}
				return
			}
			p.raw, p.err = FetchVerified(ctx, f, l, l.Size)
		}()
	}
	return wg.Wait
}

// Speculated returns the bytes of layer l that Speculate read, verified
// against l's digest and size, waiting for that read to end; false when
// Speculate did not read l, the read failed, or ctx ended first (the
// caller then reads l itself). The bytes are handed out once.
func (v *Version) Speculated(ctx context.Context, l ocispec.Descriptor) ([]byte, bool) {
	d := l.Digest.String()
	v.mu.Lock()
	p := v.speculative[d]
	v.mu.Unlock()
	if p == nil {
		return nil, false
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, false
	}
	v.mu.Lock()
	delete(v.speculative, d)
	v.mu.Unlock()
	if p.err != nil || int64(len(p.raw)) != l.Size {
		return nil, false
	}
	return p.raw, true
}

// descriptorEntry picks the descriptor manifest of an index: annotated
// software.ocm.descriptor=true (OCM Go library), else the first with the
// descriptor artifactType (OCM CLI v0.13+), else the first.
func descriptorEntry(ms []ocispec.Descriptor) int {
	for i, m := range ms {
		if m.Annotations[AnnotationDescriptor] == "true" {
			return i
		}
	}
	for i, m := range ms {
		if m.ArtifactType == artifactTypeDescriptor {
			return i
		}
	}
	return 0
}

// probeIndex returns the index raw holds, nil when it is a manifest.
func probeIndex(raw []byte, desc ocispec.Descriptor) (*ocispec.Index, error) {
	var probe struct {
		MediaType string               `json:"mediaType"`
		Manifests []ocispec.Descriptor `json:"manifests"`
		Config    *ocispec.Descriptor  `json:"config"`
	}
	if err := nesting.CheckText(raw); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %w", errdef.ErrInvalidDescriptor, desc.Digest, err)
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %v", errdef.ErrInvalidDescriptor, desc.Digest, err)
	}
	if isIndexMediaType(probe.MediaType) || (probe.Config == nil && len(probe.Manifests) > 0) {
		return &ocispec.Index{MediaType: probe.MediaType, Manifests: probe.Manifests}, nil
	}
	return nil, nil
}

func decodeManifest(raw []byte, desc ocispec.Descriptor) (*ocispec.Manifest, error) {
	var m ocispec.Manifest
	if err := nesting.CheckText(raw); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %w", errdef.ErrInvalidDescriptor, desc.Digest, err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %v", errdef.ErrInvalidDescriptor, desc.Digest, err)
	}
	if m.MediaType == "" {
		m.MediaType = desc.MediaType
	}
	return &m, nil
}

// LocalArtifact returns the index entry a localBlob's localReference names.
// A reference that is no entry wraps errdef.ErrNotFound (callers then try a
// globalAccess); the descriptor manifest itself and nested indexes are refused.
func (v *Version) LocalArtifact(localReference string) (ocispec.Descriptor, error) {
	d, err := blob.Normalize(strings.TrimSpace(localReference))
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("localReference %s: %w", errdef.Quote(localReference), err)
	}
	if d == v.Desc.Digest.String() {
		return ocispec.Descriptor{}, fmt.Errorf("%w: local blob %s names the component descriptor manifest, not an artifact", errdef.ErrInvalidDescriptor, d)
	}
	for _, e := range v.Artifacts {
		if e.Digest.String() != d {
			continue
		}
		if isIndexMediaType(e.MediaType) {
			return ocispec.Descriptor{}, fmt.Errorf("%w: local blob %s is an image index, want a manifest", errdef.ErrUnsupportedMediaType, d)
		}
		return e, nil
	}
	return ocispec.Descriptor{}, fmt.Errorf("local blob %s is neither a layer nor a manifest of the component version: %w", d, errdef.ErrNotFound)
}

// ArtifactBlob opens the local blob that entry, an artifact manifest of the
// version's index, is (OCM CLI v0.13+): its bytes are the manifest's,
// followed by its config and layers, each verified (Artifact.Reader); size
// is the manifest's length and mediaType its media type. Both stores (CTF,
// registry) open such a blob this way.
func (v *Version) ArtifactBlob(ctx context.Context, f Fetcher, entry ocispec.Descriptor, limit int64) (rc io.ReadCloser, size int64, mediaType string, err error) {
	a, err := v.Artifact(ctx, f, entry)
	if err != nil {
		return nil, 0, "", err
	}
	if rc, err = a.Reader(ctx, f, limit); err != nil {
		return nil, 0, "", err
	}
	return rc, int64(len(a.Raw)), a.Manifest.MediaType, nil
}

// LocalArtifactLayer is the content layer (Artifact.MainLayer) of the
// artifact local blob localReference names, with the artifact to open it
// from and the index entry.
func (v *Version) LocalArtifactLayer(ctx context.Context, f Fetcher, localReference string) (*Artifact, ocispec.Descriptor, ocispec.Descriptor, error) {
	entry, err := v.LocalArtifact(localReference)
	if err != nil {
		return nil, ocispec.Descriptor{}, ocispec.Descriptor{}, err
	}
	a, err := v.Artifact(ctx, f, entry)
	if err != nil {
		return nil, ocispec.Descriptor{}, ocispec.Descriptor{}, err
	}
	l, err := a.MainLayer()
	if err != nil {
		return nil, ocispec.Descriptor{}, ocispec.Descriptor{}, err
	}
	return a, l, entry, nil
}

// LocalBlob finds where a localBlob lives: the layers of the descriptor
// manifest (every OCM CLI), or, for one digest that is no layer, an artifact
// manifest of the index (v0.13+; layers is nil then).
func (v *Version) LocalBlob(localReference string) (layers []ocispec.Descriptor, artifact *ocispec.Descriptor, err error) {
	layers, err = LocalBlobLayers(v.Manifest, localReference)
	if err == nil || !errors.Is(err, errdef.ErrNotFound) || strings.Contains(localReference, ",") {
		return layers, nil, err
	}
	e, err := v.LocalArtifact(localReference)
	if err != nil {
		return nil, nil, err
	}
	return nil, &e, nil
}

// LocalBlobSize is the size of a localBlob stored as layers of the
// descriptor manifest (their sizes added), known without reading it; ok is
// false for an artifact local blob or one the manifest does not hold.
func (v *Version) LocalBlobSize(localReference string) (size int64, ok bool) {
	layers, artifact, err := v.LocalBlob(localReference)
	if err != nil || artifact != nil {
		return 0, false
	}
	for _, l := range layers {
		size += l.Size
	}
	return size, true
}

// Artifact is an OCI artifact local blob: its manifest, verified.
type Artifact struct {
	Desc     ocispec.Descriptor
	Raw      []byte
	Manifest *ocispec.Manifest
}

// FetchArtifact reads the manifest entry names and checks that it is one
// (an index, or bytes of another digest, are refused).
func FetchArtifact(ctx context.Context, f Fetcher, entry ocispec.Descriptor) (*Artifact, error) {
	raw, err := FetchVerified(ctx, f, entry, MaxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("local artifact %s: %w", entry.Digest, err)
	}
	return artifactOf(raw, entry)
}

// artifactOf checks that raw, the verified bytes of entry, is a manifest.
func artifactOf(raw []byte, entry ocispec.Descriptor) (*Artifact, error) {
	if idx, err := probeIndex(raw, entry); err != nil {
		return nil, err
	} else if idx != nil {
		return nil, fmt.Errorf("%w: local artifact %s is an image index, want a manifest", errdef.ErrUnsupportedMediaType, entry.Digest)
	}
	m, err := decodeManifest(raw, entry)
	if err != nil {
		return nil, err
	}
	if len(m.Layers) > MaxIndexEntries {
		return nil, fmt.Errorf("%w: local artifact %s has %d layers, more than %d", errdef.ErrLimitExceeded, entry.Digest, len(m.Layers), MaxIndexEntries)
	}
	return &Artifact{Desc: entry, Raw: raw, Manifest: m}, nil
}

// Media types of a Helm chart's content layer (current and pre-OCI-spec).
const (
	mediaTypeHelmChart       = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	mediaTypeLegacyHelmChart = "application/tar+gzip"
)

// MainLayer is the layer that holds an artifact's content for rendering: the
// Helm chart layer, else the only layer.
func (a *Artifact) MainLayer() (ocispec.Descriptor, error) {
	for _, l := range a.Manifest.Layers {
		if l.MediaType == mediaTypeHelmChart || l.MediaType == mediaTypeLegacyHelmChart {
			return l, nil
		}
	}
	if len(a.Manifest.Layers) == 1 {
		return a.Manifest.Layers[0], nil
	}
	var mts []string
	for _, l := range a.Manifest.Layers {
		mts = append(mts, l.MediaType)
	}
	return ocispec.Descriptor{}, fmt.Errorf("%w: local artifact %s has no Helm chart layer and %d layers (config %s, layers [%s])",
		errdef.ErrUnsupportedMediaType, a.Desc.Digest, len(a.Manifest.Layers), errdef.Quote(a.Manifest.Config.MediaType), errdef.Quote(strings.Join(mts, ", ")))
}

// OpenLayer opens one layer of the artifact, verified as it is read; errors
// name the layer and the artifact.
func (a *Artifact) OpenLayer(ctx context.Context, f Fetcher, l ocispec.Descriptor, limit int64) (io.ReadCloser, error) {
	if l.Size > limit {
		return nil, fmt.Errorf("%w: layer %s of local artifact %s is %d bytes, more than the limit of %d", errdef.ErrLimitExceeded, l.Digest, a.Desc.Digest, l.Size, limit)
	}
	rc, err := f.Fetch(ctx, l)
	if err != nil {
		return nil, fmt.Errorf("layer %s of local artifact %s: %w", l.Digest, a.Desc.Digest, err)
	}
	size := l.Size
	if size == 0 {
		size = -1
	}
	v, err := blob.NewVerifier(rc, l.Digest.String(), size)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("layer of local artifact %s: %w", a.Desc.Digest, err)
	}
	return &namedReader{rc: v, what: "layer " + l.Digest.String() + " of local artifact " + a.Desc.Digest.String()}, nil
}

// Reader returns the artifact's blob as OCM defines it, the manifest bytes
// (what genericBlobDigest/v1 hashes), and at their end reads and verifies
// the config and every layer, so that a reader that hashes to EOF (verify)
// covers the content the manifest digest stands for. limit bounds the
// declared sizes together.
func (a *Artifact) Reader(ctx context.Context, f Fetcher, limit int64) (io.ReadCloser, error) {
	blobs := append([]ocispec.Descriptor{a.Manifest.Config}, a.Manifest.Layers...)
	var total int64
	for _, l := range blobs {
		if l.Size < 0 {
			return nil, fmt.Errorf("%w: local artifact %s: blob %s has size %d", errdef.ErrInvalidDescriptor, a.Desc.Digest, l.Digest, l.Size)
		}
		total += l.Size
		if total > limit {
			return nil, fmt.Errorf("%w: local artifact %s is more than the limit of %d bytes", errdef.ErrLimitExceeded, a.Desc.Digest, limit)
		}
	}
	return &artifactReader{ctx: ctx, f: f, a: a, raw: a.Raw, rest: blobs, limit: limit}, nil
}

type artifactReader struct {
	ctx   context.Context
	f     Fetcher
	a     *Artifact
	raw   []byte
	rest  []ocispec.Descriptor
	limit int64
	err   error
}

func (r *artifactReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(r.raw) > 0 {
		n := copy(p, r.raw)
		r.raw = r.raw[n:]
		return n, nil
	}
	for _, l := range r.rest {
		if l.Digest == "" {
			continue
		}
		if err := r.check(l); err != nil {
			r.err = err
			return 0, err
		}
	}
	r.rest = nil
	r.err = io.EOF
	return 0, io.EOF
}

func (r *artifactReader) check(l ocispec.Descriptor) error {
	rc, err := r.a.OpenLayer(r.ctx, r.f, l, r.limit)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

func (r *artifactReader) Close() error { return nil }

// namedReader prefixes read errors with what is read, once.
type namedReader struct {
	rc   io.ReadCloser
	what string
}

func (n *namedReader) Read(p []byte) (int, error) {
	c, err := n.rc.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", n.what, err)
	}
	return c, err
}

func (n *namedReader) Close() error { return n.rc.Close() }
