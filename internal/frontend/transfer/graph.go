package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	orasregistry "oras.land/oras-go/v2/registry"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/artifactset"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/bytesize"
)

// Bounds of a graph copy: oras-go's concurrency (dockerd's and
// containerd's), manifests cached up to the size a manifest may have, and
// artifacts nested at most maxGraphDepth deep.
const (
	copyConcurrency = 3
	maxGraphDepth   = 4
)

// copyJob is one OCI artifact to copy: the graph under root, read from src,
// into dst (repository repo of the target), the root under tag.
type copyJob struct {
	src  *source
	dst  *jobTarget
	repo string
	root ocispec.Descriptor
	tag  string
	// tagged: the target's tag names root already.
	tagged bool
	// res names the resource the artifact is, for errors; names (when
	// set) names the resource a node is (the version's layers and index
	// entries, and what is below them).
	res   string
	names map[digest.Digest]string
	// extra are successors of a node besides those its manifest lists
	// (a descriptor layer the config names and the layers do not).
	extra map[digest.Digest][]ocispec.Descriptor
}

// plannedNode is a node a plan copies.
type plannedNode struct {
	repo, tag string
	desc      ocispec.Descriptor
	manifest  bool
}

type plan struct {
	jobs    []*copyJob
	nodes   []plannedNode
	closers []io.Closer
	bytes   int64
	present int64
	seen    map[string]bool
}

func (p *plan) close() {
	for _, c := range p.closers {
		c.Close()
	}
}

// options are the options of every graph copy.
func (j *copyJob) options(g *graph) oras.CopyGraphOptions {
	return oras.CopyGraphOptions{Concurrency: copyConcurrency, MaxMetadataBytes: ocimapping.MaxManifestSize, FindSuccessors: g.successors}
}

// addJob plans the copy of an artifact, before anything is written: a tag
// that names other content in the target is refused; then oras.CopyGraph
// walks the graph into the target without copying (PreCopy records each
// node the target lacks and skips it, OnCopySkipped counts what it holds),
// so that every manifest is read, bounded and verified, the target is asked
// only whether it holds each node, and the plan knows what the copy will
// move (the dry run's report, the progress's totals).
func (r *run) addJob(ctx context.Context, p *plan, j *copyJob) error {
	if j.tag != "" {
		cur, err := j.dst.Resolve(ctx, j.tag)
		switch {
		case err == nil && cur.Digest != j.root.Digest:
			return fmt.Errorf("%w: target %s: %s:%s names %s, not %s; nothing was overwritten", errdef.ErrConflict, r.dst, j.repo, j.tag, cur.Digest, j.root.Digest)
		case err == nil:
			j.tagged = true
		case !errors.Is(err, errdef.ErrNotFound):
			return err
		}
	}
	g := newGraph(j.src, j.root, j.extra)
	opts := j.options(g)
	var mu sync.Mutex
	opts.PreCopy = func(_ context.Context, d ocispec.Descriptor) error {
		mu.Lock()
		defer mu.Unlock()
		if k := j.repo + "@" + d.Digest.String(); !p.seen[k] {
			p.seen[k] = true
			n := plannedNode{repo: j.repo, desc: d, manifest: g.isManifest(d)}
			if d.Digest == j.root.Digest && !j.tagged {
				n.tag = j.tag
			}
			p.nodes = append(p.nodes, n)
			p.bytes += d.Size
		}
		return oras.SkipNode
	}
	opts.OnCopySkipped = func(_ context.Context, d ocispec.Descriptor) error {
		mu.Lock()
		defer mu.Unlock()
		j.dst.held.Store(d.Digest, true)
		if k := j.repo + "@" + d.Digest.String(); !p.seen[k] {
			p.seen[k] = true
			p.present++
		}
		return nil
	}
	j.src.reset()
	if err := oras.CopyGraph(ctx, j.src, j.dst, j.root, opts); err != nil {
		_, err := j.failure(g, err)
		return err
	}
	p.jobs = append(p.jobs, j)
	return nil
}

