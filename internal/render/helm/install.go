package helm

import (
	"fmt"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
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
// ClientOnly, DryRun ("client"), Replace and without IncludeCRDs (Helm
// v3.22.0: install.go RunWithContext and action.go renderResources, in the
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
func installClientOnly(c *chart.Chart, vals map[string]any, opts Options, kv *chartutil.KubeVersion) (*rendered, error) {
	if err := chartutil.ProcessDependenciesWithMerge(c, vals); err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	caps.APIVersions = append(caps.APIVersions, chartutil.VersionSet(opts.APIVersions)...)
	valuesToRender, err := chartutil.ToRenderValuesWithSchemaValidation(c, vals, chartutil.ReleaseOptions{
		Name: opts.ReleaseName, Namespace: opts.Namespace, Revision: 1, IsInstall: true,
	}, caps, opts.SkipSchemaValidation)
	if err != nil {
		return nil, err
	}

	// renderResources
	if c.Metadata.KubeVersion != "" {
		if !chartutil.IsCompatibleRange(c.Metadata.KubeVersion, caps.KubeVersion.String()) {
			return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c.Metadata.KubeVersion, caps.KubeVersion.String())
		}
	}
	var e engine.Engine
	files, err := e.Render(c, valuesToRender)
	if err != nil {
		return nil, err
	}
	for k := range files {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(files, k) // the release notes: not printed by helm template
		}
	}
	if countDocuments(files) > manifests.MaxObjects {
		return nil, tooManyObjectsError{fmt.Errorf("chart %s: more than %d objects: %w: %w", c.Name(), manifests.MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded)}
	}
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
// expression (?:^|\s*\n)---\s* and its map, which took 0.3 s for a file of
// 100 000 documents. Every match of the expression holds one "---", which
// starts the text or follows a newline that is not in the previous match
// (that match's \s* takes the whitespace after its "---"); the leftmost
// match for that "---" starts at the whitespace before the newline, and
// ends after the whitespace after it. The documents are the non-empty
// texts between matches. TestSplitCount compares both.
func splitCount(file string) int {
	s := strings.TrimSpace(file)
	n, beg := 0, 0 // beg: the end of the last match
	for pos := 0; ; {
		i := strings.Index(s[pos:], "---")
		if i < 0 {
			break
		}
		r := pos + i
		if !(r == 0 || (r-1 >= pos && s[r-1] == '\n')) {
			pos = r + 1
			continue
		}
		start := r
		if r > 0 {
			start = r - 1
			for start > pos && isRESpace(s[start-1]) {
				start--
			}
		}
		end := r + 3
		for end < len(s) && isRESpace(s[end]) {
			end++
		}
		if start > beg {
			n++
		}
		beg, pos = end, end
	}
	if beg < len(s) {
		n++
	}
	return n
}

// isRESpace is \s of Go's regular expressions.
func isRESpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}
