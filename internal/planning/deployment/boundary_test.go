package deployment_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/application"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/plantest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// The deployment-definition planner at its own boundary: a component held
// in memory, read through a fake reader, planned into golden plans (no
// render: the pipeline's end-to-end goldens are golden_test.go's and the
// root package's).
func TestPlanAtItsBoundary(t *testing.T) {
	definition := `apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1
kind: ComponentDeployment
metadata: {name: shop}
spec:
  parameters:
    replicas: {type: integer, default: 1}
    prefix: {type: string, default: shop-}
  renders:
  - name: api
    resource: {name: chart}
    syncWave: 2
    values:
      replicaCount: ${parameters.replicas}
    ordering:
    - target: {kind: Job}
      syncWave: 3
  - name: web
    resource: {name: tree}
    path: overlays/prod
    kustomize:
      namePrefix: ${parameters.prefix}
      commonAnnotations: {team: shop}
  jobs:
  - name: ${app.name}-migrate
    render: api
    image: {resource: {name: api-image}}
    args: [migrate, "--replicas=${parameters.replicas}"]
`
	component := func() *plantest.Component {
		c := plantest.NewComponent("example.com/shop", "1.2.0",
			plantest.Resource("chart", plan.TypeHelmChart), plantest.Resource("tree", plan.TypeDirectoryTree),
			plantest.Resource("definition", deployment.ResourceType), plantest.Resource("api-image", "ociImage"))
		c.D.Resources[3].Access = ocm.Access{Type: "ociArtifact", Fields: map[string]any{"imageReference": "ghcr.io/example/shop-api:1.2.0"}}
		c.Docs["definition"] = definition
		c.Values["chart"] = map[string]any{"replicaCount": 1, "image": map[string]any{"repository": "ghcr.io/example/shop-api"}}
		c.Trees["tree"] = map[string]string{
			"base/kustomization.yaml":          "resources: [deployment.yaml]\n",
			"base/deployment.yaml":             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			"overlays/prod/kustomization.yaml": "resources: [../../base]\n",
		}
		return c
	}
	request := application.Request{Application: "shop", Component: "example.com/shop", Version: "1.2.0", ReleaseName: "shop", Namespace: "shop"}
	for _, tc := range []struct {
		name   string
		cv     func() *plantest.Component
		mod    func(*application.Request)
		golden string
	}{
		{"shipped definition, defaults", component, nil, "shipped-defaults.yaml"},
		{"shipped definition, parameters", component, func(r *application.Request) {
			r.Parameters = map[string]string{"replicas": "3", "prefix": "blue-"}
		}, "shipped-parameters.yaml"},
		{"one render selected", component, func(r *application.Request) { r.Resources = []string{"tree"} }, "selected-tree.yaml"},
		{"no definition", func() *plantest.Component {
			c := component()
			c.D.Resources = c.D.Resources[:1]
			return c
		}, func(r *application.Request) { r.Values = map[string]any{"replicaCount": 2} }, "no-definition.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request
			if tc.mod != nil {
				tc.mod(&req)
			}
			reader := &plantest.Reader{}
			p, err := (&deployment.DefinitionPlanner{}).Plan(context.Background(), tc.cv(), plan.Input{Request: req, Reader: reader})
			if err != nil {
				t.Fatal(err)
			}
			plantest.Golden(t, p, filepath.Join(repoRoot, "testdata", "config", "plans", tc.golden), *update)
			if definitions := tc.golden != "no-definition.yaml"; definitions && reader.Reads == 0 {
				t.Error("the planner read its definition through no reader")
			}
		})
	}

	// Refusals at the boundary: what only a definition honours, a parameter
	// it does not declare, a value of the wrong type.
	for _, tc := range []struct {
		name    string
		cv      func() *plantest.Component
		mod     func(*application.Request)
		mention string
	}{
		{"unknown parameter", component, func(r *application.Request) { r.Parameters = map[string]string{"replica": "3"} }, "replica"},
		{"parameter of the wrong type", component, func(r *application.Request) { r.Parameters = map[string]string{"replicas": "three"} }, "replicas"},
		{"parameters without a definition", func() *plantest.Component {
			c := component()
			c.D.Resources = c.D.Resources[:1]
			return c
		}, func(r *application.Request) { r.Parameters = map[string]string{"replicas": "3"} }, "replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request
			tc.mod(&req)
			_, err := (&deployment.DefinitionPlanner{}).Plan(context.Background(), tc.cv(), plan.Input{Request: req, Reader: &plantest.Reader{}})
			if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("got %v, want ErrInvalidInput naming %s", err, tc.mention)
			}
		})
	}
}
