// Package helm renders a Helm chart archive as `helm template` does — the
// steps of the Helm library's install action in client-only dry-run mode,
// run here one by one (see installClientOnly) — and returns the objects. It
// knows nothing about OCM.
//
// Like Argo CD's native Helm source it includes CRDs and renders hooks as
// manifests (Argo CD maps helm.sh/hook annotations to its own hooks); NOTES.txt
// is left out. `lookup` returns nothing because no cluster is contacted.
//
// More than manifests.MaxObjects documents out of Helm's template engine
// (manifests and hooks) are refused before they are sorted. The rendered
// documents are decoded once and sorted by their objects with Helm's rules
// (sortedRelease); Helm's own SortManifests sorts what that does not read
// exactly.
//
// Templates are executed by Helm's engine as copied into package engine,
// which can keep a chart's parsed templates. A long-lived process keeps
// loaded charts (ChartCache, with their compiled values schemas and parsed
// templates) and decoded CRDs (CRDCache) between renders; every render gets
// copies of its own, or parse trees that executing never changes.
package helm
