package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/suggest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// componentLister is a repository that can name its components: a CTF or a
// component archive can; an OCI registry cannot without its catalog API,
// which registries commonly turn off, and which lists every repository.
type componentLister interface {
	ListComponents(ctx context.Context) ([]string, error)
}

var errNoListing = errors.New("the repository cannot list its components")

// maxSuggestions is how many close names a message lists.
const maxSuggestions = 3

// keptRepository keeps the repository a render opened until the command is
// done with it: suggestComponents asks it for names after the pipeline has
// given up on it. Only what the pipeline itself opened is asked, so a message
// never lists what the pipeline refused to open.
type keptRepository struct {
	ocm.Repository
}

func (keptRepository) Close() error { return nil }

func (k keptRepository) ListComponents(ctx context.Context) ([]string, error) {
	if l, ok := k.Repository.(componentLister); ok {
		return l.ListComponents(ctx)
	}
	return nil, errNoListing
}

// keepOpened chains onto a argocdocm.Renderer.Opened (next, may be nil): the
// first repository the render opens is kept in *kept (closed by the caller),
// later ones are passed through.
func keepOpened(next func(string, ocm.Repository) ocm.Repository, kept *ocm.Repository) func(string, ocm.Repository) ocm.Repository {
	return func(name string, repo ocm.Repository) ocm.Repository {
		if next != nil {
			repo = next(name, repo)
		}
		if *kept != nil {
			return repo
		}
		*kept = repo
		return keptRepository{repo}
	}
}

// suggestComponents adds the closest existing component names to err when
// err is the requested component not existing in repo (not a version, a
// resource or a referenced component): a typo then reads "did you mean …".
// Any other error, and any failure to find out, returns err as it is.
func suggestComponents(ctx context.Context, repo ocm.Repository, req argocdocm.Request, err error) error {
	if repo == nil || !errors.Is(err, errdef.ErrNotFound) || req.Component == "" || ctx.Err() != nil {
		return err
	}
	if _, lerr := repo.ListVersions(ctx, req.Component); lerr == nil || !errors.Is(lerr, errdef.ErrNotFound) {
		return err // the component exists (or we cannot tell): err is about something else
	}
	var hint string
	lister, ok := repo.(componentLister)
	var names []string
	if ok {
		var lerr error
		if names, lerr = lister.ListComponents(ctx); lerr != nil {
			ok = false
		}
	}
	switch {
	case !ok:
		hint = "check the component name (a registry cannot list its components)"
	case len(names) == 0:
		hint = "the repository holds no components"
	default:
		if close := closestNames(req.Component, names, maxSuggestions); len(close) > 0 {
			hint = "did you mean " + strings.Join(close, ", ") + "?"
		} else {
			hint = fmt.Sprintf("the repository holds %d other components, none with a similar name", len(names))
		}
	}
	var e *errdef.Error
	if errors.As(err, &e) {
		out := *e
		out.Err = fmt.Errorf("%w; %s", e.Err, hint)
		return &out
	}
	return fmt.Errorf("%w; %s", err, hint)
}

// closestNames returns up to n names nearest to name (suggest.Closest).
func closestNames(name string, names []string, n int) []string {
	return suggest.Closest(name, names, n)
}
