package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm/engine"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// Options of a render. The zero value renders like `helm template` with
// release name "release-name" in namespace "default".
type Options struct {
	ReleaseName string // default "release-name", as helm template
	Namespace   string // default "default"
	// KubeVersion of the target cluster ("1.31.0", "v1.31.0+k3s1"); default
	// DefaultKubeVersion (the linked Kubernetes libraries', as a helm release).
	KubeVersion string
	// APIVersions available in the target cluster, added to Helm's defaults
	// ("group/version" or "group/version/Kind").
	APIVersions []string
	// Values are the user values (already layered), merged over the chart's.
	Values map[string]any
	// SkipCRDs leaves out the chart's crds/ directory (included by default, as Argo CD does).
	SkipCRDs bool
	// SkipHooks leaves out hook manifests (rendered by default).
	SkipHooks bool
	// SkipTests leaves out helm test hooks.
	SkipTests bool
	// SkipSchemaValidation skips values.schema.json validation.
	SkipSchemaValidation bool
	// CRDs, when set, keeps the decoded crds/ files of charts between
	// renders (the render server's); nil decodes them every time.
	CRDs *CRDCache
	// Charts, when set, keeps loaded charts between renders of Render
	// (the render server's); nil loads the archive every time.
	Charts *ChartCache
}

// LoadArchive loads a chart archive (tgz) with Helm's loader, which checks its
// own size limits and refuses paths outside the chart.
//
// Before Helm parses anything, subchart archives (charts/*.tgz, nested) are
// unpacked here too so that all of them together stay within Helm's limit for
// one chart (archive.MaxDecompressedChartSize; Helm applies it to each archive
// alone, so a chart of small subchart archives that each unpack to the limit
// would cost that much memory per subchart), and the files Helm decodes as
// YAML (Chart.yaml, values.yaml, …) are bounded in structure like manifests
// (manifests.MaxDocumentNodes). Both give errors wrapping
// errdef.ErrLimitExceeded.
//
// The archive is unpacked once: Helm loads the files the check unpacked
// (loader.LoadArchive is LoadArchiveFiles followed by LoadFiles).
func LoadArchive(data []byte) (*chart.Chart, error) {
	c, _, err := loadArchive(data)
	return c, err
}

// isSubchartArchive reports whether Helm's loader unpacks the chart file
// name as a subchart archive: charts/<x>.tgz, also inside subchart
// directories (charts/<dir>/charts/<x>.tgz), unless <x> starts with "_" or ".".
func isSubchartArchive(name string) bool {
	seg := strings.Split(name, "/")
	for i := 0; i+1 < len(seg) && seg[i] == "charts"; i += 2 {
		if strings.IndexAny(seg[i+1], "_.") == 0 {
			return false
		}
		if i+2 == len(seg) {
			return path.Ext(seg[i+1]) == ".tgz"
		}
	}
	return false
}

// parsedFiles are the chart files Helm's loader decodes as YAML or JSON.
var parsedFiles = map[string]bool{
	"Chart.yaml": true, "values.yaml": true, "Chart.lock": true,
	"requirements.yaml": true, "requirements.lock": true, "values.schema.json": true,
}

