package argocdocm

import (
	"context"
	"io"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// Renderer runs requests. Build one per generation with Engine.Renderer,
// which applies the generation's sidecar rule (Generation): what it allows
// and verifies is fixed when it is built. The zero value renders offline
// from CTFs and component archives under no rule: no signatures, local
// archives allowed, no image origin guard, platform children inherit their
// parent's project and destination. Its exported fields observe a render;
// none of them changes what is allowed.
type Renderer struct {
	// Opened, when set, sees every repository a render opens, local or
	// remote, under the name the request gave it, and may wrap it (debug
	// logging, keeping it for error hints); nil keeps it as opened.
	Opened func(name string, repo ocm.Repository) ocm.Repository
	// Log receives notes for people (e.g. the resolved version); default io.Discard.
	Log io.Writer
	// Explain, when set, receives the report of each render's plan (what
	// `render --explain` prints): the definition, each parameter and its
	// source, the values and patches, the placement of objects.
	Explain func(Explanation)

	// Set by Engine.Renderer; the zero values render offline.

	// open opens Request.Repository; nil: openOffline. A confined request
	// opens local repositories itself, inside its Root.
	open func(ctx context.Context, spec string) (ocm.Repository, error)
	// rule is the generation's sidecar rule (Generation.Rule, with a
	// Person's decisions), what the operator allows every request of this
	// renderer; the renderer applies it in one place (allowances). nil (the
	// zero Renderer): local archives allowed, no image origin guard,
	// platform children inherit their parent's project and destination.
	rule *policy.Rule
	// signatures, when set, must verify before anything renders (keys by
	// signature name; references are verified recursively), and every
	// rendered resource must carry a digest the signature covers: the
	// rule's signatures (or a Person's), built by Engine.verifier.
	signatures *signing.Verifier

	// planner decides what each request renders, from the request's
	// plan.Input; nil: the planner of deployment definitions, RGDs and
	// instance parameters (packages config and rgd), built per
	// render from Log, signatures and Explain. Tests replace it
	// (export_test.go).
	planner plan.Planner

	// access reads resource content; its Artifacts source is nil offline.
	access access.Resolver
	// archiveOptions bound directory resources when they are unpacked
	// (WithArchiveLimits; nil: the defaults of package archive).
	archiveOptions []archive.Option
	// helmCRDs keeps charts' decoded CRDs between renders (the render
	// server's, see helm.CRDCache); nil decodes them in every render.
	helmCRDs *helm.CRDCache
	// helmCharts keeps loaded charts between renders (the render server's,
	// see helm.ChartCache); nil loads each chart in every render.
	helmCharts *helm.ChartCache
	// ctfOptions open a CTF or component archive file of the Application's
	// checkout: an unpack cache (ctf.WithUnpacker, ctf.WithCache); nil
	// unpacks a tgz into a temporary file. Either way within the render's
	// context.
	ctfOptions []ctf.Option
}

// KnownJSON returns the text manifests.EncodeJSON writes for o (without
// its "---" line and newline), an object of one of r's Results, when the
// engine keeps that text already: with WithSharing, a chart's
// CustomResourceDefinitions, for an object still equal to the one kept. An
// encoder of the Result may write it instead of encoding o again (the
// generate command does: megabytes of JSON per render of an operator chart).
func (r *Renderer) KnownJSON(o map[string]any) ([]byte, bool) {
	return r.helmCRDs.KnownJSON(o)
}

func (r *Renderer) log() io.Writer {
	if r.Log == nil {
		return io.Discard
	}
	return r.Log
}

// Result is a rendered request: Version is the version rendered (a
// constraint in the request resolves to it).
type Result struct {
	Component, Version string
	DescriptorDigest   string
	Signatures         []string // verified signature names
	// Objects are the manifests in output order, each a Kubernetes object
	// as decoded JSON (values string, float64 or int64, bool, nil, []any
	// and map[string]any).
	Objects []map[string]any
}

// plannerOf is r's planner: the deployment definitions' (ComponentDeployment,
// then a kro RGD the component ships), unless a test set another.
func (r *Renderer) plannerOf() plan.Planner {
	if r.planner != nil {
		return r.planner
	}
	return rgd.Wrap(r.definitions())
}

// definitions is the planner of deployment definitions for one render.
func (r *Renderer) definitions() *deployment.DefinitionPlanner {
	p := &deployment.DefinitionPlanner{Log: r.log(), RequireDigests: r.signatures != nil}
	if r.Explain != nil {
		p.Explain = func(rep *explain.Report) { r.Explain(rep) }
	}
	return p
}

// planInput is what r's planner plans req from: the request itself,
// where its repository was found (registry, "" for a local one) and r's
// verified access to resources.
func (r *Renderer) planInput(req Request, registry string) plan.Input {
	return plan.Input{Request: req, Registry: registry, Reader: plan.NewResources(r.access, r.archiveOptions...)}
}

// Explanation is the report of one render's plan (Renderer.Explain): what
// `render --explain` prints.
type Explanation interface {
	// WriteText writes the report for people.
	WriteText(w io.Writer) error
	// AddNote adds a line to the report's notes.
	AddNote(note string)
}
