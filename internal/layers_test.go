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

const module = "github.com/argocd-ocm-plugin/argocd-ocm-plugin"

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
	if len(out) < 50 {
		t.Fatalf("doc.go lists %d packages: the list did not parse", len(out))
	}
	return out
}

// folderRanks: the layers a package in each folder may have (doc.go), the
// longest folder prefix deciding. manifeststest is test support kept beside
// what it compares, as net/http/httptest is. "." is the root package alone.
var folderRanks = map[string][]int{
	".": {6}, "errdef": {0}, "ocm": {1}, "signing": {1}, "policy": {2}, "application": {5}, "cmd": {8}, "bench": {10}, "hack": {10},
	"internal/util": {0}, "internal/format": {1}, "internal/source": {2}, "internal/render": {3, 9},
	"internal/finish": {4}, "internal/planning": {5}, "internal/compose": {6}, "internal/frontend": {7},
	"internal/testsupport": {9},
}

// folderOf is the folder of folderRanks that holds package directory dir.
func folderOf(dir string) (string, bool) {
	if dir == "." {
		return ".", true
	}
	for f := dir; f != "."; f = filepath.ToSlash(filepath.Dir(f)) {
		if _, ok := folderRanks[f]; ok {
			return f, true
		}
	}
	return "", false
}

// TestFoldersShowLayers: every package of the module lives in the folder of
// its role.
func TestFoldersShowLayers(t *testing.T) {
	for dir, rank := range layers(t) {
		folder, known := folderOf(dir)
		if !known {
			t.Errorf("%s is in no folder of a layer (folderRanks): move it to the folder of its role", dir)
			continue
		}
		if ranks := folderRanks[folder]; !slices.Contains(ranks, rank) {
			t.Errorf("%s has layer %d, but %s/ holds layers %v: move it to the folder of its role", dir, rank, folder, ranks)
		}
	}
}

// packageImports lists, for every package directory of the module (other
// modules below it, testdata and hidden folders apart), the module imports of
// its non-test files: "file imported-dir" pairs, "." for the root package.
func packageImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && p != root {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		dir := filepath.ToSlash(filepath.Dir(rel))
		if dir == "internal" {
			return nil // this package: the list itself
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if out[dir] == nil {
			out[dir] = []string{}
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == module {
				out[dir] = append(out[dir], filepath.ToSlash(rel)+" .")
			} else if to, ok := strings.CutPrefix(path, module+"/"); ok {
				out[dir] = append(out[dir], filepath.ToSlash(rel)+" "+to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// upward lists the imports that go up the layers, and the packages without a
// layer.
func upward(rank map[string]int, imports map[string][]string) []string {
	var bad []string
	for dir, imps := range imports {
		from, ok := rank[dir]
		if !ok {
			bad = append(bad, dir+" has no layer in internal/doc.go: add it to the layer of its role")
			continue
		}
		for _, imp := range imps {
			file, to, _ := strings.Cut(imp, " ")
			if r, listed := rank[to]; listed && r > from {
				bad = append(bad, file+" (layer "+strconv.Itoa(from)+") imports "+to+" (layer "+strconv.Itoa(r)+"): an import up the layers of internal/doc.go")
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// TestLayers: every import between the module's packages goes to the
// importer's layer or below (doc.go), and every package has a layer.
func TestLayers(t *testing.T) {
	rank := layers(t)
	imports := packageImports(t, "..")
	for _, b := range upward(rank, imports) {
		t.Error(b)
	}
	edges := 0
	for _, imps := range imports {
		edges += len(imps)
	}
	for dir := range rank {
		if _, seen := imports[dir]; !seen {
			t.Errorf("internal/doc.go lists %s, which has no Go file", dir)
		}
	}
	if edges < 300 {
		t.Fatalf("only %d imports between the module's packages: the walk is broken", edges)
	}
}

// TestLayersRefuseAnUpwardImportAnywhere: for every folder of the module, an
// import of the layer just above its package's is refused, so the check
// covers the whole tree and not only internal/.
func TestLayersRefuseAnUpwardImportAnywhere(t *testing.T) {
	rank := layers(t)
	imports := packageImports(t, "..")
	top := 0
	for _, r := range rank {
		top = max(top, r)
	}
	tried := map[string]bool{}
	for dir, from := range rank {
		folder, _ := folderOf(dir)
		if tried[folder] || from == top {
			continue
		}
		var above string
		for d, r := range rank {
			if r > from && (above == "" || r < rank[above]) {
				above = d
			}
		}
		tried[folder] = true
		bad := map[string][]string{}
		for d, imps := range imports {
			bad[d] = imps
		}
		bad[dir] = append(slices.Clone(imports[dir]), dir+"/planted.go "+above)
		if got := upward(rank, bad); len(got) != 1 || !strings.Contains(got[0], "planted.go") {
			t.Errorf("%s importing %s: the check found %v", dir, above, got)
		}
	}
	if len(tried) < len(folderRanks)-2 { // the tools' folders are the top layer
		t.Errorf("tried %d folders of %d", len(tried), len(folderRanks))
	}
}
