package helm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/heldout"
)

// TestHeldOutCharts renders upstream charts the renderer was never tuned
// on (testdata/heldout/cases.txt: cilium, istio, kyverno, traefik, dapr,
// calico, gpu-operator and more) with the
// plugin's Helm engine and with the helm v4 CLI, and compares the objects
// and their order. Values that differ between two runs of the CLI itself
// (generated certificates, random passwords) are compared by presence only.
func TestHeldOutCharts(t *testing.T) {
	helmBin, cases, work := heldout.HelmCases(t)
	for _, c := range cases.Helm {
		t.Run(c.Name, func(t *testing.T) {
			want := heldout.HelmExpects(t, helmBin, work, c)
			f := heldout.ParseHelm(t, c.Args)
			chart, err := os.ReadFile(filepath.Join(work, f.Chart))
			if err != nil {
				t.Fatal(err)
			}
			opts := helm.Options{ReleaseName: f.Release, Namespace: f.Namespace, KubeVersion: f.KubeVersion, APIVersions: f.APIVersions, Values: map[string]any{}}
			for _, vf := range f.ValueFiles {
				b, err := os.ReadFile(filepath.Join(work, vf))
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := yaml.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				mergeValues(opts.Values, m)
			}
			// Helm's order: files, --set-json, --set, --set-string, --set-file.
			for _, s := range f.SetJSON {
				if err := strvals.ParseJSON(s, opts.Values); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range f.Set {
				if err := strvals.ParseInto(s, opts.Values); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range f.SetString {
				if err := strvals.ParseIntoString(s, opts.Values); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range f.SetFile {
				read := func(p []rune) (any, error) {
					b, err := os.ReadFile(filepath.Join(work, string(p)))
					return string(b), err
				}
				if err := strvals.ParseIntoFile(s, opts.Values, read); err != nil {
					t.Fatal(err)
				}
			}
			got, err := helm.Render(context.Background(), chart, opts)
			want.Check(t, got, err)
		})
	}
}
