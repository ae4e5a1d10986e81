package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/pipeline"
)

// Without a planner of definitions, a request that names a definition or
// instance parameters is refused before anything is fetched: rendered
// anyway, they would be ignored.
func TestEngineRefusesWhatOnlyAPlannerHonours(t *testing.T) {
	base := pipeline.Request{Repository: fixtures.Path(t, "ctf"), Component: "example.com/fixtures/podinfo-app", Version: "1.0.0", Resources: []string{"chart"}}
	for name, mod := range map[string]func(*pipeline.Request){
		"definition": func(r *pipeline.Request) { r.DefinitionFile = "/nonexistent" },
		"parameters": func(r *pipeline.Request) { r.Parameters = map[string]string{"unknown": "x"} },
	} {
		t.Run(name, func(t *testing.T) {
			req := base
			mod(&req)
			e := pipeline.NewEngine(pipeline.WithBlobCacheDir(""))
			res, err := e.Render(context.Background(), req, nil)
			if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "planner") {
				t.Fatalf("got %v, %v: want ErrInvalidInput naming the missing planner", res, err)
			}
		})
	}
	if _, err := pipeline.NewEngine(pipeline.WithBlobCacheDir("")).Render(context.Background(), base, nil); err != nil {
		t.Fatalf("the plain request: %v", err)
	}
}
