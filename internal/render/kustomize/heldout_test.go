package kustomize

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/heldout"
)

// TestHeldOutTrees renders upstream kustomize trees the renderer was never
// tuned on (testdata/heldout/cases.txt: the kubebuilder-style config trees
// of gatekeeper, metallb, aws-load-balancer-controller and
// external-secrets), read as the plugin reads a kustomization resource,
// and compares them with kustomize build, objects and order.
func TestHeldOutTrees(t *testing.T) {
	bin, cases := heldout.KustomizeCases(t)
	modules := heldout.Modules{}
	for _, c := range cases.Kustomize {
		t.Run(c.Name, func(t *testing.T) {
			_, src, entry := cases.Tree(t, c)
			root := modules.Path(t, src)
			want := heldout.KustomizeBuild(t, bin, filepath.Join(root, filepath.FromSlash(entry)))
			tree, err := archive.ReadTree(bytes.NewReader(heldout.TreeTar(t, root)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Render(context.Background(), tree, entry)
			if err != nil {
				t.Fatal(err)
			}
			want.Check(t, got)
		})
	}
}
