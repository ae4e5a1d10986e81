package generator_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/generator"
)

func appSet(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// KubeAppSets finds the plugin generators that reference the generator's
// ConfigMap, in matrix and merge generators too, in the namespaces it
// watches; Refresh patches Argo CD's refresh annotation and nothing else.
func TestKubeAppSets(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ApplicationSetList"},
		appSet(t, `{apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, metadata: {name: direct, namespace: argocd},
  spec: {generators: [{plugin: {configMapRef: {name: argocd-ocm-generator}, input: {parameters: {repository: ghcr.io/acme/ocm, component: a}}}}]}}`),
		appSet(t, `{apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, metadata: {name: matrix, namespace: argocd},
  spec: {generators: [{matrix: {generators: [{clusters: {}}, {plugin: {configMapRef: {name: argocd-ocm-generator}, input: {parameters: {repository: ghcr.io/acme/ocm, component: b}}}}]}}]}}`),
		appSet(t, `{apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, metadata: {name: other-plugin, namespace: argocd},
  spec: {generators: [{plugin: {configMapRef: {name: someone-else}, input: {parameters: {repository: ghcr.io/acme/ocm, component: a}}}}]}}`),
		appSet(t, `{apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, metadata: {name: list, namespace: argocd},
  spec: {generators: [{list: {elements: [{a: b}]}}]}}`),
		appSet(t, `{apiVersion: argoproj.io/v1alpha1, kind: ApplicationSet, metadata: {name: elsewhere, namespace: unwatched},
  spec: {generators: [{plugin: {configMapRef: {name: argocd-ocm-generator}, input: {parameters: {repository: ghcr.io/acme/ocm, component: a}}}}]}}`),
	)
	k := &generator.KubeAppSets{Client: client, Namespaces: []string{"argocd"}, ConfigMap: "argocd-ocm-generator"}
	sets, err := k.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range sets {
		for _, in := range s.Inputs {
			got[s.Namespace+"/"+s.Name] += in["component"].(string)
		}
	}
	if len(got) != 2 || got["argocd/direct"] != "a" || got["argocd/matrix"] != "b" {
		t.Fatalf("listed %v, want argocd/direct (a) and argocd/matrix (b)", got)
	}
	if err := k.Refresh(context.Background(), "argocd", "matrix"); err != nil {
		t.Fatal(err)
	}
	var patched bool
	for _, a := range client.Actions() {
		if a.GetVerb() != "patch" {
			continue
		}
		p := a.(interface {
			GetPatchType() types.PatchType
			GetPatch() []byte
			GetName() string
		})
		patched = p.GetName() == "matrix" && p.GetPatchType() == types.MergePatchType &&
			string(p.GetPatch()) == `{"metadata":{"annotations":{"argocd.argoproj.io/application-set-refresh":"true"}}}`
	}
	if !patched {
		t.Fatalf("no merge patch of the refresh annotation alone: %v", client.Actions())
	}
}
