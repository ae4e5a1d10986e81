package helm

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"path"
	"slices"
	"sync/atomic"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm/engine"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/lru"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
)

// Loading a chart archive (gunzip, untar, the checks of LoadArchive, YAML
// of Chart.yaml and values.yaml, subchart archives again) and checking its
// schemas is a tenth of a render of kube-prometheus-stack, the same every
// time for the same archive: a ChartCache loads each once.

// DefaultChartCacheSize is what a ChartCache holds by default, counted as
// the charts' unpacked content and their parsed templates: a few large
// charts (kube-prometheus-stack's archive unpacks to 6.5 MiB, 4 of them
// CRDs, and its 1.6 MiB of templates parse to about 13 MiB; a loaded chart
// holds about 1.4 times its unpacked size), within a render worker's memory.
const DefaultChartCacheSize = 64 << 20

// minEntryCost is what a ChartCache or a CRDCache counts an entry at
// least: what a small entry holds is mostly Go's structures, not its bytes
// (a chart of 41 unpacked bytes held 1.3 KiB of heap), and without a floor
// one tenant's tiny charts or CRDs (hundreds of thousands within the bound)
// would grow a worker's heap far past the bound, for the generations of
// every tenant after it, and make each hit scan them all (touch).
const minEntryCost = 4 << 10

// ChartCache keeps loaded charts, by the SHA-256 of their archive, for as
// long as it lives (the render server's lifetime), within a bound on the
// bytes their archives unpack to and their parsed templates hold (each
// entry counted at least minEntryCost); the least recently used go first.
// Only archives that load are kept, with their schemas once they passed
// checkSchemas, compiled, and their templates once a render parsed them
// (engine.Templates: a template's parse is used only for the very text it
// was parsed from).
//
// Helm changes the chart it renders (processing dependencies removes the
// disabled subcharts and rewrites Metadata.Dependencies; import-values
// replace Values), and templates see parts of it (.Chart is a copy of the
// Metadata struct whose slices are the chart's; sortAlpha sorts a []string
// in place): every render gets its own copy of every Chart, Metadata,
// Dependency and Maintainer, of every slice and map of them, and of the
// values (see copyChart). What they share is only what neither Helm nor a
// template changes: the files' bytes, the Lock, the schema's bytes. A nil
// *ChartCache loads every time. It is safe for concurrent use.
type ChartCache struct {
	kept *lru.Cache[[32]byte, *chartEntry]
}

type chartEntry struct {
	chart *chart.Chart // never rendered: renders get copies
	// templates are the chart's templates (its subcharts' too) as renders
	// parsed them, executed by later renders instead of parsing them again
	// (engine.Templates: by name and exact text). The entry is counted at
	// its archive's unpacked size and what templates holds (see account).
	templates *engine.Templates
	key       [32]byte
	unpacked  int64
	// schemas are set once checkSchemas passed for the chart: its schemas,
	// compiled.
	schemas atomic.Pointer[compiledSchemas]
	// crds is what renders learnt about the chart's crds/ files.
	crds atomic.Pointer[crdPrints]
	// valid are values that passed the chart's schemas.
	valid validValues
}

// NewChartCache returns a cache of at most maxBytes of unpacked charts
// (<= 0: DefaultChartCacheSize).
func NewChartCache(maxBytes int64) *ChartCache {
	if maxBytes <= 0 {
		maxBytes = DefaultChartCacheSize
	}
	return &ChartCache{lru.New[[32]byte, *chartEntry](maxBytes, minEntryCost)}
}

// load returns a copy of the chart of archive and the entry it is kept in
// (nil if it is not kept), loading it on a miss.
func (cc *ChartCache) load(archive []byte) (*chart.Chart, *chartEntry, error) {
	if cc == nil {
		c, err := LoadArchive(archive)
		return c, nil, err
	}
	key := sha256.Sum256(archive)
	if e, ok := cc.kept.Get(key); ok {
		return copyChart(e.chart, nil), e, nil
	}
	c, size, err := loadArchive(archive)
	if err != nil {
		return nil, nil, err
	}
	if size > cc.kept.Max() {
		return c, nil, nil
	}
	e := &chartEntry{chart: copyChart(c, nil), templates: engine.NewTemplates(cc.kept.Max() - size), key: key, unpacked: size}
	return c, cc.kept.Put(key, e, size), nil
}

