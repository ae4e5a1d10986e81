package helm_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
)

// realWorldInputs holds third-party charts (see testdata/realworld's
// README.md): the team's full set beside the repository when it is there,
// else the subset in the repository's testdata/realworld.
var realWorldInputs = func() string {
	const shared, inRepo = "../../../../shared/fixtures/realworld", realWorldGoldens
	if _, err := os.Stat(shared); err == nil {
		return shared
	}
	return inRepo
}()

// realWorldGoldens holds the cases (commands.txt) and the outputs of the
// reference CLIs (helm v4.3.2, kustomize v5.8.3: golden/) for every chart
// of the full set, also those whose inputs are not in the repository.
const realWorldGoldens = "../../../testdata/realworld"

// realWorldCase is one helm case of commands.txt.
type realWorldCase struct {
	name, chart string
	opts        helm.Options
	valueFiles  []string
	set         map[string]any // --set, as nested values
}

// realWorldCases parses the helm lines of commands.txt (the flags it uses:
// --namespace, --kube-version, --include-crds, -f, --set, --api-versions).
func realWorldCases(tb testing.TB) []realWorldCase {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(realWorldGoldens, "commands.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []realWorldCase
	for _, line := range strings.Split(string(b), "\n") {
		name, cmd, ok := strings.Cut(line, ": helm template ")
		if !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, " > ")
		f := strings.Fields(cmd)
		c := realWorldCase{name: name, chart: filepath.Join(realWorldInputs, "charts", filepath.Base(f[1])), opts: helm.Options{ReleaseName: f[0]}}
		for i := 2; i < len(f); i++ {
			switch f[i] {
			case "--namespace":
				i++
				c.opts.Namespace = f[i]
			case "--kube-version":
				i++
				c.opts.KubeVersion = f[i]
			case "--include-crds":
			case "-f":
				i++
				c.valueFiles = append(c.valueFiles, filepath.Join(realWorldGoldens, f[i]))
			case "--set":
				i++
				k, v, _ := strings.Cut(f[i], "=")
				if c.set == nil {
					c.set = map[string]any{}
				}
				m := c.set
				parts := strings.Split(k, ".")
				for _, p := range parts[:len(parts)-1] {
					if m[p] == nil {
						m[p] = map[string]any{}
					}
					m = m[p].(map[string]any)
				}
				var val any
				if err := yaml.Unmarshal([]byte(v), &val); err != nil {
					tb.Fatal(err)
				}
				m[parts[len(parts)-1]] = val
			case "--api-versions":
				i++
				c.opts.APIVersions = append(c.opts.APIVersions, f[i])
			default:
				tb.Fatalf("%s: flag %q not understood", name, f[i])
			}
		}
		if _, err := os.Stat(c.chart); err != nil {
			tb.Logf("SKIP %s: %s is not in the repository's subset of the real-world charts (the full set is ../shared/fixtures/realworld)", name, filepath.Base(c.chart))
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		tb.Fatal("no helm cases in commands.txt")
	}
	return out
}

// values layers the case's values files and --set values as helm does.
func (c realWorldCase) values(tb testing.TB) map[string]any {
	vals := map[string]any{}
	for _, f := range c.valueFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var v map[string]any
		if err := yaml.Unmarshal(b, &v); err != nil {
			tb.Fatal(err)
		}
		mergeValues(vals, v)
	}
	mergeValues(vals, c.set)
	return vals
}

func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// testPodSuffix is the random suffix of podinfo's helm test Pods.
var testPodSuffix = regexp.MustCompile(`-[a-z0-9]{5}$`)

// withoutRandomNames drops the random suffix from the names of helm test
// hooks, so that runs compare.
func withoutRandomNames(objs []manifests.Object) {
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if h, _ := ann["helm.sh/hook"].(string); strings.HasPrefix(h, "test") {
			if n, ok := md["name"].(string); ok {
				md["name"] = testPodSuffix.ReplaceAllString(n, "")
			}
		}
	}
}

