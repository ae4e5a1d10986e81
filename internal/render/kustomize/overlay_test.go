package kustomize

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
)

var overlayFixture = filepath.Join("..", "..", "..", "testdata", "kustomize", "overlay")

// fixtureOverlay is testdata/kustomize/overlay/handwritten/kustomization.yaml
// as an Overlay.
func fixtureOverlay() *Overlay {
	return &Overlay{
		Namespace:         "shop",
		NamePrefix:        "team-",
		Labels:            []types.Label{{Pairs: map[string]string{"owner": "platform"}}},
		CommonAnnotations: map[string]string{"example.com/managed-by": "argocd-ocm-plugin"},
		Images: []types.Image{
			{Name: "ghcr.io/example/web", NewName: "registry.internal.example:5000/mirror/web", NewTag: "1.2.3"},
			{Name: "ghcr.io/example/worker", NewName: "registry.internal.example:5000/mirror/worker", Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		},
		Replicas: []types.Replica{{Name: "web", Count: 4}},
		Patches: []types.Patch{
			{Target: &types.Selector{ResId: kindID("Deployment"), LabelSelector: "tier=backend"},
				Patch: "- op: replace\n  path: /spec/template/spec/containers/0/args/1\n  value: priority\n"},
			{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n        - name: sidecar\n          image: docker.io/library/busybox:1.37\n"},
		},
		ConfigMapGenerator: []types.ConfigMapArgs{{GeneratorArgs: types.GeneratorArgs{Name: "app-config", Behavior: "merge",
			KvPairSources: types.KvPairSources{LiteralSources: []string{"LOG_LEVEL=debug", "FEATURE_X=on"}}}}},
	}
}

// The generated overlay builds as the same overlay written by hand and built
// by the kustomize v5.8.2 CLI: merged ConfigMap with a new hash suffix and
// the Deployment's reference following it, images by name, replicas, a
// JSON 6902 patch by label selector, a strategic merge patch by name.
func TestRenderOverlayMatchesHandWritten(t *testing.T) {
	want := manifeststest.ReadFile(t, overlayFixture+".golden.yaml")
	if len(want) != 3 {
		t.Fatalf("golden has %d objects, want 3", len(want))
	}
	tree := readTree(t, tarDir(t, filepath.Join(overlayFixture, "tree")))
	got, err := Render(context.Background(), tree, "overlays/prod", WithOverlay(fixtureOverlay()))
	if err != nil {
		t.Fatal(err)
	}
	manifeststest.Equal(t, got, want)

	// The entry alone is unchanged by the option's existence.
	plain, err := Render(context.Background(), tree, "overlays/prod")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range plain {
		if name := get(t, o, "metadata", "name"); strings.HasPrefix(name.(string), "team-") {
			t.Errorf("without the overlay: %v", name)
		}
	}
}

func TestRenderOverlayRefusals(t *testing.T) {
	tree := readTree(t, tarDir(t, filepath.Join(overlayFixture, "tree")))
	for _, tc := range []struct {
		name  string
		ov    *Overlay
		entry string
		tree  map[string]string
		msg   string
	}{
		{"patch from a file", &Overlay{Patches: []types.Patch{{Path: "../../etc/passwd"}}}, "overlays/prod", nil, "names a file"},
		{"empty patch", &Overlay{Patches: []types.Patch{{}}}, "overlays/prod", nil, "is empty"},
		{"generator reading files", &Overlay{ConfigMapGenerator: []types.ConfigMapArgs{{GeneratorArgs: types.GeneratorArgs{Name: "x",
			KvPairSources: types.KvPairSources{FileSources: []string{"/etc/passwd"}}}}}}, "overlays/prod", nil, "reads files"},
		{"generator env file", &Overlay{ConfigMapGenerator: []types.ConfigMapArgs{{GeneratorArgs: types.GeneratorArgs{Name: "x",
			KvPairSources: types.KvPairSources{EnvSources: []string{"../.env"}}}}}}, "overlays/prod", nil, "reads files"},
		{"bad behavior", &Overlay{ConfigMapGenerator: []types.ConfigMapArgs{{GeneratorArgs: types.GeneratorArgs{Name: "x", Behavior: "clobber"}}}}, "overlays/prod", nil, "behavior"},
		{"plain manifests entry", &Overlay{NamePrefix: "x-"}, "", map[string]string{"cm.yaml": cm}, "plain manifests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := tree
			if tc.tree != nil {
				tr = readTree(t, tarOf(t, files(tc.tree)...))
			}
			objs, err := Render(context.Background(), tr, tc.entry, WithOverlay(tc.ov))
			if !errors.Is(err, errdef.ErrInvalidInput) || !errors.Is(err, errdef.ErrRender) || objs != nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Render = %v, %v; want an invalid input error mentioning %q", objs, err, tc.msg)
			}
		})
	}
}

