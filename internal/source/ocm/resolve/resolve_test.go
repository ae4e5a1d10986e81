package resolve_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
)

type lister struct {
	versions []string
	calls    int
	err      error
}

func (l *lister) ListVersions(context.Context, string) ([]string, error) {
	l.calls++
	return l.versions, l.err
}

func TestVersion(t *testing.T) {
	versions := []string{"1.9.0", "2.0.0", "2.3.0", "2.3.4", "2.4.0-rc.1", "2.4.0", "3.0.0-beta.1", "v2.3.5", "latest", "2.3.4+build.7", "2.3.4+build.10"}
	cases := []struct {
		in, want string
		list     bool // whether the repository is asked
		err      error
	}{
		{in: "2.3.0", want: "2.3.0"},
		{in: " 2.3.0 ", want: "2.3.0"},
		{in: "9.9.9", want: "9.9.9"}, // exact: passed through, lookup reports not found
		{in: "1.0.0@sha256:0000000000000000000000000000000000000000000000000000000000000000", want: "1.0.0@sha256:0000000000000000000000000000000000000000000000000000000000000000"},
		{in: "2.3", want: "2.3"},
		{in: "~2.3", want: "v2.3.5", list: true},
		{in: "2.3.x", want: "v2.3.5", list: true},
		{in: ">=2.0.0", want: "2.4.0", list: true},
		{in: "^2", want: "2.4.0", list: true},
		{in: ">=2.0.0 <2.3.5", want: "2.3.4+build.7", list: true}, // build metadata ties ordered by text
		{in: ">=3.0.0-0", want: "3.0.0-beta.1", list: true},       // prerelease constraint admits prereleases
		{in: ">=2.4.0-rc.0 <2.4.0", want: "2.4.0-rc.1", list: true},
		{in: "^3", list: true, err: errdef.ErrNotFound}, // 3.0.0-beta.1 is a prerelease: not matched
		{in: ">=4", list: true, err: errdef.ErrNotFound},
		{in: ">=x.y", err: errdef.ErrInvalidInput},
		{in: "~", err: errdef.ErrInvalidInput},
		{in: "", err: errdef.ErrInvalidInput},
		{in: ">=1 " + strings.Repeat("|| 1 ", 100), err: errdef.ErrInvalidInput},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			l := &lister{versions: versions}
			got, err := resolve.Version(context.Background(), l, "example.com/a", c.in)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("got %q, %v; want %v", got, err, c.err)
				}
				if errors.Is(err, errdef.ErrNotFound) && !strings.Contains(err.Error(), "2.3.4, 2.3.4+build.10, 2.3.4+build.7, v2.3.5") {
					t.Errorf("error does not list the available versions in order: %v", err)
				}
			} else if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
			if (l.calls > 0) != c.list {
				t.Errorf("repository asked %d times, want asked=%v", l.calls, c.list)
			}
		})
	}
}

func TestVersionListError(t *testing.T) {
	want := errors.New("registry down")
	_, err := resolve.Version(context.Background(), &lister{err: want}, "c", "^1")
	if !errors.Is(err, want) {
		t.Fatal(err)
	}
}

func TestIsConstraint(t *testing.T) {
	for s, want := range map[string]bool{
		"1.0.0": false, "v1.0.0": false, "1.0.0-rc.1+build.7": false, "1.0": false, "1.0.0@sha256:ab": false,
		"~1": true, "^1.2": true, ">1": true, "1.x": true, "1.2.X": true, "*": true, "1 - 2": true, "1 || 2": true, ">=1, <2": true, "!=1.0.0": true,
	} {
		if got := resolve.IsConstraint(s); got != want {
			t.Errorf("IsConstraint(%q) = %v, want %v", s, got, want)
		}
	}
}
