package application

import "github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"

// ApplicationOverlay reports whether a confined request's Application
// directory (Root) holds a kustomization at its root, an overlay of the
// team's own, and which directoryTree resources it builds on (the names
// under kustomize.MountDir it refers to, sorted). An unconfined request
// (render, for people) has none. See docs/kustomize.md.
func (r Request) ApplicationOverlay() (bool, []string, error) {
	if r.Root == nil {
		return false, nil, nil
	}
	return kustomize.NamedResources(r.Root.FS())
}

// ApplicationOverlayNamedAt says where the Application's kustomization
// first names the resource name ("kustomization.yaml line 6, column 5:
// .ocm/NAME/..."), for --explain; "" when it does not, or for an
// unconfined request.
func (r Request) ApplicationOverlayNamedAt(name string) string {
	if r.Root == nil {
		return ""
	}
	return kustomize.NamedAt(r.Root.FS(), name)
}
