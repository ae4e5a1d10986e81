package ocimapping_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ocimapping"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
)

// blobs is a content store over the OCM CLI v0.13.0 CTF's blob files, to
// which a test adds hostile variants.
type blobs map[digest.Digest][]byte

func (b blobs) Fetch(_ context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	c, ok := b[d.Digest]
	if !ok {
		return nil, fmt.Errorf("blob %s: %w", d.Digest, errdef.ErrNotFound)
	}
	return io.NopCloser(bytes.NewReader(c)), nil
}

func (b blobs) add(c []byte) ocispec.Descriptor {
	d := digest.FromBytes(c)
	b[d] = c
	return ocispec.Descriptor{Digest: d, Size: int64(len(c))}
}

func v2Blobs(t *testing.T) blobs {
	t.Helper()
	dir := fixtures.V2Path(t, "ctf", "blobs")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := blobs{}
	for _, e := range ents {
		c, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b[digest.Digest(strings.Replace(e.Name(), ".", ":", 1))] = c
	}
	return b
}

// helm-dir:1.0.0's tag, its descriptor manifest and its chart manifest.
const (
	helmDirIndex    = digest.Digest("sha256:69ec05df8ca209a2735aeb5a31914c027813c82fec7a1cd43e4498cf5f8c2083")
	helmDirManifest = digest.Digest("sha256:d3e2acd624ac95397acaa7e0be5890d1206ea3ee437a9c357431f5f74755c28c")
	chartManifest   = digest.Digest("sha256:a420182a2f8ec4dd0528cc012c3f66aa04130392d3379b118ee522f1ec4f53b8")
	chartLayer      = digest.Digest("sha256:53b3cbd202fd3a33d085d7f9249b5d00767b12bd1e14ba21bd09583ae5f48eb7")
)

func resolve(t *testing.T, b blobs, d digest.Digest) (*ocimapping.Version, error) {
	t.Helper()
	return ocimapping.ResolveVersion(context.Background(), b, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: d, Size: int64(len(b[d]))})
}

