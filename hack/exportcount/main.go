// Command exportcount counts the exported names of the Go packages below the
// given directories (non-test files only) and, with -public, lists where the
// exported API of the public packages names a type of a package that is not
// public (a leak: legal Go, but a caller cannot name the type).
//
//	go run ./hack/exportcount -api                   # the public API: per package, total and leaks
//	go run ./hack/exportcount -total -api            # its total only
//	go run ./hack/exportcount internal               # every package below a directory
//
// An exported name is a top-level exported const, var, type or func, or an
// exported method of an exported type; struct fields are counted apart.
// The leak check is syntactic (go/ast): it follows the types written in
// signatures, exported fields and interface methods, not the inferred type of
// `var X = f()`. It uses only the standard library, so it needs no module.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// publicPackages are the module's public Go API (docs/api.md): the root
// package argocdocm and the leaves it exposes. Everything else is internal.
var publicPackages = []string{".", "errdef", "ocm", "signing", "policy", "application"}

type pkgCount struct {
	dir           string
	names, fields int
	leaks         []string
	examples      int
}

func main() {
	total := flag.Bool("total", false, "print only the total of exported names")
	public := flag.String("public", "", "comma-separated public package directories; lists leaks of their API")
	api := flag.Bool("api", false, "count the public API (the root package and its leaves) and list its leaks")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: exportcount [-total] [-public dirs] dir...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 && !*api {
		flag.Usage()
		os.Exit(2)
	}
	module, err := modulePath("go.mod")
	if err != nil {
		fmt.Fprintln(os.Stderr, "exportcount: run from the repository root:", err)
		os.Exit(1)
	}
	pub := parsePublic(*public)
	var counts []*pkgCount
	if *api {
		pub = parsePublic(strings.Join(publicPackages, ","))
		counts, err = countDirs(publicPackages, module, pub)
	} else {
		counts, err = countTrees(flag.Args(), module, pub)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "exportcount:", err)
		os.Exit(1)
	}
	sum, fields, examples := 0, 0, 0
	for _, c := range counts {
		sum += c.names
		fields += c.fields
		examples += c.examples
	}
	if *total {
		fmt.Println(sum)
		return
	}
	for _, c := range counts {
		mark := ""
		if pub[c.dir] {
			mark = " (public)"
		}
		fmt.Printf("%5d names %5d fields %3d examples  %s%s\n", c.names, c.fields, c.examples, c.dir, mark)
	}
	fmt.Printf("%5d names %5d fields %3d examples  total in %d packages\n", sum, fields, examples, len(counts))
	printLeaks(counts, len(pub) > 0)
}

// parsePublic turns the -public flag into a set of package directories.
func parsePublic(public string) map[string]bool {
	pub := map[string]bool{}
	for _, p := range strings.Split(public, ",") {
		if p = strings.Trim(strings.TrimSpace(p), "/"); p != "" {
			pub[p] = true
		}
	}
	return pub
}

// countTrees counts every package directory under the roots, skipping
// testdata and hidden directories.
func countTrees(roots []string, module string, pub map[string]bool) ([]*pkgCount, error) {
	var counts []*pkgCount
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				return nil
			}
			c, err := count(filepath.ToSlash(p), module, pub)
			if err != nil {
				return err
			}
			if c != nil {
				counts = append(counts, c)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// countDirs counts the packages of the given directories, not below them.
func countDirs(dirs []string, module string, pub map[string]bool) ([]*pkgCount, error) {
	var counts []*pkgCount
	for _, d := range dirs {
		c, err := count(d, module, pub)
		if err != nil {
			return nil, err
		}
		if c != nil {
			counts = append(counts, c)
		}
	}
	return counts, nil
}

// importPath is the import path of the package in dir ("." is the root).
func importPath(module, dir string) string {
	if dir == "." || dir == "" {
		return module
	}
	return module + "/" + dir
}

// printLeaks lists the leaks of the public packages, or says there are none
// when public packages were given.
func printLeaks(counts []*pkgCount, anyPublic bool) {
	leaks := 0
	for _, c := range counts {
		for _, l := range c.leaks {
			if leaks == 0 {
				fmt.Println("\nleaks (exported API of a public package naming a non-public package):")
			}
			leaks++
			fmt.Println("  " + l)
		}
	}
	if anyPublic && leaks == 0 {
		fmt.Println("\nno leaks")
	}
}

func modulePath(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(rest), nil
		}
	}
	return "", fmt.Errorf("%s has no module line", gomod)
}

