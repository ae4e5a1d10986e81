package kustomize

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"

// The no-path rules: without an entry path, a root kustomization is built,
// a tree without any kustomization is plain manifests, and a tree whose
// kustomizations are all below the root is refused with the entries found,
// overlays (named by no other kustomization) first.
func TestRenderWithoutEntryPath(t *testing.T) {
	overlays := map[string]string{
		"base/" + kfile:               "resources: [deploy.yaml]\n",
		"base/deploy.yaml":            deploy,
		"overlays/prod/" + kfile:      "resources: [../../base]\npatches:\n  - path: replicas.yaml\n",
		"overlays/prod/replicas.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n",
		"overlays/dev/Kustomization":  "resources: [../../base]\n",
		"components/x/" + kfile:       "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
		"README.md":                   "# tree\n",
	}
	t.Run("kustomizations only below the root", func(t *testing.T) {
		objs, err := Render(context.Background(), readTree(t, tarOf(t, files(overlays)...)), "")
		var ne *NoEntryError
		if !errors.As(err, &ne) || !errors.Is(err, errdef.ErrInvalidInput) || !errors.Is(err, errdef.ErrRender) || objs != nil {
			t.Fatalf("Render = %v, %v; want a NoEntryError", objs, err)
		}
		want := "(components/x, overlays/dev, overlays/prod, base)"
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "4 below it") || !strings.Contains(err.Error(), "choose one") {
			t.Errorf("err = %v, want the entries %s and how to choose", err, want)
		}
	})
	t.Run("chosen entry builds", func(t *testing.T) {
		objs, err := Render(context.Background(), readTree(t, tarOf(t, files(overlays)...)), "overlays/prod")
		if err != nil || len(objs) != 1 || fmt.Sprint(get(t, objs[0], "spec", "replicas")) != "3" {
			t.Fatalf("Render = %v, %v", objs, err)
		}
	})
	t.Run("explicit root is plain manifests", func(t *testing.T) {
		// "." is a choice: the root as plain manifests, where a
		// kustomization file is no manifest.
		objs, err := Render(context.Background(), readTree(t, tarOf(t, files(overlays)...)), ".")
		if !errors.Is(err, errdef.ErrInvalidInput) || objs != nil || !strings.Contains(err.Error(), "base/kustomization.yaml") {
			t.Fatalf("Render = %v, %v", objs, err)
		}
	})
	t.Run("root kustomization", func(t *testing.T) {
		m := map[string]string{kfile: "resources: [overlays/prod]\n"}
		for k, v := range overlays {
			m[k] = v
		}
		m["overlays/prod/"+kfile] = "resources: [../../base]\n"
		objs, err := Render(context.Background(), readTree(t, tarOf(t, files(m)...)), "")
		if err != nil || len(objs) != 1 || get(t, objs[0], "kind") != "Deployment" {
			t.Fatalf("Render = %v, %v", objs, err)
		}
	})
	t.Run("no kustomization anywhere", func(t *testing.T) {
		m := map[string]string{"a/deploy.yaml": deploy, "b/c/cm.yaml": cm, "notes.txt": "x"}
		objs, err := Render(context.Background(), readTree(t, tarOf(t, files(m)...)), "")
		if err != nil || len(objs) != 2 {
			t.Fatalf("Render = %v, %v; want the two manifests", objs, err)
		}
	})
	t.Run("directory named like a kustomization file is not one", func(t *testing.T) {
		m := map[string]string{"x/kustomization.yaml/cm.yaml": cm}
		objs, err := Render(context.Background(), readTree(t, tarOf(t, files(m)...)), "")
		if err != nil || len(objs) != 1 {
			t.Fatalf("Render = %v, %v", objs, err)
		}
	})
	t.Run("several kustomization files at the root", func(t *testing.T) {
		m := map[string]string{kfile: "resources: []\n", "kustomization.yml": "resources: []\n"}
		_, err := Render(context.Background(), readTree(t, tarOf(t, files(m)...)), "")
		if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "several kustomization files") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("many entries are listed bounded", func(t *testing.T) {
		m := map[string]string{}
		for i := range 500 {
			m[fmt.Sprintf("apps/app-%03d/%s", i, kfile)] = "resources: []\n"
		}
		_, err := Render(context.Background(), readTree(t, tarOf(t, files(m)...)), "")
		var ne *NoEntryError
		if !errors.As(err, &ne) || len(ne.Found) != 500 || !strings.Contains(err.Error(), "and 488 more") || len(err.Error()) > 1000 {
			t.Fatalf("err = %.300v (%d bytes)", err, len(errText(err)))
		}
	})
}