// account counts e at what its templates hold now (a render parsed
// templates) and the values it remembers as valid: the cache's bound
// covers the parse trees it keeps (10-16 times the template text of real
// charts). The size is read under the cache's lock, so that the last count
// is of the latest size whatever order concurrent renders end in, and only
// while e is the entry kept under its key: a render that ends after its
// entry was dropped and the chart loaded again must not count the new
// entry at the old one's size.
func (cc *ChartCache) account(e *chartEntry) {
	if cc == nil || e == nil {
		return
	}
	cc.kept.Resize(e.key, func(kept *chartEntry) (int64, bool) {
		return e.unpacked + e.templates.Size() + e.valid.size(), kept == e
	})
}

// loadArchive is LoadArchive, and the bytes the archive and its subchart
// archives unpack to.
func loadArchive(data []byte) (*chart.Chart, int64, error) {
	budget := archive.MaxDecompressedChartSize
	files, err := checkArchive(data, "", 0, &budget)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: loading chart: %w", errdef.ErrRender, err)
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: loading chart: %v", errdef.ErrRender, err)
	}
	if err := checkNesting(c, ""); err != nil {
		return nil, 0, fmt.Errorf("%w: loading chart: %w", errdef.ErrRender, err)
	}
	return c, archive.MaxDecompressedChartSize - budget, nil
}

// checkNesting refuses a chart (or subchart) whose values.yaml or
// values.schema.json nests deeper than the nesting bound of every document.
func checkNesting(c *chart.Chart, where string) error {
	where = path.Join(where, c.Name())
	if err := nesting.Check(c.Values); err != nil {
		return fmt.Errorf("%s/values.yaml: %w", where, err)
	}
	if err := nesting.CheckText(c.Schema); err != nil {
		return fmt.Errorf("%s/values.schema.json: %w", where, err)
	}
	for _, d := range c.Dependencies() {
		if err := checkNesting(d, path.Join(where, "charts")); err != nil {
			return err
		}
	}
	return nil
}

// copyChart copies c and its subcharts (parent: the copy's parent) so that
// nothing a render of the copy changes reaches c (see ChartCache).
func copyChart(c *chart.Chart, parent *chart.Chart) *chart.Chart {
	out := &chart.Chart{
		Raw:           slices.Clone(c.Raw),
		Metadata:      copyMetadata(c.Metadata),
		Lock:          c.Lock,
		Templates:     slices.Clone(c.Templates),
		Schema:        c.Schema,
		SchemaModTime: c.SchemaModTime,
		Files:         slices.Clone(c.Files),
		ModTime:       c.ModTime,
	}
	if c.Values != nil {
		out.Values = cloneValue(c.Values).(map[string]any)
	}
	if parent != nil {
		parent.AddDependency(out)
	}
	for _, d := range c.Dependencies() {
		copyChart(d, out)
	}
	return out
}

func copyMetadata(md *chart.Metadata) *chart.Metadata {
	if md == nil {
		return nil
	}
	out := *md
	out.Sources = slices.Clone(md.Sources)
	out.Keywords = slices.Clone(md.Keywords)
	out.Annotations = maps.Clone(md.Annotations)
	if md.Maintainers != nil {
		out.Maintainers = make([]*chart.Maintainer, len(md.Maintainers))
		for i, m := range md.Maintainers {
			if m != nil {
				c := *m
				out.Maintainers[i] = &c
			}
		}
	}
	if md.Dependencies != nil {
		out.Dependencies = make([]*chart.Dependency, len(md.Dependencies))
		for i, d := range md.Dependencies {
			if d != nil {
				c := *d
				c.Tags = slices.Clone(d.Tags)
				if d.ImportValues != nil {
					c.ImportValues = cloneValue(d.ImportValues).([]any)
				}
				out.Dependencies[i] = &c
			}
		}
	}
	return &out
}
