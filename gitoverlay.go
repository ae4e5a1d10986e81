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

// ApplicationOverlay reports whether a confined request's Application
// directory (req.Root) holds a kustomization at its root, an overlay of
// the team's own, and which directoryTree resources it builds on (the
// names under kustomize.MountDir it refers to, sorted). An unconfined
// request (render, for people) has none. See docs/kustomize.md.
func ApplicationOverlay(req Request) (bool, []string, error) {
	if req.Root == nil {
		return false, nil, nil
	}
	return kustomize.NamedResources(kustomize.ApplicationDir(req.Root.root))
}

// ApplicationOverlayNamedAt says where the Application's kustomization
// first names the resource name ("kustomization.yaml line 6, column 5:
// .ocm/NAME/..."), for --explain; "" when it does not, or for an
// unconfined request.
func ApplicationOverlayNamedAt(req Request, name string) string {
	if req.Root == nil {
		return ""
	}
	return kustomize.NamedAt(kustomize.ApplicationDir(req.Root.root), name)
}

// checkApplicationOverlay refuses an Application overlay that names no
// resource the plan renders as a directoryTree, or one it does not render:
// built anyway, it would do nothing, or fail in kustomize's words.
func checkApplicationOverlay(req Request, p *plan.Plan) error {
	ok, named, err := ApplicationOverlay(req)
	if err != nil || !ok {
		return err
	}
	var trees []string
	for _, s := range p.Steps {
		if s.Resource != nil && s.Objects == nil && s.Resource.Type != TypeHelmChart && !slices.Contains(trees, s.Resource.Name) {
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
				errdef.ErrInvalidInput, confine.Where, kustomize.MountDir, confine.Quote(n), have)
		}
	}
	return nil
}

// applicationOverlayOption builds the Application's overlay over res when
// it names res; nil otherwise.
func applicationOverlayOption(req Request, res *ocm.Resource) (kustomize.Option, error) {
	ok, named, err := ApplicationOverlay(req)
	if err != nil || !ok || !slices.Contains(named, res.Name) {
		return nil, err
	}
	return kustomize.WithApplicationOverlay(kustomize.ApplicationDir(req.Root.root), res.Name), nil
}

// ApplicationOverlayDir is the reserved directory of the Application's
// directory under which its kustomization names the component's trees
// (kustomize.MountDir).
const ApplicationOverlayDir = kustomize.MountDir

// requestFiles is a request's side of its plan (plan.Files): the files it
// names and its Application's overlay, as the render reads them.
type requestFiles struct{ req Request }

func (f requestFiles) ReadFile(param, name string) ([]byte, error) {
	return f.req.ReadFile(param, name)
}
func (f requestFiles) ReadSetFile(name string) ([]byte, error)     { return f.req.readSetFile(name) }
func (f requestFiles) ApplicationOverlay() (bool, []string, error) { return ApplicationOverlay(f.req) }
func (f requestFiles) ApplicationOverlayNamedAt(name string) string {
	return ApplicationOverlayNamedAt(f.req, name)
}
