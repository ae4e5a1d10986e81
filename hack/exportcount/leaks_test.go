package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The public API (publicPackages: the module's root and its leaves) names no type of a package
// that is not public: a caller could hold such a value but not name its
// type, and the internal package's changes would break it unannounced.
// Fix a leak by moving the contract to internal/, by an Engine option, or
// by a type of the public package (see docs/api.md); a type alias of an
// internal type is a leak too.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	module := atRepoRoot(t)
	counts, err := countDirs(publicPackages, module, parsePublic(strings.Join(publicPackages, ",")))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		for _, l := range c.leaks {
			t.Errorf("leak: %s", l)
		}
	}
}

// The checker finds what a leak can be written as (parameter, result,
// field, embedded field, method, interface method, alias, const and var
// types, type parameter constraint) and nothing else: unexported names,
// bodies, test files and public packages are not leaks.
func TestLeakCheckerFindsEveryForm(t *testing.T) {
	inModule(t, map[string]string{
		"internal/x/x.go":    "package x\n\ntype T int\ntype C interface{ M() }\n",
		"pub/other/other.go": "package other\n\ntype O struct{}\n",
		"pub/p/p_test.go":    "package p\n\nimport \"example.com/m/internal/x\"\n\nfunc Test(x.T) {}\n",
		"pub/p/p.go": `package p

import (
	"example.com/m/internal/x"
	"example.com/m/pub/other"
)

func Param(x.T)            {}
func Result() *x.T         { return nil }
func Body()                { var _ x.T }
func unexported(x.T)       {}
func Public(other.O)       {}
type Fields struct {
	F     []x.T
	x.C
	g     x.T
}
func (Fields) M(map[string]x.T) {}
type I interface{ N() x.T }
type A = x.T
type G[P x.C] struct{}
var V x.T
const K x.T = 0
type hidden struct{ F x.T }
func (hidden) Exported(x.T) {}
`,
	})
	counts, err := countTrees([]string{"pub"}, "example.com/m", map[string]bool{"pub/p": true, "pub/other": true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range counts {
		got = append(got, c.leaks...)
	}
	want := []string{
		"p.A names x.T (internal/x)",
		"p.Fields field names x.C (internal/x)",
		"p.Fields field names x.T (internal/x)",
		"p.Fields.M names x.T (internal/x)",
		"p.G names x.C (internal/x)",
		"p.I names x.T (internal/x)",
		"p.K names x.T (internal/x)",
		"p.Param names x.T (internal/x)",
		"p.Result names x.T (internal/x)",
		"p.V names x.T (internal/x)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("leaks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// atRepoRoot makes the repository's root the working directory and
// returns its module path.
func atRepoRoot(t *testing.T) string {
	t.Helper()
	t.Chdir(filepath.Join("..", ".."))
	module, err := modulePath("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	return module
}

// inModule writes files (by slash path) into a new module example.com/m
// and makes it the working directory.
func inModule(t *testing.T, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.24\n"
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
}
