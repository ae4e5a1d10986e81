package argocdocm

import (
	"context"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// NewSourceRenderer is a renderer that opens repositories and reads remote
// content through src, for tests that build a source of their own (a
// proxy's faults, quick retries) rather than the Engine's.
func NewSourceRenderer(src *resolve.Source) *Renderer {
	return &Renderer{open: src.Open, access: access.Resolver{Artifacts: src}}
}

// NewOfflineRenderer is the zero Renderer (offline: CTFs and component
// archives) with archive limits, which Engine.Renderer sets from
// WithArchiveLimits.
func NewOfflineRenderer(opts ...archive.Option) *Renderer {
	return &Renderer{archiveOptions: opts}
}

// NewOpeningRenderer is the zero Renderer opening repositories with open
// (what Engine.Renderer sets to its registry source), for tests of what a
// request hands it.
func NewOpeningRenderer(open func(context.Context, string) (ocm.Repository, error)) *Renderer {
	return &Renderer{open: open}
}

// SetSignatures makes v the signature verifier of r, which Engine.Renderer
// builds from the generation's rule, for tests with keys of their own.
func (r *Renderer) SetSignatures(v *signing.Verifier) { r.signatures = v }

// SetRule gives an offline renderer the generation rule that
// Engine.Renderer sets from Generation.Rule, for tests of what it allows.
func (r *Renderer) SetRule(rule *policy.Rule) { r.rule = rule }

// SetPlanner makes p the planner of r (instead of the deployment
// definitions'), for tests of the pipeline's stages with a plan of their own.
func SetPlanner(r *Renderer, p plan.Planner) { r.planner = p }
