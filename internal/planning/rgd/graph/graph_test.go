package graph_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/graph"
)

func decode(t *testing.T, resources string) (*graph.RGD, error) {
	t.Helper()
	return graph.Decode("test", []byte("apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: g}\nspec:\n  schema: {apiVersion: v1alpha1, kind: G, spec: {a: string}}\n  resources:\n"+resources))
}

func cm(id, data string) string {
	return "    - id: " + id + "\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: " + id + "}, data: {v: " + data + "}}\n"
}

// TestAnalyzeOrder: nodes come after what they read, in declaration order
// among the nodes ready next, each a level above the highest node it reads.
func TestAnalyzeOrder(t *testing.T) {
	r, err := decode(t, cm("c", `"${b.data.v}${a.data.v}"`)+cm("a", "x")+cm("b", `"${a.data.v}"`)+cm("d", `"${schema.spec.a}"`))
	if err != nil {
		t.Fatal(err)
	}
	order, level, err := r.Analyze()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range order {
		ids = append(ids, n.ID)
	}
	if got := strings.Join(ids, " "); got != "a b c d" {
		t.Errorf("order: %s", got)
	}
	if level["a"] != 0 || level["d"] != 0 || level["b"] != 1 || level["c"] != 2 {
		t.Errorf("levels: %v", level)
	}
	if deps := order[2].Deps; strings.Join(deps, ",") != "a,b" {
		t.Errorf("deps of c: %v", deps)
	}
}

// TestAnalyzeRefusals: what kro's builder refuses and what a static render
// cannot know, each naming the node.
func TestAnalyzeRefusals(t *testing.T) {
	for want, res := range map[string]string{
		"in a cycle: ":                          cm("a", `"${b.data.v}"`) + cm("b", `"${a.data.v}"`),
		"omit() requires kro's CELOmitFunction": cm("a", `"${omit()}"`),
		"runtime variable":                      cm("a", `"${string(runtime)}"`),
		"reads the status of node a":            cm("a", "x") + cm("b", `"${a.status.x}"`),
		"has no kind":                           "    - id: a\n      template: {apiVersion: v1, metadata: {name: a}}\n",
		"id \"1x\" is not a usable name":        cm("1x", "x"),
		"references unknown identifiers: [int]": cm("a", `"${type(1) == int ? 'a' : 'b'}"`),
		"defined twice":                         cm("a", "x") + cm("a", "y"),
	} {
		r, err := decode(t, res)
		if err == nil {
			_, _, err = r.Analyze()
		}
		if err == nil || !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q, got %v", want, err)
		}
	}
}
