package kustomize

import (
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
)

// Option configures Render.
type Option func(*options)

type options struct {
	loadRestrictions types.LoadRestrictions
	reorder          krusty.ReorderOption
	overlay          *Overlay
	app              *appOverlay
}

func newOptions(opts []Option) options {
	o := options{
		loadRestrictions: types.LoadRestrictionsRootOnly,
		reorder:          krusty.ReorderOptionLegacy,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithLoadRestrictions sets kustomize's load restrictor. The default,
// types.LoadRestrictionsRootOnly (as in Argo CD and kustomize), lets a
// kustomization load files only from its own directory and below.
// types.LoadRestrictionsNone (Argo CD's --load-restrictor LoadRestrictionsNone)
// lets it load any file of the tree; files outside the tree stay out of reach
// either way, since the build only sees the tree.
func WithLoadRestrictions(r types.LoadRestrictions) Option {
	return func(o *options) {
		if r == types.LoadRestrictionsRootOnly || r == types.LoadRestrictionsNone {
			o.loadRestrictions = r
		}
	}
}

// WithReorder sets the output order. The default, krusty.ReorderOptionLegacy,
// is what `kustomize build` and Argo CD produce (namespaces and CRDs first,
// …); krusty.ReorderOptionNone keeps the depth-first input order. A
// sortOptions field in the kustomization takes precedence over either.
func WithReorder(r krusty.ReorderOption) Option {
	return func(o *options) {
		switch r {
		case krusty.ReorderOptionLegacy, krusty.ReorderOptionNone:
			o.reorder = r
		}
	}
}
