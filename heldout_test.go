package argocdocm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/heldout"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// TestHeldOutChartsAsComponents renders the held-out charts
// (testdata/heldout/cases.txt) as the plugin renders an Application: each
// chart a resource of a component version in a CTF, the case's flags as
// the request's, through the whole pipeline (resolve, plan, fetch and
// verify, render, finish). The output is what helm template prints.
func TestHeldOutChartsAsComponents(t *testing.T) {
	helmBin, cases, work := heldout.HelmCases(t)
	var comps []*ocmbuild.Component
	for label := range cases.Charts {
		chart, err := os.ReadFile(filepath.Join(work, "charts", label+".tgz"))
		if err != nil {
			t.Fatal(err)
		}
		comps = append(comps, &ocmbuild.Component{Name: "heldout.example/" + label, Version: "1.0.0", Provider: "heldout.example",
			Resources: []ocmbuild.Resource{{Name: "chart", Version: "1.0.0", Type: "helmChart", MediaType: ocmbuild.MediaTypeHelmChart, Data: chart}}})
	}
	ctf := filepath.Join(work, "ctf")
	if err := ocmbuild.WriteCTF(ctf, comps...); err != nil {
		t.Fatal(err)
	}
	engine := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(""))
	for _, c := range cases.Helm {
		t.Run(c.Name, func(t *testing.T) {
			want := heldout.HelmExpects(t, helmBin, work, c)
			f := heldout.ParseHelm(t, c.Args)
			label := filepath.Base(f.Chart[:len(f.Chart)-len(filepath.Ext(f.Chart))])
			res, err := engine.Render(context.Background(), argocdocm.Request{
				Application: c.Name, Repository: ctf, Dir: work,
				Component: "heldout.example/" + label, Version: "1.0.0",
				ReleaseName: f.Release, Namespace: f.Namespace, KubeVersion: f.KubeVersion, APIVersions: f.APIVersions,
				ValueFiles: f.ValueFiles, Set: f.Set, SetJSON: f.SetJSON, SetString: f.SetString, SetFile: f.SetFile,
			}, nil)
			if err != nil && c.Fails {
				t.Logf("refused: %v", err)
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("the message is more than one line: %q", err)
				}
			}
			var got []manifests.Object
			if err == nil {
				got = res.Objects
			}
			want.Check(t, got, err)
		})
	}
}

// TestHeldOutTreesAsComponents builds the held-out kustomize trees
// (testdata/heldout/cases.txt) as the plugin renders an Application: each
// tree a directoryTree resource of a component version in a CTF, the
// case's entry path the request's. The output is what kustomize build
// prints.
func TestHeldOutTreesAsComponents(t *testing.T) {
	bin, cases := heldout.KustomizeCases(t)
	modules := heldout.Modules{}
	var comps []*ocmbuild.Component
	for label, src := range cases.Trees {
		comps = append(comps, &ocmbuild.Component{Name: "heldout.example/" + label, Version: "1.0.0", Provider: "heldout.example",
			Resources: []ocmbuild.Resource{{Name: "tree", Version: "1.0.0", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar,
				Data: heldout.TreeTar(t, modules.Path(t, src))}}})
	}
	ctf := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(ctf, comps...); err != nil {
		t.Fatal(err)
	}
	engine := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(""))
	for _, c := range cases.Kustomize {
		t.Run(c.Name, func(t *testing.T) {
			label, src, entry := cases.Tree(t, c)
			want := heldout.KustomizeBuild(t, bin, filepath.Join(modules.Path(t, src), filepath.FromSlash(entry)))
			res, err := engine.Render(context.Background(), argocdocm.Request{
				Application: c.Name, Repository: ctf, Component: "heldout.example/" + label, Version: "1.0.0", Path: entry,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want.Check(t, res.Objects)
		})
	}
}