func TestResolveV2Index(t *testing.T) {
	b := v2Blobs(t)
	v, err := resolve(t, b, helmDirIndex)
	if err != nil {
		t.Fatal(err)
	}
	if v.Desc.Digest != helmDirManifest || len(v.Artifacts) != 1 || v.Artifacts[0].Digest != chartManifest {
		t.Fatalf("descriptor manifest %s, artifacts %v", v.Desc.Digest, v.Artifacts)
	}
	d, err := ocimapping.ReadDescriptor(context.Background(), b, v.Manifest)
	if err != nil || d.Name != "ocm.example/fixtures/helm-dir" || d.Version != "1.0.0" {
		t.Fatalf("descriptor %v %v", d, err)
	}
	layers, art, err := v.LocalBlob(chartManifest.String())
	if err != nil || layers != nil || art == nil || art.Digest != chartManifest {
		t.Fatalf("chart local blob: %v %v %v", layers, art, err)
	}
	a, err := ocimapping.FetchArtifact(context.Background(), b, *art)
	if err != nil {
		t.Fatal(err)
	}
	l, err := a.MainLayer()
	if err != nil || l.Digest != chartLayer {
		t.Fatalf("main layer %s %v", l.Digest, err)
	}
	rc, err := a.Reader(context.Background(), b, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || digest.FromBytes(got) != chartManifest {
		t.Fatalf("artifact blob: %s %v", digest.FromBytes(got), err)
	}
}

// Hostile index shapes: each is one error line, in bounded work.
func TestHostileIndexes(t *testing.T) {
	b := v2Blobs(t)
	var idx ocispec.Index
	if err := json.Unmarshal(b[helmDirIndex], &idx); err != nil {
		t.Fatal(err)
	}
	descEntry, chartEntry := idx.Manifests[0], idx.Manifests[1]
	mkIndex := func(ms ...ocispec.Descriptor) digest.Digest {
		raw, _ := json.Marshal(ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: ms})
		return b.add(raw).Digest
	}
	// An index entry that is itself an index, declared or disguised.
	nested := chartEntry
	nested.Digest, nested.Size = helmDirIndex, int64(len(b[helmDirIndex]))
	nestedDeclared := nested
	nestedDeclared.MediaType = ocispec.MediaTypeImageIndex
	// A manifest entry whose bytes hash to another digest.
	liar := digest.FromString("liar")
	b[liar] = b[chartManifest]
	lying := chartEntry
	lying.Digest = liar
	many := make([]ocispec.Descriptor, 10_000)
	for i := range many {
		many[i] = chartEntry
	}
	many[0] = descEntry

	for _, tc := range []struct {
		name, ref string
		index     digest.Digest
		want      error
		mentions  string
	}{
		{"entry is an index", nested.Digest.String(), mkIndex(descEntry, nested), errdef.ErrUnsupportedMediaType, "image index"},
		{"entry declared an index", nestedDeclared.Digest.String(), mkIndex(descEntry, nestedDeclared), errdef.ErrUnsupportedMediaType, "image index"},
		{"localReference names the descriptor manifest", helmDirManifest.String(), helmDirIndex, errdef.ErrInvalidDescriptor, "descriptor manifest"},
		{"10000 entries", chartManifest.String(), mkIndex(many...), errdef.ErrLimitExceeded, "10000 manifests"},
		{"manifest claims another digest", liar.String(), mkIndex(descEntry, lying), errdef.ErrDigestMismatch, liar.String()},
		{"descriptor entry is an index", chartManifest.String(), mkIndex(nestedDeclared, chartEntry), errdef.ErrInvalidDescriptor, "nested index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := func() error {
				v, err := resolve(t, b, tc.index)
				if err != nil {
					return err
				}
				_, art, err := v.LocalBlob(tc.ref)
				if err != nil {
					return err
				}
				a, err := ocimapping.FetchArtifact(context.Background(), b, *art)
				if err != nil {
					return err
				}
				_, err = a.MainLayer()
				return err
			}()
			t.Log(err)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mentions) || strings.Contains(err.Error(), "\n") || len(err.Error()) > 400 {
				t.Fatalf("got %v, want %v mentioning %q in one short line", err, tc.want, tc.mentions)
			}
		})
	}
}

// A flipped byte in the chart layer fails the artifact blob at its end, as a
// digest mismatch naming the layer.
func TestArtifactReaderVerifiesLayers(t *testing.T) {
	b := v2Blobs(t)
	layer := bytes.Clone(b[chartLayer])
	layer[100] ^= 0x80
	b[chartLayer] = layer
	v, err := resolve(t, b, helmDirIndex)
	if err != nil {
		t.Fatal(err)
	}
	_, art, err := v.LocalBlob(chartManifest.String())
	if err != nil {
		t.Fatal(err)
	}
	a, err := ocimapping.FetchArtifact(context.Background(), b, *art)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := a.Reader(context.Background(), b, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(rc)
	if !errors.Is(err, errdef.ErrDigestMismatch) || !strings.Contains(err.Error(), "layer "+chartLayer.String()) {
		t.Fatalf("got %v", err)
	}
	if _, err := a.Reader(context.Background(), b, 100); !errors.Is(err, errdef.ErrLimitExceeded) {
		t.Fatalf("limit: %v", err)
	}
}

// gated holds back one digest's fetch until another digest's fetch has
// begun: a lookup that fetches the two one after the other fails.
type gated struct {
	blobs
	hold, until digest.Digest
	begun       chan struct{}
	once        sync.Once
	fetched     map[digest.Digest]int
	mu          sync.Mutex
}

func (g *gated) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	g.mu.Lock()
	g.fetched[d.Digest]++
	g.mu.Unlock()
	if d.Digest == g.until {
		g.once.Do(func() { close(g.begun) })
	}
	if d.Digest == g.hold {
		select {
		case <-g.begun:
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("%s was fetched only after %s: one round trip more", g.until, g.hold)
		}
	}
	return g.blobs.Fetch(ctx, d)
}

