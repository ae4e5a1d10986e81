package argocdocm_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// overlayTree is a directoryTree without a root kustomization: base and two
// overlays, as upstream trees ship.
func overlayTree(t *testing.T) []byte {
	t.Helper()
	files := map[string][]byte{
		"base/kustomization.yaml":          []byte("resources: [deploy.yaml]\n"),
		"base/deploy.yaml":                 []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"),
		"overlays/prod/kustomization.yaml": []byte("resources: [../../base]\nnamePrefix: prod-\n"),
		"overlays/dev/kustomization.yaml":  []byte("resources: [../../base]\nnamePrefix: dev-\n"),
	}
	tree, err := ocmbuild.TarFiles(files, false)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// The entry path of a directoryTree: the request's, else the resource's
// label, else the no-path rules (here: refused, naming the entries and the
// ways to choose one).
func TestEntryPathFromLabel(t *testing.T) {
	const comp = "example.com/entry"
	tree := overlayTree(t)
	dir := filepath.Join(t.TempDir(), "ctf")
	label := func(v any) []ocmbuild.Label { return []ocmbuild.Label{{Name: argocdocm.EntryPathLabel, Value: v}} }
	err := ocmbuild.WriteCTF(dir,
		&ocmbuild.Component{Name: comp, Version: "1.0.0", Resources: []ocmbuild.Resource{{Name: "tree", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: tree}}},
		&ocmbuild.Component{Name: comp, Version: "2.0.0", Resources: []ocmbuild.Resource{{Name: "tree", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: tree, Labels: label("overlays/prod")}}},
		&ocmbuild.Component{Name: comp, Version: "3.0.0", Resources: []ocmbuild.Resource{{Name: "tree", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: tree, Labels: label(map[string]any{"path": "x"})}}},
		&ocmbuild.Component{Name: comp, Version: "4.0.0", Resources: []ocmbuild.Resource{{Name: "tree", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: tree, Labels: label("../../etc")}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	render := func(version, path string) (string, error) {
		res, err := (&argocdocm.Renderer{}).Render(context.Background(), argocdocm.Request{Repository: dir, Component: comp, Version: version, Path: path})
		if err != nil {
			return "", err
		}
		var names []string
		for _, o := range res.Objects {
			names = append(names, fmt.Sprint(o["metadata"].(map[string]any)["name"]))
		}
		return strings.Join(names, ","), nil
	}
	for _, tc := range []struct {
		name, version, path, want string
		err                       error
		msg                       []string
	}{
		{"no label, no path: refused with the entries", "1.0.0", "", "", errdef.ErrInvalidInput,
			[]string{"overlays/dev, overlays/prod, base", "--path", "parameter path", argocdocm.EntryPathLabel}},
		{"no label, path", "1.0.0", "overlays/dev", "dev-web", nil, nil},
		{"label", "2.0.0", "", "prod-web", nil, nil},
		{"path wins over label", "2.0.0", "overlays/dev", "dev-web", nil, nil},
		{"label not a string", "3.0.0", "", "", errdef.ErrInvalidInput, []string{argocdocm.EntryPathLabel, "non-empty string"}},
		{"label escapes the tree", "4.0.0", "", "", errdef.ErrInvalidInput, []string{"escapes the resource"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := render(tc.version, tc.path)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || got != "" {
					t.Fatalf("render = %q, %v; want %v", got, err, tc.err)
				}
				for _, m := range tc.msg {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("err = %v, want it to mention %q", err, m)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("render = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// A step's overlay is built by kustomize over the chosen entry.
func TestStepOverlay(t *testing.T) {
	const comp = "example.com/overlay"
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, &ocmbuild.Component{Name: comp, Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "tree", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: overlayTree(t)}}}); err != nil {
		t.Fatal(err)
	}
	planner := stepsPlanner(func(d *ocm.Descriptor) []plan.Step {
		return []plan.Step{{Resource: &d.Resources[0], Path: "overlays/prod", Overlay: &kustomize.Overlay{
			NameSuffix: "-x", Replicas: []types.Replica{{Name: "prod-web", Count: 5}}}}}
	})
	res, err := plannedRenderer(planner).Render(context.Background(), argocdocm.Request{Repository: dir, Component: comp, Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 1 {
		t.Fatalf("objects = %v", res.Objects)
	}
	md := res.Objects[0]["metadata"].(map[string]any)
	spec := res.Objects[0]["spec"].(map[string]any)
	if md["name"] != "prod-web-x" || fmt.Sprint(spec["replicas"]) != "5" {
		t.Fatalf("object = %v", res.Objects[0])
	}
}
