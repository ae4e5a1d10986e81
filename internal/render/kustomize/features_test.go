package kustomize

import (
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
)

var featuresTree = filepath.Join(testdataDir, "features", "tree")

// featuresOverlay is testdata/kustomize/features/handwritten/kustomization.yaml
// as an Overlay: the features the first fixture leaves out.
func featuresOverlay() *Overlay {
	return &Overlay{
		Namespace:         "shop",
		NameSuffix:        "-eu",
		Labels:            []types.Label{{Pairs: map[string]string{"owner": "platform"}}},
		CommonAnnotations: map[string]string{"example.com/team": "payments"},
		Replicas:          []types.Replica{{Name: "web", Count: 5}},
		Components:        []string{"components/ha"},
		Patches: []types.Patch{{Target: &types.Selector{ResId: kindID("Deployment"), LabelSelector: "tier=frontend"},
			Patch: "- op: add\n  path: /spec/template/spec/containers/0/args\n  value: [\"--verbose\"]\n"}},
		SecretGenerator: []types.SecretArgs{{GeneratorArgs: types.GeneratorArgs{Name: "app-secret", Behavior: "merge",
			KvPairSources: types.KvPairSources{LiteralSources: []string{"PASSWORD=from-the-definition"}}}}},
		ConfigMapGenerator: []types.ConfigMapArgs{{GeneratorArgs: types.GeneratorArgs{Name: "app-config", Behavior: "merge",
			KvPairSources: types.KvPairSources{LiteralSources: []string{"LOG_LEVEL=debug"}}}}},
	}
}

// secretGenerator with behavior merge (the Secret's hash suffix recomputed,
// the Deployment's secretRef following), components of the tree,
// nameSuffix, labels without selectors, replicas after a component's patch,
// a JSON patch by label selector: as the kustomize CLI builds the same
// overlay written by hand.
func TestRenderOverlayFeaturesMatchCLI(t *testing.T) {
	want := cliGolden(t, "features", "features/handwritten over features/tree", func(dir string) string {
		copyInto(t, dir, "features", "features")
		return "features/handwritten"
	})
	if len(want) != 4 {
		t.Fatalf("golden has %d objects, want 4", len(want))
	}
	tree := readTree(t, tarDir(t, featuresTree))
	got, err := Render(context.Background(), tree, "overlays/prod", WithOverlay(featuresOverlay()))
	if err != nil {
		t.Fatal(err)
	}
	manifeststest.Equal(t, got, want)
	m := byKey(t, got)
	var secret string
	for k := range m {
		if strings.Contains(k, "Secret") {
			secret = k
		}
	}
	if got := get(t, m[secret], "data", "PASSWORD"); got != base64.StdEncoding.EncodeToString([]byte("from-the-definition")) {
		t.Errorf("merged PASSWORD = %v", got)
	}
}

// A failing build never shows a secret literal of the overlay: not as
// given, not base64-encoded.
func TestRenderOverlaySecretValuesStayOutOfErrors(t *testing.T) {
	tree := readTree(t, tarDir(t, featuresTree))
	const value = "s3cr3t-do-not-print"
	for _, tc := range []struct {
		name string
		args types.SecretArgs
	}{
		{"merge into a Secret the tree does not generate", types.SecretArgs{GeneratorArgs: types.GeneratorArgs{Name: "nope", Behavior: "merge",
			KvPairSources: types.KvPairSources{LiteralSources: []string{"PASSWORD=" + value}}}}},
		{"literal without a key", types.SecretArgs{GeneratorArgs: types.GeneratorArgs{Name: "app-secret", Behavior: "merge",
			KvPairSources: types.KvPairSources{LiteralSources: []string{value}}}}},
		{"invalid key", types.SecretArgs{GeneratorArgs: types.GeneratorArgs{Name: "app-secret", Behavior: "merge",
			KvPairSources: types.KvPairSources{LiteralSources: []string{"bad key=" + value}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Render(context.Background(), tree, "overlays/prod", WithOverlay(&Overlay{SecretGenerator: []types.SecretArgs{tc.args}}))
			if err == nil || objs != nil || !errors.Is(err, errdef.ErrRender) {
				t.Fatalf("Render = %d objects, %v; want an error", len(objs), err)
			}
			msg := err.Error()
			if strings.Contains(msg, value) || strings.Contains(msg, base64.StdEncoding.EncodeToString([]byte(value))) || strings.Contains(msg, "\n") {
				t.Errorf("error shows the secret value or spans lines: %s", msg)
			}
		})
	}
}

func TestRenderOverlayComponentRefusals(t *testing.T) {
	tree := readTree(t, tarDir(t, featuresTree))
	for _, c := range []string{"../outside", "/etc", "", "components/none"} {
		objs, err := Render(context.Background(), tree, "overlays/prod", WithOverlay(&Overlay{Components: []string{c}}))
		if err == nil || objs != nil {
			t.Errorf("component %q: Render = %d objects, %v; want an error", c, len(objs), err)
		}
	}
	objs, err := Render(context.Background(), tree, "overlays/prod", WithOverlay(&Overlay{SecretGenerator: []types.SecretArgs{{GeneratorArgs: types.GeneratorArgs{Name: "x",
		KvPairSources: types.KvPairSources{FileSources: []string{"/var/run/secrets/kubernetes.io/serviceaccount/token"}}}}}}))
	if !errors.Is(err, errdef.ErrInvalidInput) || objs != nil || !strings.Contains(err.Error(), "reads files") {
		t.Errorf("secretGenerator reading a file: %v", err)
	}
}

// The overlay internal/planning/deployment generates for a Secret patch: the golden
// internal/planning/deployment's TestKustomizeSecretPatchAsOverlay compares with.
func TestRenderOverlaySecretMergeMatchesCLI(t *testing.T) {
	want := cliGolden(t, "features-secret", "features/handwritten-secret over features/tree", func(dir string) string {
		copyInto(t, dir, "features", "features")
		return "features/handwritten-secret"
	})
	tree := readTree(t, tarDir(t, featuresTree))
	got, err := Render(context.Background(), tree, "overlays/prod", WithOverlay(&Overlay{SecretGenerator: []types.SecretArgs{{GeneratorArgs: types.GeneratorArgs{
		Name: "app-secret", Behavior: "merge", KvPairSources: types.KvPairSources{LiteralSources: []string{"PASSWORD=correct-horse-battery"}}}}}}))
	if err != nil {
		t.Fatal(err)
	}
	manifeststest.Equal(t, got, want)
}