// Unmodified third-party charts render the objects `helm template` renders
// (compared as sets of objects), in Helm's order, and encode to the same
// bytes each run.
//
// They are sorted by the plugin, never by Helm's SortManifests (which
// would give the same objects, slower: see sortedRelease).
func TestRenderRealWorldCharts(t *testing.T) {
	sorts, restore := helm.CountSorts()
	defer restore()
	for _, c := range realWorldCases(t) {
		t.Run(c.name, func(t *testing.T) {
			defer func(before int) {
				if n := sorts() - before; n != 0 {
					t.Errorf("sorted by Helm (%d sorts): the plugin's sort gave up", n)
				}
			}(sorts())
			chart, err := os.ReadFile(c.chart)
			if err != nil {
				t.Fatal(err)
			}
			opts := c.opts
			opts.Values = c.values(t)
			got, err := helm.Render(context.Background(), chart, opts)
			if err != nil {
				t.Fatal(err)
			}
			want := manifeststest.ReadGolden(t, filepath.Join(realWorldGoldens, "golden"), c.name)
			withoutRandomNames(got)
			withoutRandomNames(want)
			manifeststest.Equal(t, got, want)
			// The same order as helm template's (hooks are printed after
			// the other manifests, as Render returns them).
			if len(got) == len(want) {
				for i := range got {
					if gk, wk := manifests.Key(got[i]), manifests.Key(want[i]); gk != wk {
						t.Errorf("object %d is %s, helm template's is %s", i, gk, wk)
						break
					}
				}
			}
		})
	}
}

// BenchmarkRenderRealWorld renders each real-world chart and encodes it as
// generate (JSON) and render (YAML) print it.
func BenchmarkRenderRealWorld(b *testing.B) {
	for _, c := range realWorldCases(b) {
		chart, err := os.ReadFile(c.chart)
		if err != nil {
			b.Fatal(err)
		}
		opts := c.opts
		opts.Values = c.values(b)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				objs, err := helm.Render(context.Background(), chart, opts)
				if err != nil {
					b.Fatal(err)
				}
				var buf bytes.Buffer
				if err := manifests.EncodeJSON(&buf, objs); err != nil {
					b.Fatal(err)
				}
				buf.Reset()
				if err := manifests.Encode(&buf, objs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A CRDCache and a ChartCache give each render the objects a render
// without them gives, as copies of their own: what one render's
// post-processing changes never reaches the next, nor do the values of one
// case the next case of the same chart.
func TestCRDCacheRealWorld(t *testing.T) {
	crds := helm.NewCRDCache(0)
	charts := helm.NewChartCache(0)
	for _, c := range realWorldCases(t) {
		t.Run(c.name, func(t *testing.T) {
			chart, err := os.ReadFile(c.chart)
			if err != nil {
				t.Fatal(err)
			}
			opts := c.opts
			opts.Values = c.values(t)
			want, err := helm.Render(context.Background(), chart, opts)
			if err != nil {
				t.Fatal(err)
			}
			withoutRandomNames(want)
			opts.CRDs, opts.Charts = crds, charts
			for i := 0; i < 3; i++ {
				got, err := helm.Render(context.Background(), chart, opts)
				if err != nil {
					t.Fatal(err)
				}
				withoutRandomNames(got)
				if len(got) != len(want) {
					t.Fatalf("render %d: %d objects, want %d", i, len(got), len(want))
				}
				for j := range got {
					if gk, wk := manifests.Key(got[j]), manifests.Key(want[j]); gk != wk {
						t.Fatalf("render %d: object %d is %s, want %s", i, j, gk, wk)
					}
				}
				manifeststest.Equal(t, got, want)
				// Post-processing changes objects in place.
				for _, o := range got {
					md := o["metadata"].(map[string]any)
					md["name"] = "changed"
					if spec, ok := o["spec"].(map[string]any); ok {
						spec["changed"] = []any{"by", "render", i}
					}
				}
			}
		})
	}
}

// BenchmarkRenderRealWorldServer renders each real-world chart as the
// render server does: one CRDCache and one ChartCache for all renders, JSON
// out (generate's output).
func BenchmarkRenderRealWorldServer(b *testing.B) {
	crds, charts := helm.NewCRDCache(0), helm.NewChartCache(0)
	for _, c := range realWorldCases(b) {
		chart, err := os.ReadFile(c.chart)
		if err != nil {
			b.Fatal(err)
		}
		opts := c.opts
		opts.Values = c.values(b)
		opts.CRDs, opts.Charts = crds, charts
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				objs, err := helm.Render(context.Background(), chart, opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := manifests.EncodeJSON(io.Discard, objs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
