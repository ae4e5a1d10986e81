// Command funclen lists the functions of Go source trees longer than a
// limit, longest first: the figure behind "functions over 80 lines" of the
// code-health notes (issue 14). Test files are left out unless -tests.
//
//	go run ./hack/funclen [-over 80] [-tests] [dir ...]
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type fn struct {
	pos   token.Position
	name  string
	lines int
}

func main() {
	over := flag.Int("over", 80, "list functions with more lines than this")
	tests := flag.Bool("tests", false, "include _test.go files")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	fset := token.NewFileSet()
	var found []fn
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); path != dir && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || (!*tests && strings.HasSuffix(path, "_test.go")) {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
				if n := end.Line - start.Line + 1; n > *over {
					found = append(found, fn{pos: start, name: funcName(fd), lines: n})
				}
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(1)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].lines > found[j].lines })
	for _, f := range found {
		fmt.Printf("%4d %s:%d %s\n", f.lines, f.pos.Filename, f.pos.Line, f.name)
	}
	fmt.Printf("%d functions over %d lines\n", len(found), *over)
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
