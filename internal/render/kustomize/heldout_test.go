package kustomize

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/heldout"
)

// envHeldOutKustomize names the kustomize CLI TestHeldOutTrees compares
// with (make test-heldout sets it to make reftools' build).
const envHeldOutKustomize = "HELDOUT_KUSTOMIZE"

// TestHeldOutTrees renders upstream kustomize trees the renderer was never
// tuned on (testdata/heldout/cases.txt: the kubebuilder-style config trees
// of gatekeeper, metallb, aws-load-balancer-controller and
// external-secrets), read as the plugin reads a kustomization resource,
// and compares them with kustomize build, objects and order.
func TestHeldOutTrees(t *testing.T) {
	bin := os.Getenv(envHeldOutKustomize)
	if bin == "" {
		t.Skip(envHeldOutKustomize + " is unset: make test-heldout builds the kustomize CLI (make reftools) and runs this comparison with it")
	}
	cases := heldout.Read(t)
	modules := heldout.Modules{}
	for _, c := range cases.Kustomize {
		t.Run(c.Name, func(t *testing.T) {
			label, entry, _ := strings.Cut(c.Args[0], "/")
			src, ok := cases.Trees[label]
			if !ok {
				t.Fatalf("no tree %s", label)
			}
			root := modules.Path(t, src)
			out := heldout.Run(t, filepath.Join(root, filepath.FromSlash(entry)), bin, "build", ".")
			want, err := manifests.Decode("kustomize build", out)
			if err != nil {
				t.Fatal(err)
			}
			tree, err := archive.ReadTree(bytes.NewReader(tarOf(t, dirEntries(t, root)...)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Render(context.Background(), tree, entry)
			if err != nil {
				t.Fatal(err)
			}
			manifeststest.Equal(t, got, want)
			if len(got) == len(want) {
				for i := range got {
					if gk, wk := manifests.Key(got[i]), manifests.Key(want[i]); gk != wk {
						t.Errorf("object %d is %s, kustomize build's is %s", i, gk, wk)
						break
					}
				}
			}
		})
	}
}

// dirEntries are the regular files below root, as tar entries.
func dirEntries(t *testing.T, root string) []entry {
	t.Helper()
	var out []entry
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		out = append(out, entry{name: filepath.ToSlash(rel), body: string(b)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
