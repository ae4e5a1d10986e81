package internal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// spellsSyntax are the files that may call strconv.Quote: they spell a
// syntax (a field path's quoted keys, an explanation's values, generated
// YAML), not input quoted in a message.
var spellsSyntax = map[string]bool{
	"errdef/errors.go":                     true, // the helper itself
	"internal/util/fieldpath/fieldpath.go": true,
	"internal/planning/expr/expr.go":       true,
	"internal/planning/explain/report.go":  true,
	"internal/planning/rgd/convert.go":     true,
	"internal/frontend/server/metrics.go":  true, // Prometheus label values (constants)
}

// TestOneQuotingHelper: every input an error quotes goes through
// errdef.Quote (or errdef.Field for a context field, errdef.Cut for text
// shown unquoted), which caps it at errdef.MaxQuoted bytes on a rune
// boundary: product code writes no %q verb and calls strconv.Quote only
// where it spells a syntax. (There were five helpers with caps from 12 to
// 400 bytes, one of which split runes, and %q of unbounded input: a 60 KB
// parameter name gave a 60 KB error line.)
func TestOneQuotingHelper(t *testing.T) {
	root := ".."
	fset := token.NewFileSet()
	var bad []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") ||
				rel == "bench" || rel == "hack" || rel == "internal/testsupport") {
				return filepath.SkipDir // tools and test support quote what they like
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if copiedFromUpstream(f) {
			return nil // kept as upstream wrote it (its tests compare the two)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING && hasQuoteVerb(n.Value) {
					bad = append(bad, fset.Position(n.Pos()).String()+": a %q verb (use %s with errdef.Quote)")
				}
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "strconv" && strings.HasPrefix(n.Sel.Name, "Quote") && !spellsSyntax[rel] {
					bad = append(bad, fset.Position(n.Pos()).String()+": strconv."+n.Sel.Name+" (use errdef.Quote)")
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// copiedFromUpstream reports whether a file says it is a copy of another
// project's ("argocd-ocm-plugin: copied from …", Helm's engine): its
// messages are upstream's, compared with upstream's by its tests.
func copiedFromUpstream(f *ast.File) bool {
	for _, c := range f.Comments {
		if c.Pos() > f.Package {
			break
		}
		if strings.Contains(c.Text(), "argocd-ocm-plugin: copied from ") {
			return true
		}
	}
	return false
}

// hasQuoteVerb reports whether a string literal holds a %q verb (flags,
// width and precision included), not "%%q".
func hasQuoteVerb(lit string) bool {
	s, err := strconv.Unquote(lit)
	if err != nil {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		j := i + 1
		if j < len(s) && s[j] == '%' {
			i = j
			continue
		}
		for j < len(s) && strings.IndexByte("+-# 0123456789.*[]", s[j]) >= 0 {
			j++
		}
		if j < len(s) && s[j] == 'q' {
			return true
		}
		i = j - 1
	}
	return false
}
