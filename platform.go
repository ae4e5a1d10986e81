package argocdocm

import (
	"context"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/platform"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// isPlatform: forced, or a component with references and no renderable
// resource of its own when no resource was asked for.
func isPlatform(d *ocm.Descriptor, req Request) bool {
	// An explicit definition (a ComponentDeployment, an RGD) is rendered,
	// even by a component that only has references to render from.
	return req.Platform.Force || (len(req.Resources) == 0 && req.DefinitionFile == "" && platform.IsPlatform(d, Renderable))
}

// IsPlatform says whether Render renders req of cv as a platform (an
// Argo CD Application per referenced component): forced by the request,
// or a component with references and nothing of its own to render, unless
// the planner renders it itself (a kro RGD a referenced component ships).
func (r *Renderer) IsPlatform(ctx context.Context, cv ocm.ComponentVersion, req Request) (bool, error) {
	return r.isPlatform(ctx, cv, req)
}

// isPlatform is isPlatform(d, req), unless the planner renders the
// component itself (plan.SelfRendering: an RGD a referenced component ships).
func (r *Renderer) isPlatform(ctx context.Context, cv ocm.ComponentVersion, req Request) (bool, error) {
	if !isPlatform(cv.Descriptor(), req) {
		return false, nil
	}
	if sr, ok := r.plannerOf().(plan.SelfRendering); ok && !req.Platform.Force {
		self, err := sr.RendersItself(ctx, cv, r.planInput(req, ""))
		if err != nil {
			return false, err
		}
		return !self, nil
	}
	return true, nil
}

func (r *Renderer) renderPlatform(ctx context.Context, repo ocm.Repository, cv ocm.ComponentVersion, req Request) ([]manifests.Object, error) {
	src := req.Platform.Source
	if src.Repository == "" {
		src.Repository = req.Repository
	}
	allow := r.allowances()
	opts := platform.Options{Parent: req.ReleaseName, ParentProject: req.Platform.Project, Source: src,
		AllowOtherProjects: allow.otherProjects, AllowOtherDestinations: allow.otherDestinations}
	if opts.Parent == "" {
		opts.Parent = req.Application
	}
	for _, f := range req.Platform.ConfigFiles {
		b, err := req.ReadFile(param.PlatformConfig, f)
		if err != nil {
			return nil, err
		}
		c, err := platform.DecodeConfig(b)
		if err != nil {
			return nil, fmt.Errorf("platform config %s: %w", f, err)
		}
		opts.ApplyConfig(c)
	}
	if len(req.Values) > 0 {
		b, err := yaml.Marshal(req.Values)
		if err != nil {
			return nil, err
		}
		c, err := platform.DecodeConfig(b)
		if err != nil {
			return nil, fmt.Errorf("values of a platform are its platform config: %w", err)
		}
		opts.ApplyConfig(c)
	}
	if pc, ok := r.plannerOf().(plan.PackageChecker); ok {
		opts.CheckPackage = func(ctx context.Context, child ocm.ComponentVersion, pkg platform.Package) error {
			// Only the package's own settings: the child renders as an
			// Application of its own, with its own request.
			in := r.planInput(Request{DefinitionFile: pkg.Definition, Parameters: pkg.Parameters}, "")
			return pc.CheckPackage(ctx, child, in)
		}
	}
	apps, err := platform.Applications(ctx, repo, cv, opts)
	if err != nil {
		return nil, err
	}
	if note := platform.SyncWaveNote(apps); note != "" && r.Log != nil {
		fmt.Fprintln(r.Log, note)
	}
	return apps, nil
}
