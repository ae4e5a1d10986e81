package helm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/heldout"
)

// envHeldOutHelm names the helm v4 CLI TestHeldOutCharts compares with
// (make test-heldout sets it to make reftools' build).
const envHeldOutHelm = "HELDOUT_HELM"

// TestHeldOutCharts renders upstream charts the renderer was never tuned
// on (testdata/heldout/cases.txt: cilium, istio, kyverno, gatekeeper,
// metallb, loki, external-secrets, aws-load-balancer-controller) with the
// plugin's Helm engine and with the helm v4 CLI, and compares the objects
// and their order. Values that differ between two runs of the CLI itself
// (generated certificates, random passwords) are compared by presence only.
func TestHeldOutCharts(t *testing.T) {
	helmBin := os.Getenv(envHeldOutHelm)
	if helmBin == "" {
		t.Skip(envHeldOutHelm + " is unset: make test-heldout builds the helm v4 CLI (make reftools) and runs this comparison with it")
	}
	cases := heldout.Read(t)
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "charts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(heldout.Dir(), "values"), filepath.Join(work, "values")); err != nil {
		t.Fatal(err)
	}
	modules := heldout.Modules{}
	for label, src := range cases.Charts {
		packageChart(t, modules.Path(t, src), filepath.Join(work, "charts", label+".tgz"))
	}
	for _, c := range cases.Helm {
		t.Run(c.Name, func(t *testing.T) {
			first := helmTemplate(t, helmBin, work, c.Args)
			second := helmTemplate(t, helmBin, work, c.Args)
			if len(first) != len(second) {
				t.Fatalf("two runs of helm template gave %d and %d objects", len(first), len(second))
			}
			chart, opts := heldOutOptions(t, work, c.Args)
			got, err := helm.Render(context.Background(), chart, opts)
			if err != nil {
				t.Fatal(err)
			}
			masked := 0
			for i := range first {
				if manifests.Key(first[i]) != manifests.Key(second[i]) {
					t.Fatalf("two runs of helm template name object %d %s and %s", i, manifests.Key(first[i]), manifests.Key(second[i]))
				}
				random := randomPaths(first[i], second[i], "")
				if len(random) == 0 {
					continue
				}
				masked += len(random)
				maskPaths(first[i], random, "")
				for _, o := range got {
					if manifests.Key(o) == manifests.Key(first[i]) {
						maskPaths(o, random, "")
					}
				}
			}
			if masked > 0 {
				t.Logf("%d values differ between two runs of helm template: compared by presence", masked)
			}
			manifeststest.Equal(t, got, first)
			if len(got) == len(first) {
				for i := range got {
					if gk, wk := manifests.Key(got[i]), manifests.Key(first[i]); gk != wk {
						t.Errorf("object %d is %s, helm template's is %s", i, gk, wk)
						break
					}
				}
			}
		})
	}
}

// packageChart writes the chart in dir to the chart archive dest, without
// the dependencies dir does not vendor (helm package refuses those).
func packageChart(t *testing.T, dir, dest string) {
	t.Helper()
	c, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	have := map[string]bool{}
	for _, d := range c.Dependencies() {
		have[d.Name()] = true
	}
	kept := c.Metadata.Dependencies[:0]
	for _, d := range c.Metadata.Dependencies {
		if have[d.Name] {
			kept = append(kept, d)
		}
	}
	c.Metadata.Dependencies = kept
	c.Lock = nil
	tmp := t.TempDir()
	saved, err := chartutil.Save(c, tmp)
	if err != nil {
		t.Fatalf("packaging %s: %v", dir, err)
	}
	if err := os.Rename(saved, dest); err != nil {
		t.Fatal(err)
	}
}

// helmTemplate runs helm template with args in dir and decodes its output.
func helmTemplate(t *testing.T, helmBin, dir string, args []string) []manifests.Object {
	t.Helper()
	objs, err := manifests.Decode("helm template", heldout.Run(t, dir, helmBin, append([]string{"template"}, args...)...))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// heldOutOptions turns helm template arguments into the chart's bytes and
// the engine's options, the values layered as helm layers -f and --set.
func heldOutOptions(t *testing.T, dir string, args []string) ([]byte, helm.Options) {
	t.Helper()
	chart, err := os.ReadFile(filepath.Join(dir, args[1]))
	if err != nil {
		t.Fatal(err)
	}
	opts := helm.Options{ReleaseName: args[0], Values: map[string]any{}}
	for i := 2; i < len(args); i++ {
		flag := args[i]
		if flag == "--include-crds" {
			continue
		}
		if i++; i == len(args) {
			t.Fatalf("%s without a value", flag)
		}
		switch v := args[i]; flag {
		case "--namespace":
			opts.Namespace = v
		case "--kube-version":
			opts.KubeVersion = v
		case "--api-versions":
			opts.APIVersions = append(opts.APIVersions, v)
		case "-f":
			b, err := os.ReadFile(filepath.Join(dir, v))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := yaml.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			mergeValues(opts.Values, m)
		case "--set":
			if err := strvals.ParseInto(v, opts.Values); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("flag %s not understood", flag)
		}
	}
	return chart, opts
}

// randomPaths are the paths of the values a and b (two helm runs' same
// object) differ in.
func randomPaths(a, b any, at string) map[string]bool {
	out := map[string]bool{}
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok && len(av) == len(bv) {
			for k, e := range av {
				for p := range randomPaths(e, bv[k], at+"/"+k) {
					out[p] = true
				}
			}
			return out
		}
	case []any:
		if bv, ok := b.([]any); ok && len(av) == len(bv) {
			for i, e := range av {
				for p := range randomPaths(e, bv[i], fmt.Sprintf("%s/%d", at, i)) {
					out[p] = true
				}
			}
			return out
		}
	}
	if !reflect.DeepEqual(a, b) {
		out[at] = true
	}
	return out
}

// maskPaths replaces the values at paths in v with a marker of whether
// there was one.
func maskPaths(v any, paths map[string]bool, at string) any {
	if paths[at] {
		return "<differs between helm runs>"
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = maskPaths(e, paths, at+"/"+k)
		}
	case []any:
		for i, e := range v {
			v[i] = maskPaths(e, paths, fmt.Sprintf("%s/%d", at, i))
		}
	}
	return v
}