// count parses the non-test Go files of one directory; nil when there are none.
func count(dir, module string, pub map[string]bool) (*pkgCount, error) {
	c := &pkgCount{dir: dir}
	files, exportedTypes, err := parseDir(dir, c)
	if err != nil || files == nil {
		return nil, err
	}
	for _, f := range files {
		leak := func(string, ast.Node) {}
		if pub[dir] {
			leak = leakChecker(c, dir, module, fileImports(f), pub)
		}
		for _, d := range f.Decls {
			countDecl(c, d, exportedTypes, leak)
		}
	}
	sort.Strings(c.leaks)
	return c, nil
}

// parseDir parses the Go files of dir: it counts the examples of its test
// files into c and returns the non-test files (nil when there are none) and
// the names of the exported types they declare.
func parseDir(dir string, c *pkgCount) ([]*ast.File, map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	exportedTypes := map[string]bool{}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		if strings.HasSuffix(name, "_test.go") {
			c.examples += countExamples(f)
			continue
		}
		files = append(files, f)
		addExportedTypes(exportedTypes, f)
	}
	return files, exportedTypes, nil
}

// countExamples counts the Example functions of a test file.
func countExamples(f *ast.File) int {
	n := 0
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
			n++
		}
	}
	return n
}

// addExportedTypes records the exported type names f declares.
func addExportedTypes(exportedTypes map[string]bool, f *ast.File) {
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, s := range g.Specs {
				if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
					exportedTypes[ts.Name.Name] = true
				}
			}
		}
	}
}

// fileImports maps the local name of each import of f to its path.
func fileImports(f *ast.File) map[string]string {
	imports := map[string]string{}
	for _, is := range f.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		name := path.Base(p)
		if is.Name != nil {
			name = is.Name.Name
		}
		imports[name] = p
	}
	return imports
}

// leakChecker returns a function that records in c, once each, every
// reference of a node to a package of module that is not public.
func leakChecker(c *pkgCount, dir, module string, imports map[string]string, pub map[string]bool) func(where string, n ast.Node) {
	seen := map[string]bool{}
	return func(where string, n ast.Node) {
		if n == nil || reflect.ValueOf(n).IsNil() {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			p, ok := imports[x.Name]
			if !ok {
				return true
			}
			if p == module {
				return false // the root package is public
			}
			rel, inModule := strings.CutPrefix(p, module+"/")
			if !inModule || pub[rel] {
				return false
			}
			msg := fmt.Sprintf("%s.%s names %s.%s (%s)", path.Base(dir), where, x.Name, sel.Sel.Name, rel)
			if !seen[msg] {
				seen[msg] = true
				c.leaks = append(c.leaks, msg)
			}
			return false
		})
	}
}

// countDecl counts the exported names and fields of one declaration into c
// and passes the types they expose to leak.
func countDecl(c *pkgCount, d ast.Decl, exportedTypes map[string]bool, leak func(string, ast.Node)) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return
		}
		where := d.Name.Name
		if d.Recv != nil {
			recv := receiverName(d.Recv.List[0].Type)
			if !exportedTypes[recv] {
				return
			}
			where = recv + "." + where
		}
		c.names++
		leak(where, d.Type)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						c.names++
						leak(n.Name, s.Type)
					}
				}
			case *ast.TypeSpec:
				countTypeSpec(c, s, leak)
			}
		}
	}
}

// countTypeSpec counts an exported type and its exported fields into c.
func countTypeSpec(c *pkgCount, s *ast.TypeSpec, leak func(string, ast.Node)) {
	if !s.Name.IsExported() {
		return
	}
	c.names++
	leak(s.Name.Name, s.TypeParams)
	t, ok := s.Type.(*ast.StructType)
	if !ok {
		leak(s.Name.Name, s.Type)
		return
	}
	for _, fl := range t.Fields.List {
		exported := len(fl.Names) == 0 // embedded
		for _, n := range fl.Names {
			if n.IsExported() {
				exported = true
				c.fields++
			}
		}
		if exported {
			leak(s.Name.Name+" field", fl.Type)
		}
	}
}

func receiverName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