func newGated(b blobs, hold, until digest.Digest) *gated {
	return &gated{blobs: b, hold: hold, until: until, begun: make(chan struct{}), fetched: map[digest.Digest]int{}}
}

// A cold lookup of a chart in the index waits on as few round trips as it
// can: the chart's manifest is read while the descriptor manifest is, and
// the descriptor layer while the component config is. Each pair is checked
// by holding one fetch back until the other has begun.
func TestLookupRoundTrips(t *testing.T) {
	b := v2Blobs(t)
	ctx := context.Background()
	idx := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: helmDirIndex, Size: int64(len(b[helmDirIndex]))}

	g := newGated(b, helmDirManifest, chartManifest)
	v, err := ocimapping.ResolveVersion(ctx, g, idx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Artifact(ctx, g, v.Artifacts[0]); err != nil {
		t.Fatal(err)
	}
	if n := g.fetched[chartManifest]; n != 1 {
		t.Errorf("the chart manifest was fetched %d times, want once (read ahead, then used)", n)
	}

	var m ocispec.Manifest
	if err := json.Unmarshal(b[helmDirManifest], &m); err != nil {
		t.Fatal(err)
	}
	g = newGated(b, m.Config.Digest, m.Layers[0].Digest)
	d, err := ocimapping.ReadDescriptor(ctx, g, &m)
	if err != nil || d.Name != "ocm.example/fixtures/helm-dir" {
		t.Fatalf("descriptor %v: %v", d, err)
	}
	if n := g.fetched[m.Layers[0].Digest]; n != 1 {
		t.Errorf("the descriptor layer was fetched %d times, want once", n)
	}
}

// counting is a store that counts the fetches of each digest.
type counting struct {
	blobs
	mu sync.Mutex
	n  map[digest.Digest]int
}

func (c *counting) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	c.mu.Lock()
	c.n[d.Digest]++
	c.mu.Unlock()
	return c.blobs.Fetch(ctx, d)
}

func (c *counting) fetched(d digest.Digest) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[d]
}

// Speculate reads the chart layer of an artifact in the index ahead, once;
// Speculated hands out those bytes only verified, so that the caller reads
// again (and fails) when the registry served other bytes.
func TestSpeculate(t *testing.T) {
	ctx := context.Background()
	idx := func(b blobs) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: helmDirIndex, Size: int64(len(b[helmDirIndex]))}
	}
	open := func(t *testing.T, c *counting) ([]byte, error) {
		t.Helper()
		v, err := ocimapping.ResolveVersion(ctx, c, idx(c.blobs))
		if err != nil {
			t.Fatal(err)
		}
		wait := v.Speculate(ctx, c)
		a, err := v.Artifact(ctx, c, v.Artifacts[0])
		if err != nil {
			t.Fatal(err)
		}
		l, err := a.MainLayer()
		if err != nil {
			t.Fatal(err)
		}
		defer wait()
		if raw, ok := v.Speculated(ctx, l); ok {
			return raw, nil
		}
		rc, err := a.OpenLayer(ctx, c, l, 1<<20)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}

	c := &counting{blobs: v2Blobs(t), n: map[digest.Digest]int{}}
	got, err := open(t, c)
	if err != nil || digest.FromBytes(got) != chartLayer {
		t.Fatalf("chart layer %s: %v", digest.FromBytes(got), err)
	}
	if n := c.fetched(chartLayer); n != 1 {
		t.Errorf("the chart layer was fetched %d times, want once (read ahead, then used)", n)
	}

	// Other bytes of the same size under the chart layer's digest.
	c = &counting{blobs: v2Blobs(t), n: map[digest.Digest]int{}}
	bad := bytes.Clone(c.blobs[chartLayer])
	bad[len(bad)/2] ^= 0xff
	c.blobs[chartLayer] = bad
	got, err = open(t, c)
	if !errors.Is(err, errdef.ErrDigestMismatch) { // (a streamed layer fails at its end)
		t.Fatalf("tampered chart layer: %d bytes, error %v; want a digest mismatch", len(got), err)
	}
	if n := c.fetched(chartLayer); n != 2 {
		t.Errorf("the tampered chart layer was fetched %d times, want twice (read ahead, refused, read again)", n)
	}
}

