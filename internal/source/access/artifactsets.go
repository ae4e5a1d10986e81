package access

import (
	"slices"
	"sync"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/artifactset"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/lru"
)

// An OCM CLI stores a Helm chart as an OCI artifact set (a tgz of an OCI
// layout) in a local blob. Every generation of such a chart unpacked the
// set twice — to check the resource digest against its main manifest, and
// to take the chart layer out —, the same work every time for the same
// blob: 0.5-0.8 ms of a warm generation of redis or ingress-nginx
// (BenchmarkChartArchive), 8 ms of kube-prometheus-stack's.

// DefaultArtifactSetsSize bounds the chart layers an ArtifactSets keeps: a
// few dozen real charts (their archives are 17 KB to 0.9 MB).
const DefaultArtifactSetsSize = 8 << 20

// minSetCost is what an ArtifactSets counts an entry at least (its
// structures, for a tiny layer).
const minSetCost = 1 << 10

// ArtifactSets keeps, for a long-lived process (a render-server worker),
// what generations take out of an artifact set: its main manifest digest
// and its Helm chart layer, by the SHA-256 of the set's bytes, computed from
// the bytes at hand (Content.Digest of a local blob). An entry is kept only
// once the set was read and its blobs verified (artifactset.Read, Layer), so
// a hit needs the identical set: what one tenant's generation kept, another
// gets only for the same content, which it would have unpacked to the same
// bytes. A hit hands out a copy of the layer, so nothing a render does with
// it reaches the kept bytes. At most maxBytes of layers (each counted at
// least 1 KiB), the least recently used dropped first. A nil *ArtifactSets
// keeps nothing. Safe for concurrent use.
type ArtifactSets struct {
	kept *lru.Cache[string, *setEntry]
}

// setEntry is what is kept of one artifact set; never changed once kept.
type setEntry struct {
	main  string // the main manifest's digest
	chart []byte // the Helm chart layer
}

// NewArtifactSets returns an ArtifactSets of at most maxBytes (<= 0:
// DefaultArtifactSetsSize).
func NewArtifactSets(maxBytes int64) *ArtifactSets {
	if maxBytes <= 0 {
		maxBytes = DefaultArtifactSetsSize
	}
	return &ArtifactSets{lru.New[string, *setEntry](maxBytes, minSetCost)}
}

func (s *ArtifactSets) get(digest string) *setEntry {
	if s == nil || digest == "" {
		return nil
	}
	e, _ := s.kept.Get(digest)
	return e
}

func (s *ArtifactSets) put(digest string, e *setEntry) {
	if s == nil || digest == "" {
		return
	}
	s.kept.Put(digest, e, int64(len(e.chart)))
}

// Len is the number of artifact sets kept.
func (s *ArtifactSets) Len() int { return s.kept.Len() }

// contentSet is one Content's artifact set, read at most once for the
// generation and shared with the ArtifactSets it came with.
type contentSet struct {
	sets   *ArtifactSets
	digest string // SHA-256 of Content.Data, computed from it ("" unknown)

	once sync.Once
	set  *artifactset.Set
	kept *setEntry
	err  error
}

// read reads the set, or finds it kept.
func (cs *contentSet) read(data []byte) {
	cs.once.Do(func() {
		if cs.kept = cs.sets.get(cs.digest); cs.kept != nil {
			return
		}
		cs.set, cs.err = artifactset.Read(data)
	})
}

// artifactSetMain is the digest of c's artifact set's main manifest.
func (c *Content) artifactSetMain() (string, error) {
	cs := c.setOf()
	cs.read(c.Data)
	switch {
	case cs.err != nil:
		return "", cs.err
	case cs.kept != nil:
		return cs.kept.main, nil
	}
	return cs.set.Main.Digest.String(), nil
}

// artifactSetChart is the Helm chart layer of c's artifact set: a copy of
// the kept one, or read from the set (and then kept).
func (c *Content) artifactSetChart() ([]byte, error) {
	cs := c.setOf()
	cs.read(c.Data)
	switch {
	case cs.err != nil:
		return nil, cs.err
	case cs.kept != nil:
		return slices.Clone(cs.kept.chart), nil
	}
	data, _, err := cs.set.Layer(MediaTypeHelmChart, "application/tar+gzip")
	if err != nil {
		return nil, err
	}
	cs.sets.put(cs.digest, &setEntry{main: cs.set.Main.Digest.String(), chart: slices.Clone(data)})
	return data, nil
}

func (c *Content) setOf() *contentSet {
	if c.set == nil {
		c.set = &contentSet{}
	}
	return c.set
}
