package internal

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/argocd-ocm-plugin/argocd-ocm-plugin/"

// layers reads the list in doc.go: package directory → rank.
func layers(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^//\t(\d+) [a-z ]+: (.+)$`)
	out := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		rank, _ := strconv.Atoi(m[1])
		for _, dir := range strings.Fields(m[2]) {
			if _, dup := out[dir]; dup {
				t.Errorf("doc.go lists %s twice", dir)
			}
			out[dir] = rank
		}
	}
	if len(out) < 40 {
		t.Fatalf("doc.go lists %d packages: the list did not parse", len(out))
	}
	return out
}

// folderRanks: the layers a package under each role folder of internal/ may
// have (doc.go). manifeststest is test support kept beside what it compares,
// as net/http/httptest is; the access-method table is a format the sources own.
var folderRanks = map[string][]int{
	"util": {0}, "format": {1}, "source": {1, 2}, "render": {3, 9}, "finish": {4},
	"planning": {5}, "frontend": {7}, "testsupport": {9},
}

// TestFoldersShowLayers: every package under internal/ lives in the folder of
// its role.
func TestFoldersShowLayers(t *testing.T) {
	for dir, rank := range layers(t) {
		rest, ok := strings.CutPrefix(dir, "internal/")
		if !ok {
			continue
		}
		folder, _, _ := strings.Cut(rest, "/")
		ranks, known := folderRanks[folder]
		if !known {
			t.Errorf("%s is in internal/%s, which is no role folder of internal/doc.go", dir, folder)
			continue
		}
		if !slices.Contains(ranks, rank) {
			t.Errorf("%s has layer %d, but internal/%s holds layers %v: move it to the folder of its role", dir, rank, folder, ranks)
		}
	}
}

// TestLayers: every import between the product's packages goes to the
// importer's layer or below (doc.go), and every package has a layer.
func TestLayers(t *testing.T) {
	rank := layers(t)
	fset := token.NewFileSet()
	seen := map[string]bool{}
	edges := 0
	for _, top := range []string{"internal", "plugin", "cmd"} {
		err := filepath.WalkDir(filepath.Join("..", top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			dir := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(p, ".."+string(filepath.Separator))))
			if dir == "internal" {
				return nil // this package: the list itself
			}
			seen[dir] = true
			from, ok := rank[dir]
			if !ok {
				t.Errorf("%s has no layer in internal/doc.go: add it to the layer of its role", dir)
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				to, ok := strings.CutPrefix(path, module)
				if !ok {
					continue
				}
				edges++
				if r, listed := rank[to]; listed && r > from {
					t.Errorf("%s (layer %d) imports %s (layer %d): an import up the layers of internal/doc.go", p, from, to, r)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for dir := range rank {
		if !seen[dir] {
			t.Errorf("internal/doc.go lists %s, which has no Go file", dir)
		}
	}
	if edges < 100 {
		t.Fatalf("only %d imports between the product's packages: the walk is broken", edges)
	}
}
