package generator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"oras.land/oras-go/v2/registry/remote"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// descriptorPrefix is where OCM's naming (componentNameMapping urlPath)
// puts a component's descriptors below the repository prefix.
var descriptorPrefix = ocm.DescriptorRepository("")

// components lists the components whose names start with the query's
// prefix: from a CTF's index, a component archive's one descriptor, or a
// registry's catalog (GET /v2/_catalog, which not every registry offers).
func (r *request) components(ctx context.Context) ([]string, error) {
	prefix := r.q.Component
	names, err := remember(ctx, r.g.comps, r.key+"\x00"+prefix, func(ctx context.Context) ([]string, error) {
		repo, err := r.repo.get()
		if err != nil {
			return nil, err
		}
		var all []string
		switch t := repo.(type) {
		case *ctf.Repository:
			for _, a := range t.Artifacts() {
				if c, ok := strings.CutPrefix(a.Repository, descriptorPrefix); ok && a.Tag != "" {
					all = append(all, c)
				}
			}
		case *ctf.ComponentArchive:
			all = []string{t.Descriptor().Name}
		case *oci.Repository:
			if all, err = catalog(ctx, t, prefix); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%w: repository %s cannot list its components; name one", errdef.ErrInvalidInput, errdef.Field(r.q.Repository))
		}
		seen := map[string]bool{}
		var out []string
		for _, c := range all {
			if strings.HasPrefix(c, prefix) && !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
		sort.Strings(out)
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no component matches %s* in %s: %w", prefix, errdef.Field(r.q.Repository), errdef.ErrNotFound)
	}
	if len(names) > maxComponents {
		return nil, fmt.Errorf("%w: %d components match %s*, more than %d", errdef.ErrLimitExceeded, len(names), prefix, maxComponents)
	}
	return names, nil
}

// maxCatalog bounds the repositories read from a registry's catalog.
const maxCatalog = 100_000

// catalog lists the components below the repository's prefix from the
// registry's catalog, starting after the last repository name that sorts
// before the prefix (the catalog is in lexical order).
func catalog(ctx context.Context, repo *oci.Repository, prefix string) ([]string, error) {
	loc := repo.String()
	scheme := ""
	if s, rest, ok := strings.Cut(loc, "://"); ok {
		scheme, loc = s, rest
	}
	host, base, _ := strings.Cut(loc, "/")
	full := descriptorPrefix + prefix
	if base != "" {
		full = base + "/" + full
	}
	rc := repo.Client().Registry()
	ref := imageref.Reference{Scheme: scheme, Registry: host, Repository: full}
	rr, err := rc.Repository(ref)
	if err != nil {
		return nil, err
	}
	reg := &remote.Registry{}
	reg.Reference.Registry = host
	reg.Client, reg.PlainHTTP = rr.Client, rr.PlainHTTP
	var out []string
	n := 0
	// "last" is exclusive: start just before the prefix.
	err = reg.Repositories(ctx, strings.TrimSuffix(full, "/"), func(page []string) error {
		for _, name := range page {
			n++
			if n > maxCatalog {
				return fmt.Errorf("%w: the catalog lists more than %d repositories", errdef.ErrLimitExceeded, maxCatalog)
			}
			if !strings.HasPrefix(name, full) {
				if name > full {
					return errStop
				}
				continue
			}
			out = append(out, strings.TrimPrefix(name, strings.TrimSuffix(full, prefix)))
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, rc.Wrap(err, "list components (catalog)", imageref.Reference{Registry: host, Repository: full})
	}
	return out, nil
}

type stopError struct{}

func (stopError) Error() string { return "stop" }

var errStop error = stopError{}
