package imageguard_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/imageguard"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// FuzzCheck: whatever the rendered output, the guard neither panics nor
// produces more than one short line, and it refuses every workload image of
// a component without images.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		deployment(good), deployment(evil), deployment("ghcr.io/stefanprodan/podinfo@" + dApp),
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}], volumes: [{name: v, image: {reference: y}}]}",
		"apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {jobTemplate: {spec: {template: {spec: {initContainers: [{image: z}]}}}}}",
		"apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec: {template: {spec: {containers: {a: b}}}}",
		"apiVersion: v1\nkind: List\nitems: [{kind: Pod, apiVersion: v1, spec: {containers: [{image: '\\u2028'}]}}]",
		"kind: Thing\nspec: {steps: [{image: [1]}], container: {image: 'a@sha256:" + strings.Repeat("0", 64) + "'}}",
	} {
		f.Add(s)
	}
	g := imageguard.New(descriptor())
	none := imageguard.New(&descriptorWithoutImages)
	f.Fuzz(func(t *testing.T, doc string) {
		objs, err := manifests.Decode("fuzz.yaml", []byte(doc))
		if err != nil {
			return
		}
		for _, guard := range []*imageguard.Guard{g, none} {
			if err := guard.Check(objs); err != nil {
				if !errors.Is(err, errdef.ErrNotAllowed) || strings.ContainsAny(err.Error(), "\n\r") || len(err.Error()) > 3000 {
					t.Fatalf("%q", err)
				}
			}
		}
		refused := map[int]bool{}
		for _, v := range none.Violations(objs) {
			if v.Index < 0 || v.Index >= len(objs) {
				t.Fatalf("violation index %d of %d objects", v.Index, len(objs))
			}
			refused[v.Index] = true
		}
		for i, o := range objs {
			if o["apiVersion"] != "v1" || o["kind"] != "Pod" {
				continue
			}
			spec, _ := o["spec"].(map[string]any)
			list, _ := spec["containers"].([]any)
			for _, c := range list {
				if cm, ok := c.(map[string]any); ok {
					if img, ok := cm["image"].(string); ok && img != "" && !refused[i] {
						t.Fatalf("Pod %d runs %q although the component declares no images", i, img)
					}
				}
			}
		}
	})
}
