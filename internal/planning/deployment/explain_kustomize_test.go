package deployment_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
)

// kustomizeExplainDefinition is a real definition file whose lines say
// which overlay entries --explain must trace to them ("# @images[0]").
var kustomizeExplainDefinition = filepath.Join(repoRoot, "testdata", "config", "explain", "kustomize.yaml")

// explainKustomize renders kustomizeExplainDefinition over the features
// tree with automatic localisation and returns the report.
func explainKustomize(t *testing.T) *explain.Report {
	t.Helper()
	repo := overlayCTF(t,
		ocmbuild.Resource{Name: "app", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: dirTar(t, filepath.Join(repoRoot, "testdata", "kustomize", "features", "tree"))},
		ocmbuild.Resource{Name: "web", Type: "ociImage", Version: "1.0.0", Access: map[string]any{"type": "ociArtifact", "imageReference": "mirror.example:5000/copy/web:1.0.0"}})
	var report *explain.Report
	_, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), argocdocm.Request{
		Repository: repo, Component: overlayComponent, Version: "1.0.0", DefinitionFile: kustomizeExplainDefinition})
	if err != nil {
		t.Fatal(err)
	}
	return report
}

// --explain of a kustomize render, as a golden (go test ./internal/planning/deployment
// -update rewrites testdata/config/golden/kustomize-explain.txt): the
// entry path and namespace rules with their definition lines, the overlay
// namespace rule, and the generated overlay with the origin of every entry
// (definition lines, the patch a generator merge comes from, the image
// resource of a localised image, the entry path).
func TestExplainKustomizeGolden(t *testing.T) {
	var text strings.Builder
	if err := explainKustomize(t).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	got := text.String()
	path := filepath.Join(repoRoot, "testdata", "config", "golden", "kustomize-explain.txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("--explain differs from %s (rewrite it with -update and review the change):\n%s", path, got)
	}
}

var definitionLineRE = regexp.MustCompile(`definition line (\d+), column (\d+)`)

// Every line --explain names for the overlay points at the line of the
// real definition file that writes the entry (its "@" marker), at the
// column where the entry starts; every marked entry is named, and so are
// the lines of the render's path and namespace.
func TestExplainKustomizeLines(t *testing.T) {
	report := explainKustomize(t)
	data, err := os.ReadFile(kustomizeExplainDefinition)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	marked := map[string]int{} // marker -> line
	for i, l := range lines {
		_, markers, ok := strings.Cut(l, "# @")
		if !ok {
			continue
		}
		for _, m := range strings.Fields("@" + markers) {
			marked[strings.TrimPrefix(m, "@")] = i + 1
		}
	}
	check := func(entry, origin string) {
		t.Helper()
		m := definitionLineRE.FindStringSubmatch(origin)
		if m == nil {
			t.Errorf("%s: %q names no definition line", entry, origin)
			return
		}
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		if want, ok := marked[entry]; !ok || want != line {
			t.Errorf("%s: %q, want line %d (the line marked @%s)", entry, origin, want, entry)
			return
		}
		if l := lines[line-1]; col < 1 || col > len(l) || l[col-1] == ' ' || (col > 1 && !strings.ContainsRune(" -{[", rune(l[col-2]))) {
			t.Errorf("%s: column %d of line %d %q is not where an entry starts", entry, col, line, l)
		}
		delete(marked, entry)
	}
	rr := report.Renders[0]
	check("path", rr.PathAt)
	check("render-namespace", rr.NamespaceAt)
	for entry, origin := range overlayComments(t, rr.Overlay) {
		if definitionLineRE.MatchString(origin) {
			check(entry, origin)
		}
	}
	for entry, line := range marked {
		t.Errorf("line %d: --explain does not name it for %s:\n%s", line, entry, rr.Overlay)
	}
}

// overlayComments reads the comments of the overlay --explain shows, by
// the entry they are on, in overlay.Origins' spelling.
func overlayComments(t *testing.T, text string) map[string]string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("the overlay --explain shows is not YAML: %v\n%s", err, text)
	}
	out := map[string]string{}
	note := func(p fieldpath.Path, nodes ...*yaml.Node) {
		var cs []string
		for _, n := range nodes {
			cs = append(cs, n.HeadComment, n.LineComment)
		}
		if c := strings.TrimSpace(strings.Join(cs, " ")); c != "" {
			out[p.String()] = c
		}
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		p := fieldpath.Key(k.Value)
		switch v.Kind {
		case yaml.ScalarNode:
			note(p, v)
		case yaml.SequenceNode:
			for j, e := range v.Content {
				nodes := []*yaml.Node{e}
				if e.Kind == yaml.MappingNode && len(e.Content) > 0 {
					nodes = append(nodes, e.Content[0])
				}
				note(p.Index(j), nodes...)
			}
		case yaml.MappingNode:
			for j := 0; j+1 < len(v.Content); j += 2 {
				note(p.Child(v.Content[j].Value), v.Content[j+1])
			}
		}
	}
	return out
}
