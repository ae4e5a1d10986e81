package helm

import (
	"context"
	"crypto/sha256"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// InstallClientOnly is installClientOnly with RenderChart's defaults: the
// release manifest and hooks of c.
func InstallClientOnly(c *chart.Chart, vals map[string]any, opts Options) (string, []*release.Hook, error) {
	if opts.ReleaseName == "" {
		opts.ReleaseName = "release-name"
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.KubeVersion == "" {
		opts.KubeVersion = DefaultKubeVersion()
	}
	kv, err := common.ParseKubeVersion(opts.KubeVersion)
	if err != nil {
		return "", nil, err
	}
	r, err := installClientOnly(context.Background(), c, vals, opts, kv)
	if err != nil {
		return "", nil, err
	}
	return r.manifest, r.hooks, nil
}

// CountSorts counts the calls of Helm's manifest sorting until restore.
func CountSorts() (calls func() int, restore func()) {
	n := 0
	sortManifests = func(files map[string]string, v common.VersionSet, o releaseutil.KindSortOrder) ([]*release.Hook, []releaseutil.Manifest, error) {
		n++
		return releaseutil.SortManifests(files, v, o)
	}
	return func() int { return n }, func() { sortManifests = releaseutil.SortManifests }
}

// SplitCount is splitCount.
var SplitCount = splitCount

// SplitDocs is splitDocs.
var SplitDocs = splitDocs

// CacheSize is what cc counts its entries at.
func (cc *ChartCache) CacheSize() int64 {
	return cc.kept.Size()
}

// KeptTemplates is the number of template files cc keeps parsed for the
// chart of archive (-1: the chart is not kept).
func (cc *ChartCache) KeptTemplates(archive []byte) int {
	e, ok := cc.kept.Peek(sha256.Sum256(archive))
	if !ok {
		return -1
	}
	return e.templates.Len()
}

// HeldSize is what the entries cc keeps hold now (each at entryCost of its
// unpacked size, its parsed templates and the values it remembers as
// valid): what CacheSize must count.
func (cc *ChartCache) HeldSize() int64 {
	var n int64
	for _, e := range cc.kept.Values() {
		n += entryCost(e.unpacked + e.templates.Size() + e.valid.size())
	}
	return n
}

// entryCost is what an entry of size bytes counts against a cache's bound.
func entryCost(size int64) int64 { return max(size, minEntryCost) }
