package argocd

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/common"
	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/hook"
	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/sync/syncwaves"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// hookDefinition puts the catalog chart in wave 2, its custom resource in
// wave 3, and adds a PostSync Job built from the component's api image.
const hookDefinition = `apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1
kind: ComponentDeployment
metadata: {name: contract}
spec:
  renders:
    - name: catalog
      resource: {name: chart}
      syncWave: 2
      ordering:
        - target: {kind: Product}
          syncWave: 3
  jobs:
    - name: smoke
      render: catalog
      image: {resource: {name: api-image}}
      args: [smoke]
      hook: {type: PostSync, deletePolicy: HookSucceeded}
`

// What Argo CD's own sync engine (gitops-engine, as pinned by Argo CD
// v3.6.2) reads from the plugin's output: Helm hooks mapped as for a native
// Helm source, the definition's waves and hooks, and the CRD placed before
// the objects of the lowest wave.
func TestArgoCDReadsWavesAndHooks(t *testing.T) {
	dir := t.TempDir()
	def := filepath.Join(dir, "definition.yaml")
	writeFile(t, def, hookDefinition)
	cmd := exec.Command("argocd-ocm-plugin", "render", "--repository", filepath.Join(repoRoot, "testdata", "distro", "idp-bundle.tgz"),
		"--component", "example.com/distro/shop", "--version", "2.3.0", "--definition", def, "--release-name", "shop", "--namespace", "shop")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("render: %v: %s", err, stderr.String())
	}
	type seen struct {
		types, policies []string
		wave            int
		isHook          bool
	}
	got := map[string]seen{}
	for _, doc := range strings.Split(stdout.String(), "\n---\n") {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		var s seen
		for _, ht := range hook.Types(u) {
			s.types = append(s.types, string(ht))
		}
		s.wave, s.isHook = syncwaves.Wave(u), hook.IsHook(u)
		if s.isHook { // DeletePolicies reports the default for any object
			for _, p := range hook.DeletePolicies(u) {
				s.policies = append(s.policies, string(p))
			}
		}
		sort.Strings(s.types)
		sort.Strings(s.policies)
		got[u.GetKind()+"/"+u.GetName()] = s
	}
	want := map[string]seen{
		"CustomResourceDefinition/products.catalog.example.com": {wave: 1},
		"Deployment/shop-catalog":                               {wave: 2},
		"StatefulSet/shop-cache":                                {wave: 2},
		"Product/shop-default":                                  {wave: 3},
		// Helm's pre-install,pre-upgrade hook with weight -5: PreSync (twice, as gitops-engine reads it), wave -5.
		"Job/shop-migrate": {types: []string{string(common.HookTypePreSync), string(common.HookTypePreSync)},
			policies: []string{string(common.HookDeletePolicyBeforeHookCreation)}, wave: -5, isHook: true},
		"Job/smoke": {types: []string{string(common.HookTypePostSync)},
			policies: []string{string(common.HookDeletePolicyHookSucceeded)}, wave: 0, isHook: true},
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s missing from the output (have %v)", name, keys(got))
			continue
		}
		if strings.Join(g.types, ",") != strings.Join(w.types, ",") || strings.Join(g.policies, ",") != strings.Join(w.policies, ",") ||
			g.wave != w.wave || g.isHook != w.isHook {
			t.Errorf("%s: gitops-engine reads %+v, want %+v", name, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("objects %v, want %v", keys(got), len(want))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
