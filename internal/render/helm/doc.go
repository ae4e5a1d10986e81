// Package helm renders a Helm chart archive with the Helm library's own install
// action in client-only dry-run mode — exactly what `helm template` does — and
// returns the objects. It knows nothing about OCM.
//
// Like Argo CD's native Helm source it includes CRDs and renders hooks as
// manifests (Argo CD maps helm.sh/hook annotations to its own hooks); NOTES.txt
// is left out. `lookup` returns nothing because no cluster is contacted.
package helm
