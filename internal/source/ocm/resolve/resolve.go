package resolve

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Lister is the part of ocm.Repository that resolving needs.
type Lister interface {
	ListVersions(ctx context.Context, component string) ([]string, error)
}

var _ Lister = ocm.Repository(nil)

// maxConstraintLen bounds a constraint; real ones are a few characters.
const maxConstraintLen = 256

// IsConstraint reports whether s is a version constraint rather than an
// exact version. A constraint has an operator (= != > < >= <= ~ ^), a range
// ("1 - 2", "a || b", "a, b", spaces) or a wildcard part (x, X, *). Anything
// else, "1.2.3", "v1.2", "1.0.0-rc.1+build.7" and "1.0.0@sha256:…" included,
// is an exact version.
func IsConstraint(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	if v, _, ok := strings.Cut(s, "@"); ok && !strings.ContainsAny(v, "<>=~^!*| ,") {
		return false // a version pinned to a digest
	}
	if strings.ContainsAny(s, "<>=~^!*| ,") {
		return true
	}
	core := s
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	for _, part := range strings.Split(strings.TrimPrefix(strings.TrimPrefix(core, "v"), "V"), ".") {
		if part == "x" || part == "X" {
			return true
		}
	}
	return false
}

// Version resolves versionOrConstraint for component in repo. An exact
// version comes back unchanged without a request. A constraint is checked
// against the repository's versions (tags that are not versions are
// skipped) and the highest match is returned; no match is an error wrapping
// errdef.ErrNotFound that lists the available versions. An invalid
// constraint wraps errdef.ErrInvalidInput.
func Version(ctx context.Context, repo Lister, component, versionOrConstraint string) (string, error) {
	s := strings.TrimSpace(versionOrConstraint)
	if s == "" {
		return "", fmt.Errorf("%w: component %s: empty version", errdef.ErrInvalidInput, component)
	}
	if len(s) > maxConstraintLen {
		return "", fmt.Errorf("%w: component %s: version constraint longer than %d bytes", errdef.ErrInvalidInput, component, maxConstraintLen)
	}
	if !IsConstraint(s) {
		return s, nil
	}
	c, err := semver.NewConstraint(s)
	if err != nil {
		return "", fmt.Errorf("%w: component %s: version constraint %s: %v", errdef.ErrInvalidInput, component, errdef.Quote(s), err)
	}
	versions, err := repo.ListVersions(ctx, component)
	if err != nil {
		return "", err
	}
	best, err := Select(c, versions)
	if err != nil {
		return "", fmt.Errorf("component %s: %w", component, err)
	}
	return best, nil
}

// ResolveVersion is Version for an ocm.Repository.
func ResolveVersion(ctx context.Context, repo ocm.Repository, component, versionOrConstraint string) (string, error) {
	return Version(ctx, repo, component, versionOrConstraint)
}

type parsed struct {
	raw string
	v   *semver.Version
}

// Select returns the highest of versions that satisfies c (as written, e.g.
// with its "v" prefix). Versions that differ only in build metadata, which
// semver does not order, are ordered by their text so the choice is stable.
func Select(c *semver.Constraints, versions []string) (string, error) {
	var all, ok []parsed
	for _, raw := range versions {
		v, err := semver.NewVersion(raw)
		if err != nil {
			continue
		}
		p := parsed{raw, v}
		all = append(all, p)
		if c.Check(v) {
			ok = append(ok, p)
		}
	}
	less := func(a, b parsed) bool {
		if a.v.Equal(b.v) {
			return a.raw < b.raw
		}
		return a.v.LessThan(b.v)
	}
	if len(ok) == 0 {
		sort.Slice(all, func(i, j int) bool { return less(all[i], all[j]) })
		names := make([]string, len(all))
		for i, p := range all {
			names[i] = p.raw
		}
		avail := strings.Join(names, ", ")
		if avail == "" {
			avail = "none"
		}
		return "", fmt.Errorf("no version matches %s: %w (available: %s)", errdef.Quote(c.String()), errdef.ErrNotFound, avail)
	}
	best := ok[0]
	for _, p := range ok[1:] {
		if less(best, p) {
			best = p
		}
	}
	return best.raw, nil
}