// Speculate is bounded: an index of many charts, and of large ones, costs
// at most maxSpeculativeLayers reads of at most maxSpeculativeBytes.
func TestSpeculateBounded(t *testing.T) {
	ctx := context.Background()
	b := v2Blobs(t)
	var idx ocispec.Index
	if err := json.Unmarshal(b[helmDirIndex], &idx); err != nil {
		t.Fatal(err)
	}
	var layers []digest.Digest
	ms := []ocispec.Descriptor{idx.Manifests[0]}
	chart := func(size int64, content []byte) {
		l := ocispec.Descriptor{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Digest: digest.FromBytes(content), Size: size}
		if size == int64(len(content)) {
			l = b.add(content)
			l.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
		}
		cfg := b.add([]byte("{}"))
		cfg.MediaType = "application/vnd.cncf.helm.config.v1+json"
		raw, _ := json.Marshal(ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: []ocispec.Descriptor{l}})
		m := b.add(raw)
		m.MediaType = ocispec.MediaTypeImageManifest
		ms = append(ms, m)
		layers = append(layers, l.Digest)
	}
	chart(5<<20, []byte("a chart larger than the bound")) // declared 5 MiB: not read ahead
	for i := 0; i < 5; i++ {
		chart(int64(len(fmt.Sprint("chart ", i))), []byte(fmt.Sprint("chart ", i)))
	}
	raw, _ := json.Marshal(ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: ms})
	d := b.add(raw)
	d.MediaType = ocispec.MediaTypeImageIndex
	c := &counting{blobs: b, n: map[digest.Digest]int{}}
	v, err := ocimapping.ResolveVersion(ctx, c, d)
	if err != nil {
		t.Fatal(err)
	}
	v.Speculate(ctx, c)()
	read := 0
	for _, l := range layers {
		read += c.fetched(l)
	}
	if c.fetched(layers[0]) != 0 || read != 2 {
		t.Errorf("read ahead: the large layer %d times, %d layers in all; want 0 and 2", c.fetched(layers[0]), read)
	}
}

// asideLiar answers every read ahead with other bytes of the right size.
type asideLiar struct{ blobs }

func (a asideLiar) FetchAside(_ context.Context, d ocispec.Descriptor, _ int64) ([]byte, error) {
	return bytes.Repeat([]byte{'x'}, int(d.Size)), nil
}

// Speculate checks what an AsideFetcher returns against the layer's digest
// too: a read ahead that is not the layer is never handed out.
func TestSpeculateChecksAsideFetcher(t *testing.T) {
	ctx := context.Background()
	f := asideLiar{v2Blobs(t)}
	v, err := ocimapping.ResolveVersion(ctx, f, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: helmDirIndex, Size: int64(len(f.blobs[helmDirIndex]))})
	if err != nil {
		t.Fatal(err)
	}
	v.Speculate(ctx, f)()
	a, err := v.Artifact(ctx, f, v.Artifacts[0])
	if err != nil {
		t.Fatal(err)
	}
	l, err := a.MainLayer()
	if err != nil {
		t.Fatal(err)
	}
	if raw, ok := v.Speculated(ctx, l); ok {
		t.Fatalf("a read ahead of other bytes (%d) was handed out", len(raw))
	}
}