// report writes what a dry run would copy: blobs, then manifests.
func (p *plan) report(prog *progress) {
	for _, manifests := range []bool{false, true} {
		for _, n := range p.nodes {
			switch {
			case n.manifest != manifests:
			case manifests:
				prog.line("  would push manifest %s:%s %s", n.repo, n.tag, n.desc.Digest)
			default:
				prog.line("  would copy %s %s (%s)", n.repo, n.desc.Digest, bytesize.Format(n.desc.Size))
			}
		}
	}
}

// copy copies a planned artifact: oras.CopyGraph (concurrently, children
// before parents, skipping what the target holds), or oras.Copy when the
// root is tagged (into a registry the manifest is pushed under its tag).
func (r *run) copy(ctx context.Context, j *copyJob) error {
	g := newGraph(j.src, j.root, j.extra)
	opts := j.options(g)
	opts.PostCopy = func(_ context.Context, d ocispec.Descriptor) error {
		r.mu.Lock()
		r.sum.Blobs++
		r.sum.Bytes += d.Size
		r.mu.Unlock()
		r.prog.blobDone()
		return nil
	}
	j.src.reset()
	j.src.prog = r.prog
	defer func() { j.src.prog = nil }()
	var err error
	if j.tag == "" || j.tagged {
		err = oras.CopyGraph(ctx, j.src, j.dst, j.root, opts)
	} else {
		_, err = oras.Copy(ctx, rootSource{j.src, j.root}, j.root.Digest.String(), j.dst, j.tag, oras.CopyOptions{CopyGraphOptions: opts})
	}
	if err == nil {
		return nil
	}
	node, err := j.failure(g, err)
	res := j.res
	if res == "" {
		res = g.name(node, j.names)
	}
	what := "copy blob"
	if g.isManifest(node) {
		what = "push manifest"
	}
	if node.Digest == "" {
		what, node = "copy", j.root
	}
	return errdef.Wrap(fmt.Errorf("%s %s: %w", what, node.Digest, err), errdef.Error{Resource: res})
}

// failure is the cause of a failed graph copy and the node it concerns:
// when reading the source failed (or what it read did not match its
// digest), that, not the target's reaction to an aborted upload.
func (j *copyJob) failure(g *graph, err error) (ocispec.Descriptor, error) {
	var ce *oras.CopyError
	if errors.As(err, &ce) {
		err = ce.Err
	}
	if node, serr := j.src.failed(); serr != nil {
		return node, fmt.Errorf("source %s: %w", j.src.name, serr)
	}
	var ne *nodeError
	if errors.As(err, &ne) {
		return ne.node, err
	}
	return ocispec.Descriptor{}, err
}

// jobTarget is a repository of the target (the oras.Target of a job's
// copy), remembering what the plan found it holds (a CTF verifies a blob
// file to say so), and naming the node a failed push concerns.
type jobTarget struct {
	oras.Target
	held sync.Map // digest.Digest → true
}

func (t *jobTarget) Exists(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	if _, ok := t.held.Load(d.Digest); ok {
		return true, nil
	}
	return t.Target.Exists(ctx, d)
}

func (t *jobTarget) Push(ctx context.Context, d ocispec.Descriptor, rd io.Reader) error {
	if err := t.Target.Push(ctx, d, rd); err != nil {
		return &nodeError{node: d, err: err}
	}
	return nil
}

func (t *jobTarget) Tag(ctx context.Context, d ocispec.Descriptor, tag string) error {
	if err := t.Target.Tag(ctx, d, tag); err != nil {
		return &nodeError{node: d, err: err}
	}
	return nil
}

// PushReference pushes a manifest under its tag (oras.Copy's root): in
// one request where the target can (a registry), else pushed, then tagged.
func (t *jobTarget) PushReference(ctx context.Context, d ocispec.Descriptor, rd io.Reader, tag string) error {
	if rp, ok := t.Target.(orasregistry.ReferencePusher); ok {
		if err := rp.PushReference(ctx, d, rd, tag); err != nil {
			return &nodeError{node: d, err: err}
		}
		return nil
	}
	if err := t.Push(ctx, d, rd); err != nil {
		return err
	}
	return t.Tag(ctx, d, tag)
}

// nodeError is the error of the node d.
type nodeError struct {
	node ocispec.Descriptor
	err  error
}

func (e *nodeError) Error() string { return e.err.Error() }
func (e *nodeError) Unwrap() error { return e.err }

