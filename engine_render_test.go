package argocdocm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
)

// The public API renders as the plugin does: Engine.Render applies a
// deployment definition and its instance parameters, and refuses a missing
// definition or an unknown parameter (rendered anyway, they would be
// ignored).
func TestEngineRenderHonoursDefinitionsAndParameters(t *testing.T) {
	def := filepath.Join(t.TempDir(), "definition.yaml")
	if err := os.WriteFile(def, []byte(`apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1
kind: ComponentDeployment
metadata: {name: podinfo}
spec:
  parameters:
    replicas: {type: integer, default: 1}
  renders:
  - resource: {name: chart}
    values:
      replicaCount: ${parameters.replicas}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := argocdocm.Request{Repository: fixtures.Path(t, "ctf"), Component: "example.com/fixtures/podinfo-app", Version: "1.0.0", Resources: []string{"chart"}}
	for name, tc := range map[string]struct {
		mod     func(*argocdocm.Request)
		mention string
	}{
		"missing definition": {func(r *argocdocm.Request) { r.DefinitionFile = "/nonexistent" }, `definition "/nonexistent"`},
		"unknown parameter":  {func(r *argocdocm.Request) { r.Parameters = map[string]string{"unknown": "x"} }, "unknown"},
		"unknown parameter of the definition": {func(r *argocdocm.Request) {
			r.DefinitionFile, r.Parameters = def, map[string]string{"replica": "3"}
		}, "parameter replica: not declared"},
	} {
		t.Run(name, func(t *testing.T) {
			req := base
			tc.mod(&req)
			res, err := argocdocm.NewEngine(argocdocm.WithBlobCacheDir("")).Render(context.Background(), req, nil)
			if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), tc.mention) || res != nil {
				t.Fatalf("got %v, %v: want ErrInvalidInput naming %s", res, err, tc.mention)
			}
		})
	}
	req := base
	req.DefinitionFile, req.Parameters = def, map[string]string{"replicas": "3"}
	res, err := argocdocm.NewEngine(argocdocm.WithBlobCacheDir("")).Render(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	var replicas []any
	for _, o := range res.Objects {
		if o["kind"] == "Deployment" {
			replicas = append(replicas, testutil.Dig(o, "spec", "replicas"))
		}
	}
	if len(replicas) != 1 || replicas[0] != int64(3) && replicas[0] != float64(3) && replicas[0] != 3 {
		t.Errorf("Deployment replicas %v: want the parameter's 3", replicas)
	}
}
