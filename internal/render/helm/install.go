package helm

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm/engine"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// rendered is what action.Install gives `helm template` without
// --include-crds: the hooks and the manifest text of a release.
type rendered struct {
	hooks    []*release.Hook
	manifest string
}

// sortManifests is releaseutil.SortManifests; tests count its calls.
var sortManifests = releaseutil.SortManifests

// installClientOnly renders c as action.Install.RunWithContext does with
// DryRunStrategy "client", Replace and without IncludeCRDs (Helm
// v4.3.2: install.go RunWithContext and action.go renderResources, in the
// same order, with the same calls and errors), so that the object limit
// can act between Helm's template engine and its manifest sorting, which
// Install runs back to back: for a chart of 100 000 tiny objects the
// engine takes 0.14 s and SortManifests, which YAML-parses every document,
// 4.7 s. The parts of Install that have no effect in this mode (release
// storage, the printing kube client's empty Build, NOTES.txt) are left out;
// TestInstallClientOnlyIsHelmInstall compares both on real charts.
//
// More than manifests.MaxObjects documents out of the engine (hooks
// included) are refused before sorting, with the error releaseObjects
// gives for more than MaxObjects objects.
func installClientOnly(ctx context.Context, c *chart.Chart, vals map[string]any, opts Options, kv *common.KubeVersion) (*rendered, error) {
	var schemas compiledSchemas
	if !opts.SkipSchemaValidation {
		schemas, _ = checkSchemas(c) // nil on an error: Helm's validation
	}
	files, err := renderTemplates(ctx, c, vals, opts, kv, schemas, nil, nil)
	if err != nil {
		return nil, err
	}
	return sortRelease(files)
}

// sortRelease is the end of installClientOnly: Helm's sort of the rendered
// files into hooks and the release manifest.
func sortRelease(files map[string]string) (*rendered, error) {
	hooks, sorted, err := sortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, m := range sorted {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return &rendered{hooks: hooks, manifest: b.String()}, nil
}

// renderTemplates is installClientOnly up to Helm's sort: the rendered
// files, NOTES.txt left out, or the refusal of too many documents. The
// values are validated with schemas, compiled by checkSchemas (see
// validateValues), or nil: by Helm, which compiles the schemas again.
// Templates executes from the parse trees it keeps (the ChartCache entry's),
// or, nil, parses every template as Helm's engine does.
//
// ctx is the generation's: Helm's engine hands it to its template functions
// (lookup) but does not stop a template that runs on, so the steps before
// and after the engine give up once ctx is done (a process past its deadline
// is ended by its watchdog).
func renderTemplates(ctx context.Context, c *chart.Chart, vals map[string]any, opts Options, kv *common.KubeVersion, schemas compiledSchemas, templates *engine.Templates, valid *validValues) (map[string]string, error) {
	validate := !opts.SkipSchemaValidation && schemas != nil
	var validKey [32]byte
	keyed := false
	if validate {
		validKey, keyed = valid.key(vals) // before ProcessDependencies reads them
		validate = !(keyed && valid.has(validKey))
	}
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		return nil, err
	}
	caps := capabilities().Copy()
	caps.KubeVersion = *kv
	// Copy() shares the defaults' slice: appending to it must never
	// write into its spare capacity, which every render shares.
	caps.APIVersions = append(slices.Clip(caps.APIVersions), common.VersionSet(opts.APIVersions)...)
	valuesToRender, err := commonutil.ToRenderValuesWithSchemaValidation(c, vals, common.ReleaseOptions{
		Name: opts.ReleaseName, Namespace: opts.Namespace, Revision: 1, IsInstall: true,
	}, caps, opts.SkipSchemaValidation || schemas != nil)
	if err != nil {
		return nil, err
	}
	if validate {
		values, _ := valuesToRender["Values"].(common.Values)
		if err := validateValues(c, values, schemas); err != nil {
			// As commonutil.ToRenderValuesWithSchemaValidation words it.
			return nil, fmt.Errorf("values don't meet the specifications of the schema(s) in the following chart(s):\n%s", err.Error())
		}
		if keyed {
			valid.add(validKey)
		}
	}

	// renderResources
	if c.Metadata.KubeVersion != "" {
		if !chartutil.IsCompatibleRange(c.Metadata.KubeVersion, caps.KubeVersion.String()) {
			return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c.Metadata.KubeVersion, caps.KubeVersion.Version)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e := engine.Engine{Templates: templates}
	files, err := e.RenderWithContext(ctx, c, valuesToRender)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // nothing is decoded or sorted past it
	}
	for k := range files {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(files, k) // the release notes: not printed by helm template
		}
	}
	if countDocuments(files) > manifests.MaxObjects {
		return nil, tooManyObjectsError{fmt.Errorf("chart %s: more than %d objects: %w: %w", c.Name(), manifests.MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)}
	}
	return files, nil
}

// tooManyObjectsError is the refusal of more than MaxObjects documents:
// RenderChart reports it as it reports releaseObjects' errors.
type tooManyObjectsError struct{ error }

func (e tooManyObjectsError) Unwrap() error { return e.error }

// countDocuments counts the documents SortManifests sorts in files (each a
// hook or a manifest, and each at least one document of the release
// manifest), without parsing them.
func countDocuments(files map[string]string) int {
	n := 0
	for name, content := range files {
		if strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(content) == "" {
			continue // partials and empty files: skipped by SortManifests
		}
		n += splitCount(content)
	}
	return n
}

// splitCount is len(releaseutil.SplitManifests(file)) without its regular
// expression (?m)^---[ \t]* and its map, which took 0.3 s for a file of
// 100 000 documents (see eachSplit). TestSplitCount compares both.
func splitCount(file string) int {
	n := 0
	eachSplit(file, func(string) { n++ })
	return n
}