// rootSource is a source whose one reference is the digest of root (for
// oras.Copy).
type rootSource struct {
	*source
	root ocispec.Descriptor
}

func (s rootSource) Resolve(_ context.Context, ref string) (ocispec.Descriptor, error) {
	if ref != s.root.Digest.String() {
		return ocispec.Descriptor{}, fmt.Errorf("%s %w", ref, errdef.ErrNotFound)
	}
	return s.root, nil
}

// source is what a graph is copied from: every node is read through a
// verifier (digest and size), and the first failure is remembered with its
// node. Bytes read count as progress while copying.
type source struct {
	st   content.ReadOnlyStorage
	name string // the side, for errors
	prog *progress

	mu   sync.Mutex
	err  error
	node ocispec.Descriptor
}

func newSource(st content.ReadOnlyStorage, name string) *source {
	return &source{st: st, name: name}
}

func (s *source) reset() {
	s.mu.Lock()
	s.err, s.node = nil, ocispec.Descriptor{}
	s.mu.Unlock()
}

func (s *source) fail(d ocispec.Descriptor, err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err, s.node = err, d
	}
	s.mu.Unlock()
}

func (s *source) failed() (ocispec.Descriptor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.node, s.err
}

func (s *source) Exists(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	return s.st.Exists(ctx, d)
}

func (s *source) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := s.st.Fetch(ctx, d)
	if err != nil {
		s.fail(d, err)
		return nil, err
	}
	size := d.Size
	if size <= 0 {
		size = -1
	}
	v, err := blob.NewVerifier(rc, d.Digest.String(), size)
	if err != nil {
		rc.Close()
		s.fail(d, err)
		return nil, err
	}
	return &sourceReader{v: v, s: s, d: d}, nil
}

type sourceReader struct {
	v *blob.Verifier
	s *source
	d ocispec.Descriptor
}

func (r *sourceReader) Read(p []byte) (int, error) {
	n, err := r.v.Read(p)
	if prog := r.s.prog; prog != nil && n > 0 {
		prog.add(int64(n))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		r.s.fail(r.d, err)
	}
	return n, err
}

func (r *sourceReader) Close() error { return r.v.Close() }

// overlay serves the nodes a transfer made (a rewritten version's
// descriptor layer, config, manifest and index; artifact sets it wrote)
// over the source's storage.
type overlay struct {
	content.ReadOnlyStorage
	made map[digest.Digest]func() io.ReadCloser
}

func (o *overlay) add(d digest.Digest, raw []byte) {
	o.made[d] = func() io.ReadCloser { return io.NopCloser(bytes.NewReader(raw)) }
}

func (o *overlay) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	if open, ok := o.made[d.Digest]; ok {
		return open(), nil
	}
	return o.ReadOnlyStorage.Fetch(ctx, d)
}

func (o *overlay) Exists(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	if _, ok := o.made[d.Digest]; ok {
		return true, nil
	}
	return o.ReadOnlyStorage.Exists(ctx, d)
}

// graph finds the successors of an artifact's nodes as the transfer always
// has (oras.CopyGraphOptions.FindSuccessors): the root and the manifests
// an index lists are manifests, listing manifests, config and layers;
// config and layers are leaves; a subject is not followed, foreign layers
// are not copied (as oras-go's default). A manifest is read through
// oras's cache, bounded by ocimapping.MaxManifestSize and verified, and
// nested at most maxGraphDepth deep.
type graph struct {
	mu     sync.Mutex
	depth  map[digest.Digest]int // manifests
	parent map[digest.Digest]digest.Digest
	succ   map[digest.Digest][]ocispec.Descriptor
	extra  map[digest.Digest][]ocispec.Descriptor
	src    *source
}

func newGraph(src *source, root ocispec.Descriptor, extra map[digest.Digest][]ocispec.Descriptor) *graph {
	return &graph{depth: map[digest.Digest]int{root.Digest: 0}, parent: map[digest.Digest]digest.Digest{},
		succ: map[digest.Digest][]ocispec.Descriptor{}, extra: extra, src: src}
}

func (g *graph) isManifest(d ocispec.Descriptor) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.depth[d.Digest]
	return ok
}

