package argocdocm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/confine"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// checkApplicationOverlay refuses an Application overlay that names no
// resource the plan renders as a directoryTree, or one it does not render:
// built anyway, it would do nothing, or fail in kustomize's words.
func checkApplicationOverlay(req Request, p *plan.Plan) error {
	ok, named, err := req.ApplicationOverlay()
	if err != nil || !ok {
		return err
	}
	var trees []string
	for _, s := range p.Steps {
		if s.Resource != nil && s.Objects == nil && s.Resource.Type != plan.TypeHelmChart && !slices.Contains(trees, s.Resource.Name) {
			trees = append(trees, s.Resource.Name)
		}
	}
	have := "no directoryTree resource"
	if len(trees) > 0 {
		have = "the directoryTree resources " + strings.Join(trees, ", ")
	}
	if len(named) == 0 {
		return fmt.Errorf("%w: %s holds a kustomization that names no resource of the component: an overlay of the Application builds on %s/RESOURCE-NAME/PATH (this render has %s)",
			errdef.ErrInvalidInput, confine.Where, kustomize.MountDir, have)
	}
	for _, n := range named {
		if !slices.Contains(trees, n) {
			return fmt.Errorf("%w: the kustomization in %s names %s/%s, but this render has %s",
				errdef.ErrInvalidInput, confine.Where, kustomize.MountDir, errdef.Quote(n), have)
		}
	}
	return nil
}

// applicationOverlayOption builds the Application's overlay over res when
// it names res; nil otherwise.
func applicationOverlayOption(req Request, res *ocm.Resource) (kustomize.Option, error) {
	ok, named, err := req.ApplicationOverlay()
	if err != nil || !ok || !slices.Contains(named, res.Name) {
		return nil, err
	}
	return kustomize.WithApplicationOverlay(req.Root.FS(), res.Name), nil
}
