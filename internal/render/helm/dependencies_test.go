package helm

import (
	"testing"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// TestMissingDependenciesIsHelms checks the copy of action.CheckDependencies
// against Helm's own function (a test may link the action package; the
// plugin does not).
func TestMissingDependenciesIsHelms(t *testing.T) {
	sub := func(name string) *chart.Chart {
		return &chart.Chart{Metadata: &chart.Metadata{Name: name, Version: "1.0.0", APIVersion: chart.APIVersionV2}}
	}
	withDeps := func(subs ...string) *chart.Chart {
		c := sub("parent")
		for _, s := range subs {
			c.AddDependency(sub(s))
		}
		return c
	}
	dep := func(name, alias string) *chart.Dependency {
		return &chart.Dependency{Name: name, Alias: alias, Version: "1.0.0"}
	}
	for _, tc := range []struct {
		name    string
		c       *chart.Chart
		reqs    []*chart.Dependency
		wantErr bool
	}{
		{"no requirements", withDeps(), nil, false},
		{"all packaged", withDeps("a", "b"), []*chart.Dependency{dep("a", ""), dep("b", "")}, false},
		{"one missing", withDeps("a"), []*chart.Dependency{dep("a", ""), dep("b", "")}, true},
		{"all missing, in order", withDeps(), []*chart.Dependency{dep("z", ""), dep("a", ""), dep("m", "")}, true},
		{"alias does not count, the name does", withDeps("a"), []*chart.Dependency{dep("a", "x"), dep("x", "a")}, true},
		{"the same name twice", withDeps(), []*chart.Dependency{dep("a", ""), dep("a", "b")}, true},
		{"extra packaged subchart", withDeps("a", "extra"), []*chart.Dependency{dep("a", "")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := missingDependencies(tc.c, tc.reqs)
			reqs := make([]helmchart.Dependency, len(tc.reqs))
			for i, r := range tc.reqs {
				reqs[i] = r
			}
			want := action.CheckDependencies(tc.c, reqs)
			if (got != nil) != tc.wantErr || (want != nil) != tc.wantErr {
				t.Fatalf("got %v, Helm %v; want an error: %v", got, want, tc.wantErr)
			}
			if got != nil && got.Error() != want.Error() {
				t.Fatalf("message %q, Helm's %q", got, want)
			}
		})
	}
}
