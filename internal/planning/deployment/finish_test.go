package deployment_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
)

// One planner, registered once (as the DefinitionPlanner only), serves many renders
// at once, as in the render server: each render's patches and report are
// its own plan's, which carries them; nothing is shared between renders.
func TestOnePlannerConcurrentRenders(t *testing.T) {
	repo := testCTF(t)
	def := writeFile(t, header+`spec:
  parameters:
    msg: {type: string}
  renders:
  - resource: {name: chart}
    patches:
    - target: {kind: Deployment}
      path: metadata.annotations.msg
      value: '${parameters.msg}'
`)
	var mu sync.Mutex
	reports := map[string]*explain.Report{}
	r := &argocdocm.Renderer{}
	r.Explain = func(x argocdocm.Explanation) {
		rep := x.(*explain.Report)
		mu.Lock()
		defer mu.Unlock()
		reports[rep.Parameters[0].Value.(string)] = rep
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	got := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("render-%d", i)
			res, err := r.Render(context.Background(), argocdocm.Request{Repository: repo, Component: testComponent, Version: "1.0.0",
				DefinitionFile: def, Parameters: map[string]string{"msg": msg}, ReleaseName: "demo"})
			if err != nil {
				errs[i] = err
				return
			}
			for _, o := range res.Objects {
				if o["kind"] == "Deployment" {
					got[i], _ = o["metadata"].(map[string]any)["annotations"].(map[string]any)["msg"].(string)
				}
			}
		}()
	}
	wg.Wait()
	for i := range n {
		want := fmt.Sprintf("render-%d", i)
		if errs[i] != nil {
			t.Fatalf("render %d: %v", i, errs[i])
		}
		if got[i] != want {
			t.Errorf("render %d: Deployment annotation msg = %q, want %q", i, got[i], want)
		}
		rep := reports[want]
		if rep == nil || len(rep.Patches) != 1 || !strings.Contains(fmt.Sprint(rep.Patches[0].Value), want) {
			t.Errorf("render %d: report patches %+v, want the one patch with %q", i, rep, want)
		}
	}
}