// checkArchive unpacks a chart archive with Helm's own reader and checks it
// and its subchart archives against a shared budget of unpacked bytes.
func checkArchive(data []byte, where string, depth int, budget *int64) ([]*archive.BufferedFile, error) {
	if depth > maxChartDepth {
		return nil, fmt.Errorf("%s: subchart archives nested more than %d levels: %w", where, maxChartDepth, errdef.ErrLimitExceeded)
	}
	files, err := archive.LoadArchiveFiles(bytes.NewReader(data))
	if err != nil {
		if where == "" {
			return nil, fmt.Errorf("%v", err) // Helm's own message, as loader.LoadArchive gives it
		}
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	for _, f := range files {
		name := path.Join(where, f.Name)
		if *budget -= int64(len(f.Data)); *budget < 0 {
			return nil, fmt.Errorf("%s: the chart and its subchart archives unpack to more than %d bytes in all: %w", name, archive.MaxDecompressedChartSize, errdef.ErrLimitExceeded)
		}
		if parsedFiles[path.Base(f.Name)] {
			if n := yamlfile.StructureCount(f.Data); n > manifests.MaxDocumentNodes {
				return nil, fmt.Errorf("%s has %d structural characters (',' '[' '{' '-' ':' '?' newline), more than the limit of %d: %w", name, n, manifests.MaxDocumentNodes, errdef.ErrLimitExceeded)
			}
		}
		if isSubchartArchive(f.Name) {
			if _, err := checkArchive(f.Data, name, depth+1, budget); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// Render renders a chart archive, loaded by opts.Charts.
func Render(ctx context.Context, chartArchive []byte, opts Options) ([]manifests.Object, error) {
	c, kept, err := opts.Charts.load(chartArchive)
	if err != nil {
		return nil, err
	}
	defer opts.Charts.account(kept)
	return renderChart(ctx, c, opts, kept)
}

// RenderChart renders a loaded chart (and changes it, as Helm does).
func RenderChart(ctx context.Context, c *chart.Chart, opts Options) ([]manifests.Object, error) {
	return renderChart(ctx, c, opts, nil)
}

// renderChart is RenderChart; kept, when set, is the ChartCache entry c is
// a copy of: it holds the schemas of c compiled when they passed
// checkSchemas in an earlier render, or gets them when they pass, and what
// renders learnt about the crds/ files of c (crdPrints).
func renderChart(ctx context.Context, c *chart.Chart, opts Options, kept *chartEntry) ([]manifests.Object, error) {
	if opts.ReleaseName == "" {
		opts.ReleaseName = "release-name"
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if err := chartutil.ValidateReleaseName(opts.ReleaseName); err != nil {
		return nil, fmt.Errorf("%w: release name %s: %v", errdef.ErrInvalidInput, errdef.Quote(opts.ReleaseName), err)
	}
	if opts.KubeVersion == "" {
		opts.KubeVersion = DefaultKubeVersion()
	}
	kv, err := common.ParseKubeVersion(opts.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: kube version %s: %v", errdef.ErrInvalidInput, errdef.Quote(opts.KubeVersion), err)
	}
	if t := c.Metadata.Type; t != "" && t != "application" {
		// As helm template refuses it (checkIfInstallable): a library
		// chart's templates render nothing.
		return nil, fmt.Errorf("%w: helm chart %s: %s charts are not installable", errdef.ErrRender, c.Name(), t)
	}
	if err := checkDependencies(c); err != nil {
		return nil, err
	}
	var schemas compiledSchemas
	if kept != nil {
		if p := kept.schemas.Load(); p != nil {
			schemas = *p
		}
	}
	if !opts.SkipSchemaValidation && schemas == nil {
		if schemas, err = checkSchemas(c); err != nil {
			return nil, fmt.Errorf("%w: helm chart %s-%s: %w", errdef.ErrRender, c.Name(), c.Metadata.Version, err)
		}
		if kept != nil {
			kept.schemas.Store(&schemas)
		}
	}
	vals := opts.Values
	if vals == nil {
		vals = map[string]any{}
	}
	var pre *predecoded
	if !opts.SkipCRDs {
		var known *atomic.Pointer[crdPrints]
		if kept != nil {
			known = &kept.crds
		}
		pre = predecodeCRDs(c, opts.CRDs, known)
		defer pre.wait() // the background decoding never outlives the render
	}
	// The CRDs are printed before the manifests as helm template
	// --include-crds prints them, but from the chart (see releaseObjects):
	// Helm would only copy their text into the release manifest, which the
	// plugin would then decode again.
	var templates *engine.Templates
	var valid *validValues
	if kept != nil {
		templates, valid = kept.templates, &kept.valid
	}
	files, err := renderTemplates(ctx, c, vals, opts, kv, schemas, templates, valid)
	if tooMany := (tooManyObjectsError{}); errors.As(err, &tooMany) {
		return nil, fmt.Errorf("%w: helm chart %s: %w", errdef.ErrRender, c.Name(), err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: helm chart %s-%s: %w", errdef.ErrRender, c.Name(), c.Metadata.Version, err)
	}
	return renderedObjects(c, files, opts, pre)
}

// renderedObjects are the objects of the rendered files of c: the CRDs,
// the release manifest and the hooks (unless opts leaves them out), in
// Helm's order, decoded once and sorted by the plugin (sortedRelease), or
// else sorted by Helm and decoded from its release manifest.
func renderedObjects(c *chart.Chart, files map[string]string, opts Options, pre *predecoded) ([]manifests.Object, error) {
	name := "chart " + c.Name()
	var hook manifests.DocumentHook
	if opts.CRDs != nil {
		hook = opts.CRDs.document
	}
	crds := chartCRDs(c, opts.SkipCRDs, pre)
	if sorted, ok := sortedRelease(name, files, crds.nodes, hook); ok {
		objs, err := crds.decode(name, opts.CRDs, pre.wait())
		if err != nil {
			return nil, fmt.Errorf("%w: helm chart %s: %w", errdef.ErrRender, c.Name(), err)
		}
		for _, d := range sorted.generic {
			objs = append(objs, d.objs...)
		}
		if len(objs) > manifests.MaxObjects {
			err := fmt.Errorf("%s: more than %d objects: %w: %w", name, manifests.MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)
			return nil, fmt.Errorf("%w: helm chart %s: %w", errdef.ErrRender, c.Name(), err) // as releaseObjects'
		}
		if !opts.SkipHooks {
			for _, h := range sorted.hooks {
				if !(opts.SkipTests && isTestHook(h.hook)) {
					objs = append(objs, h.objs...)
				}
			}
		}
		return objs, nil
	}
	rel, err := sortRelease(files)
	if err != nil {
		return nil, fmt.Errorf("%w: helm chart %s-%s: %w", errdef.ErrRender, c.Name(), c.Metadata.Version, err)
	}
	objs, err := releaseObjects(c, rel.manifest, opts.SkipCRDs, opts.CRDs, pre)
	if err != nil {
		return nil, fmt.Errorf("%w: helm chart %s: %w", errdef.ErrRender, c.Name(), err)
	}
	if !opts.SkipHooks {
		for _, h := range rel.hooks {
			if opts.SkipTests && isTestHook(h) {
				continue
			}
			hs, err := manifests.Decode(h.Path, []byte(h.Manifest))
			if err != nil {
				return nil, fmt.Errorf("%w: helm chart %s: %w", errdef.ErrRender, c.Name(), err)
			}
			objs = append(objs, hs...)
		}
	}
	return objs, nil
}

func isTestHook(h *release.Hook) bool {
	for _, e := range h.Events {
		if e == release.HookTest {
			return true
		}
	}
	return false
}

// checkDependencies refuses a chart whose declared dependencies are not packaged
// inside it: there is no network at render time to fetch them.
func checkDependencies(c *chart.Chart) error {
	if c.Metadata == nil || len(c.Metadata.Dependencies) == 0 {
		return nil
	}
	if err := missingDependencies(c, c.Metadata.Dependencies); err != nil {
		return fmt.Errorf("%w: helm chart %s: dependencies are not packaged in the chart (run `helm dependency build` before adding it to the component): %s",
			errdef.ErrRender, c.Name(), strings.TrimSpace(err.Error()))
	}
	return nil
}