func kindID(kind string) resid.ResId { return resid.ResId{Gvk: resid.Gvk{Kind: kind}} }

// Values in the overlay are values: YAML in a string field cannot add
// resources or fields to the generated kustomization.
func TestRenderOverlayValuesStayValues(t *testing.T) {
	tree := readTree(t, tarOf(t, files(map[string]string{kfile: "resources: [cm.yaml]\n", "cm.yaml": cm, "secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"})...))
	inject := "x-\nresources: [secret.yaml]\nnamespace: evil"
	// The root entry: the overlay sits beside the tree, not in it (kustomize
	// refuses a base that contains its overlay).
	objs, err := Render(context.Background(), tree, "", WithOverlay(&Overlay{NameSuffix: inject, CommonAnnotations: map[string]string{"a": inject}}))
	if err != nil {
		t.Fatal(err)
	}
	md, _ := objs[0]["metadata"].(map[string]any)
	if len(objs) != 1 || objs[0]["kind"] != "ConfigMap" || md["namespace"] != nil || md["name"] != "cm"+inject {
		t.Fatalf("objects = %v", objs)
	}
	if got := get(t, objs[0], "metadata", "annotations", "a"); got != inject {
		t.Errorf("annotation = %q, want the string as given", got)
	}
}

// GeneratedConfigMaps finds the generators of the entry's bases; a plain
// directory is no kustomization.
func TestGeneratedConfigMaps(t *testing.T) {
	tree := readTree(t, tarDir(t, filepath.Join(overlayFixture, "tree")))
	ok, names, err := GeneratedConfigMaps(tree, "overlays/prod")
	if err != nil || !ok || len(names) != 1 || names[0] != "app-config" {
		t.Errorf("overlays/prod: %v %v %v, want true [app-config]", ok, names, err)
	}
	plain := readTree(t, tarOf(t, files(map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"})...))
	if ok, names, err := GeneratedConfigMaps(plain, ""); err != nil || ok || len(names) != 0 {
		t.Errorf("plain manifests: %v %v %v, want false", ok, names, err)
	}
	if _, _, err := GeneratedConfigMaps(tree, "../x"); err == nil {
		t.Error("an entry escaping the tree is accepted")
	}
}

// SetEntryNames: the overlay's name prefix and suffix replace the entry
// kustomization's own, as Argo CD's `kustomize edit set nameprefix` does
// (travel-mysql, not travel-demo-mysql); prefixes of the entry's bases
// still apply, and without the option the prefixes add up.
func TestOverlaySetEntryNames(t *testing.T) {
	tree := readTree(t, tarOf(t, files(map[string]string{
		"base/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: base-\n",
		"base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mysql}\n",
		"app/kustomization.yaml":  "resources: [../base, svc.yaml]\nnamePrefix: demo-\n# a comment\n",
		"app/svc.yaml":            "apiVersion: v1\nkind: Service\nmetadata: {name: mysql}\n",
	})...))
	names := func(ov *Overlay) []string {
		t.Helper()
		objs, err := Render(context.Background(), tree, "app", WithOverlay(ov))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range objs {
			meta, _ := o["metadata"].(map[string]any)
			name, _ := meta["name"].(string)
			out = append(out, name)
		}
		return out
	}
	if got := strings.Join(names(&Overlay{NamePrefix: "travel-", NameSuffix: "-v1", SetEntryNames: true}), " "); got != "travel-base-mysql-v1 travel-mysql-v1" {
		t.Errorf("set in the entry: got %s", got)
	}
	if got := strings.Join(names(&Overlay{NamePrefix: "travel-"}), " "); got != "travel-demo-base-mysql travel-demo-mysql" {
		t.Errorf("an overlay: got %s", got)
	}
}
