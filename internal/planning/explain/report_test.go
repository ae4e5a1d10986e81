package explain_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

var update = flag.Bool("update", false, "rewrite testdata/config/golden/report.txt")

// The report as people read it, at the package's boundary: a report built
// by hand (no planner) written to text, compared with a golden. (A secret
// parameter is a reference; the planner writes a secret patch's value as
// "(secret)" before it reaches the report.)
func TestReportText(t *testing.T) {
	wave := -1
	r := &explain.Report{Component: "example.com/shop", Version: "1.2.0", Definition: "deployment definition resource definition (ComponentDeployment shop)",
		Parameters: []explain.ParamValue{{Name: "replicas", Type: "integer", Value: 3, From: "instance"},
			{Name: "password", Type: "secret", Value: map[string]any{"secretName": "db", "key": "password"}, From: "instance", Secret: true}},
		Renders: []explain.RenderReport{{Name: "api", Resource: "chart", Type: "helmChart", ReleaseName: "shop", Namespace: "shop",
			Values: []explain.Leaf{{Path: "replicaCount", Value: 3, History: []explain.Origin{
				{Layer: explain.LayerInstance, Source: "spec.renders[0].values.replicaCount", Expr: "${parameters.replicas}", Value: 3}}}}}},
		Patches: []explain.PatchReport{{Render: "api", Source: "spec.renders[0].patches[0]", Path: "stringData.PASSWORD", Value: "(secret)",
			Objects: []string{"v1 Secret shop/db"}, Secret: true}},
		Jobs: []explain.JobReport{{Name: "shop-migrate", Resource: "api-image", Image: "ghcr.io/example/api:1", Hook: "PreSync (BeforeHookCreation)", Wave: &wave}},
	}
	r.AddOrdering([]manifests.Object{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "api", "namespace": "shop",
			"annotations": map[string]any{"argocd.argoproj.io/sync-wave": "2"}}},
	})
	r.AddNote("Kubernetes version 1.31.0 (--kube-version)")
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "..", "testdata", "config", "golden", "report.txt")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/planning/explain -update writes it)", err)
	}
	if buf.String() != string(want) {
		t.Errorf("report differs from %s:\n%s", path, buf.String())
	}
}
