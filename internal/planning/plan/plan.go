package plan

import (
	"context"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Step is one render of a plan: one resource with its inputs.
type Step struct {
	Resource *ocm.Resource
	// Component is the component version Resource belongs to when it is not
	// the rendered one (a resource of a referenced component); nil: the
	// rendered one.
	Component   ocm.ComponentVersion
	ReleaseName string
	Namespace   string
	Path        string         // entry path inside a directory resource
	Values      map[string]any // final Helm values
	// Overlay, for a directoryTree whose entry is a kustomization, is
	// configuration kustomize builds over the entry; nil builds the entry
	// as it is.
	Overlay *kustomize.Overlay
	// Ordering places the step's objects in Argo CD's sync (waves, hooks;
	// see hooks.Apply); nil leaves them as rendered.
	Ordering *hooks.Ordering
	// Objects, when not nil, are the step's output as they are, and nothing
	// is rendered: objects the planner built, such as a Job running an image
	// resource (Resource). They are copied, then placed like rendered ones.
	Objects []manifests.Object
	// Finish is the finishing work this step asked for (a definition's
	// patches of the render): it runs over the whole output, since a patch
	// may target another step's objects, once every step is rendered and
	// placed, in step order, before Plan.Finish.
	Finish []Finisher
}

// Plan is what a component version renders into, in output order, with the
// work that finishes the output.
type Plan struct {
	Steps []Step
	// Finish is the finishing work of the whole output (automatic
	// localisation, a report), run after the steps' own.
	Finish []Finisher
}

// Finisher is finishing work of a plan: it sees all objects of the plan's
// steps, rendered and placed, and returns them changed.
type Finisher interface {
	Finish(ctx context.Context, objs []manifests.Object) ([]manifests.Object, error)
}

// Planner decides the plan for a component version: cv is the resolved
// version (in.Version is its constraint, as it was given). The renderer's
// is the deployment definitions' (deployment.DefinitionPlanner) inside the
// RGD planner (rgd.GraphPlanner).
type Planner interface {
	Plan(ctx context.Context, cv ocm.ComponentVersion, in Input) (*Plan, error)
}

// PackageChecker is a Planner that can validate a platform package's
// settings against its child component version (see
// platform.Options.CheckPackage): in holds the package's DefinitionFile
// and Parameters, and the renderer's Reader.
type PackageChecker interface {
	CheckPackage(ctx context.Context, child ocm.ComponentVersion, in Input) error
}

// SelfRendering is a Planner that renders some components that read as a
// platform (component references, no renderable resource of their own):
// the RGD planner, when a referenced component ships the
// ResourceGraphDefinition that deploys them (OCM's helm-nested). The
// renderer asks it only when neither a definition, a resource nor a forced
// platform decides; true renders the component through Plan.
type SelfRendering interface {
	RendersItself(ctx context.Context, cv ocm.ComponentVersion, in Input) (bool, error)
}