func (g *graph) successors(ctx context.Context, f content.Fetcher, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	g.mu.Lock()
	depth, ok := g.depth[d.Digest]
	g.mu.Unlock()
	if !ok {
		return nil, nil
	}
	if depth > maxGraphDepth {
		return nil, fmt.Errorf("%w: artifact nested deeper than %d", errdef.ErrLimitExceeded, maxGraphDepth)
	}
	if d.Size > ocimapping.MaxManifestSize {
		return nil, fmt.Errorf("%w: manifest %s is %d bytes, more than %d", errdef.ErrLimitExceeded, d.Digest, d.Size, ocimapping.MaxManifestSize)
	}
	rc, err := f.Fetch(ctx, d)
	if err != nil {
		return nil, err
	}
	size := d.Size
	if size <= 0 {
		size = -1
	}
	raw, err := blob.ReadAll(rc, d.Digest.String(), size, ocimapping.MaxManifestSize)
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", d.Digest, err)
	}
	var m struct {
		Config    *ocispec.Descriptor  `json:"config"`
		Layers    []ocispec.Descriptor `json:"layers"`
		Manifests []ocispec.Descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %v", errdef.ErrInvalidDescriptor, d.Digest, err)
	}
	out := append([]ocispec.Descriptor{}, m.Manifests...)
	for i, c := range out {
		// Index entries of some writers omit size or media type: the
		// copy needs them (the index itself is copied as it is).
		if out[i], err = rootOf(ctx, g.src, c); err != nil {
			return nil, err
		}
	}
	if m.Config != nil {
		out = append(out, *m.Config)
	}
	for _, l := range m.Layers {
		if !isForeignLayer(l.MediaType) {
			out = append(out, l)
		}
	}
	out = append(out, g.extra[d.Digest]...)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range m.Manifests {
		if _, ok := g.depth[c.Digest]; !ok {
			g.depth[c.Digest] = depth + 1
		}
	}
	for _, c := range out {
		if _, ok := g.parent[c.Digest]; !ok {
			g.parent[c.Digest] = d.Digest
		}
	}
	g.succ[d.Digest] = out
	return out, nil
}

// isForeignLayer: a non-distributable layer, not copied (as oras does). The
// OCI constants are deprecated for producing such layers, not for reading.
func isForeignLayer(mt string) bool {
	switch mt {
	//lint:ignore SA1019 reading, not producing, non-distributable layers
	case ocispec.MediaTypeImageLayerNonDistributable, ocispec.MediaTypeImageLayerNonDistributableGzip, ocispec.MediaTypeImageLayerNonDistributableZstd,
		"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip":
		return true
	}
	return false
}

// name is the resource a node (or the nearest node above it) is.
func (g *graph) name(d ocispec.Descriptor, names map[digest.Digest]string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	for n, i := d.Digest, 0; n != "" && i < 2*maxGraphDepth+2; n, i = g.parent[n], i+1 {
		if s, ok := names[n]; ok {
			return s
		}
	}
	return ""
}

// walk lists the nodes under root, children before their parents, each
// once, in the order their manifests list them: the order an artifact set
// holds its blobs in.
func (g *graph) walk(root ocispec.Descriptor) []ocispec.Descriptor {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []ocispec.Descriptor
	seen := map[digest.Digest]bool{}
	var visit func(d ocispec.Descriptor)
	visit = func(d ocispec.Descriptor) {
		if seen[d.Digest] {
			return
		}
		seen[d.Digest] = true
		for _, c := range g.succ[d.Digest] {
			visit(c)
		}
		out = append(out, d)
	}
	visit(root)
	return out
}

// rootOf is root with its size and media type as its manifest says, read
// (bounded and verified) when root does not say them.
func rootOf(ctx context.Context, src *source, root ocispec.Descriptor) (ocispec.Descriptor, error) {
	if root.Size > 0 && root.MediaType != "" {
		return root, nil
	}
	raw, err := ocimapping.FetchVerified(ctx, src, root, ocimapping.MaxManifestSize)
	if err != nil {
		return root, fmt.Errorf("manifest %s: %w", root.Digest, err)
	}
	root.Size = int64(len(raw))
	if mt := artifactset.ManifestMediaType(raw); mt != "" {
		root.MediaType = mt
	}
	return root, nil
}
