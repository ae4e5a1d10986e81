package argocdocm

import (
	"context"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Resolved is a request's component version, found: the first stage of
// Render, and all that the parameters announcement and verify need. Close
// it when done.
type Resolved struct {
	// Repository is the opened repository (seen by Renderer.Opened).
	Repository ocm.Repository
	// Requested is the request's version or constraint; Version what it
	// resolved to (the same for an exact version).
	Requested, Version string
	// Component is the component version.
	Component ocm.ComponentVersion

	// where is where the repository is (locate), for the planner.
	where location
}

// Close closes the repository.
func (c *Resolved) Close() error { return c.Repository.Close() }

// Open opens the request's repository as Render does: where locate finds
// it, with the renderer's registry source (the zero Renderer's:
// openOffline) and its rule's localArchives, then Opened.
func (r *Renderer) Open(ctx context.Context, req Request) (ocm.Repository, error) {
	return r.openAt(ctx, locate(req))
}

func (r *Renderer) openAt(ctx context.Context, l location) (ocm.Repository, error) {
	open := r.open
	if open == nil {
		open = openOffline
	}
	repo, err := l.open(ctx, open, r.allowances().localArchive, r.ctfOptions...)
	if err != nil {
		return nil, err
	}
	if r.Opened != nil {
		repo = r.Opened(l.req.Repository, repo)
	}
	return repo, nil
}

// Resolve opens the request's repository (Open), resolves its version or
// constraint (resolve.ResolveVersion, the rules of generate) and looks the
// component version up. An error once the version is resolved is an
// *errdef.Error naming the resolved version.
func (r *Renderer) Resolve(ctx context.Context, req Request) (*Resolved, error) {
	l := locate(req)
	repo, err := r.openAt(ctx, l)
	if err != nil {
		return nil, err
	}
	c, err := resolveIn(ctx, repo, req)
	if err != nil {
		repo.Close()
		return nil, err
	}
	c.where = l
	return c, nil
}

// resolveIn is Resolve in a repository already open; the result's Close
// closes repo.
func resolveIn(ctx context.Context, repo ocm.Repository, req Request) (*Resolved, error) {
	version, err := resolve.ResolveVersion(ctx, repo, req.Component, req.Version)
	if err != nil {
		return nil, err
	}
	cv, err := repo.LookupComponentVersion(ctx, req.Component, version)
	if err != nil {
		return nil, errdef.Wrap(err, errdef.Error{Component: req.Component, Version: version})
	}
	return &Resolved{Repository: repo, Requested: req.Version, Version: version, Component: cv}, nil
}
