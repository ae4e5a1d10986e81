package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// The same rule as TestPublicAPINamesNoInternalType, checked on the types
// the compiler exports rather than on the text: it also sees what the text
// does not name, such as the type of `var X = internal.New()` or the fields
// and methods promoted from an unexported embedded type.
func TestPublicAPITypesNameNoInternalType(t *testing.T) {
	module := atRepoRoot(t)
	for _, l := range exportedTypeLeaks(t, module, publicPackages) {
		t.Errorf("leak: %s", l)
	}
}

// The type check finds what the text hides, and only that.
func TestTypeLeaksFindsWhatTheTextMisses(t *testing.T) {
	inModule(t, map[string]string{
		"internal/x/x.go": "package x\n\ntype T struct{ N int }\n\nfunc New() *T { return &T{} }\n",
		"pub/p/p.go": `package p

import "example.com/m/internal/x"

var V = x.New()

type inner struct{ F x.T }

func (inner) M() x.T { return x.T{} }

type Outer struct{ inner }

type hidden struct{ G x.T }

func Hidden() hidden { return hidden{} }

var private = x.New()

func Fine() int { return private.N }
`,
	})
	got := exportedTypeLeaks(t, "example.com/m", []string{"pub/p"})
	want := []string{
		"p.Hidden.G names example.com/m/internal/x.T",
		"p.Outer.F names example.com/m/internal/x.T",
		"p.Outer.M names example.com/m/internal/x.T",
		"p.V names example.com/m/internal/x.T",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("leaks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// exportedTypeLeaks compiles the public packages (directories of module, in
// the working directory; "." is the module's root) and lists the leaks of
// their exported API: every other package of module is not public.
func exportedTypeLeaks(t *testing.T, module string, dirs []string) []string {
	t.Helper()
	args := []string{"list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}"}
	pub := map[string]bool{}
	for _, d := range dirs {
		args = append(args, "./"+d)
		pub[importPath(module, d)] = true
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok && file != "" {
			exports[path] = file
		}
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	isPublic := func(p string) bool { return pub[p] }
	var public []string
	for p := range exports {
		if isPublic(p) {
			public = append(public, p)
		}
	}
	sort.Strings(public)
	if len(public) == 0 {
		t.Fatalf("none of the packages %v compiled", dirs)
	}
	var leaks []string
	for _, p := range public {
		pkg, err := imp.Import(p)
		if err != nil {
			t.Fatal(err)
		}
		leaks = append(leaks, typeLeaks(pkg, module, isPublic)...)
	}
	return leaks
}

// typeLeaks lists where the exported API of pkg reaches a named type of a
// package of module that isPublic refuses.
func typeLeaks(pkg *types.Package, module string, isPublic func(string) bool) []string {
	var leaks []string
	seen := map[*types.Named]bool{} // of pkg: each is walked once, and cycles end
	reported := map[string]bool{}   // a promoted method is in several method sets
	var walk func(where string, t types.Type)
	walk = func(where string, t types.Type) {
		if t == nil {
			return
		}
		switch t := t.(type) {
		case *types.Alias:
			walk(where, types.Unalias(t))
		case *types.Named:
			obj := t.Obj()
			if obj.Pkg() != nil && strings.HasPrefix(obj.Pkg().Path(), module+"/") && !isPublic(obj.Pkg().Path()) {
				if msg := fmt.Sprintf("%s names %s.%s", where, obj.Pkg().Path(), obj.Name()); !reported[msg] {
					reported[msg] = true
					leaks = append(leaks, msg)
				}
				return
			}
			for i := range t.TypeArgs().Len() {
				walk(where, t.TypeArgs().At(i))
			}
			if obj.Pkg() != pkg || seen[t] {
				return // another public package, the standard library or a dependency; or walked
			}
			seen[t] = true
			walk(where, t.Underlying())
			for _, recv := range []types.Type{t, types.NewPointer(t)} {
				ms := types.NewMethodSet(recv)
				for i := range ms.Len() {
					if m := ms.At(i).Obj(); m.Exported() {
						walk(where+"."+m.Name(), m.Type())
					}
				}
			}
		case *types.Pointer:
			walk(where, t.Elem())
		case *types.Slice:
			walk(where, t.Elem())
		case *types.Array:
			walk(where, t.Elem())
		case *types.Map:
			walk(where, t.Key())
			walk(where, t.Elem())
		case *types.Chan:
			walk(where, t.Elem())
		case *types.Signature:
			for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
				for i := range tup.Len() {
					walk(where, tup.At(i).Type())
				}
			}
		case *types.Struct:
			for i := range t.NumFields() {
				switch f := t.Field(i); {
				case f.Embedded():
					walk(where, f.Type()) // its fields and methods are promoted
				case f.Exported():
					walk(where+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for i := range t.NumMethods() {
				if m := t.Method(i); m.Exported() {
					walk(where+"."+m.Name(), m.Type())
				}
			}
			for i := range t.NumEmbeddeds() {
				walk(where, t.EmbeddedType(i))
			}
		case *types.TypeParam:
			walk(where, t.Constraint())
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		if obj := scope.Lookup(name); obj.Exported() {
			where := pkg.Name() + "." + name
			if tn, ok := obj.(*types.TypeName); ok && tn.IsAlias() {
				walk(where, tn.Type())
				continue
			}
			walk(where, obj.Type())
		}
	}
	sort.Strings(leaks)
	return leaks
}
