package kustomize

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sigs.k8s.io/kustomize/api/types"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/confine"
)

// appRoot copies testdata/kustomize/<from> into a temporary Application
// directory (plus files, relative names to contents) and opens it as
// confine does for generate.
func appRoot(t *testing.T, from string, files map[string]string) (string, *confine.Root) {
	t.Helper()
	parent := t.TempDir()
	dir := filepath.Join(parent, "app")
	if from != "" {
		copyInto(t, parent, from, "app")
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := confine.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return dir, root
}

// The Application's kustomization.yaml over the resource "manifests", shown
// as .ocm/manifests: resources and components of the tree, its own
// resources, a patch file and a configMapGenerator merging a file of its
// own. The output is the kustomize CLI's build of the same layout written
// by hand (the tree copied into app/.ocm/manifests).
func TestApplicationOverlayMatchesCLI(t *testing.T) {
	want := cliGolden(t, "gitoverlay", "gitoverlay/app with features/tree copied into app/.ocm/manifests", func(dir string) string {
		copyInto(t, dir, "gitoverlay/app", "app")
		copyInto(t, dir, "features/tree", "app/.ocm/manifests")
		return "app"
	})
	if len(want) != 5 {
		t.Fatalf("golden has %d objects, want 5", len(want))
	}
	_, root := appRoot(t, "gitoverlay/app", nil)
	tree := readTree(t, tarDir(t, featuresTree))
	// The entry path does not matter: the kustomization names the directories.
	for _, entry := range []string{"", "overlays/prod", "base"} {
		got, err := Render(context.Background(), tree, entry, WithApplicationOverlay(ApplicationDir(root), "manifests"))
		if err != nil {
			t.Fatal(err)
		}
		manifeststest.Equal(t, got, want)
	}
	ok, named, err := NamedResources(ApplicationDir(root))
	if err != nil || !ok || len(named) != 1 || named[0] != "manifests" {
		t.Errorf("NamedResources = %v %v %v, want true [manifests]", ok, named, err)
	}
}

// The definition's overlay is built over the Application's: the same as a
// hand-written kustomization naming ../app.
func TestApplicationOverlayUnderDefinitionOverlay(t *testing.T) {
	want := cliGolden(t, "gitoverlay-on-top", "gitoverlay/on-top as overlay/, gitoverlay/app as app/ with features/tree in app/.ocm/manifests", func(dir string) string {
		copyInto(t, dir, "gitoverlay/app", "app")
		copyInto(t, dir, "features/tree", "app/.ocm/manifests")
		copyInto(t, dir, "gitoverlay/on-top", "overlay")
		return "overlay"
	})
	_, root := appRoot(t, "gitoverlay/app", nil)
	tree := readTree(t, tarDir(t, featuresTree))
	ov := &Overlay{
		Images: []types.Image{{Name: "ghcr.io/example/web", NewName: "registry.internal.example:5000/mirror/web", NewTag: "1.0.0"}},
		SecretGenerator: []types.SecretArgs{{GeneratorArgs: types.GeneratorArgs{Name: "app-secret", Behavior: "merge",
			KvPairSources: types.KvPairSources{LiteralSources: []string{"PASSWORD=from-the-definition"}}}}},
	}
	got, err := Render(context.Background(), tree, "", WithApplicationOverlay(ApplicationDir(root), "manifests"), WithOverlay(ov))
	if err != nil {
		t.Fatal(err)
	}
	manifeststest.Equal(t, got, want)
}

// Hostile names in the tree stay names under the mount.
func TestApplicationOverlayHostileNames(t *testing.T) {
	want := cliGolden(t, "gitoverlay-hostile", "gitoverlay/hostile with hostile-names copied into app/.ocm/manifests", func(dir string) string {
		copyInto(t, dir, "gitoverlay/hostile", "app")
		copyInto(t, dir, "hostile-names", "app/.ocm/manifests")
		return "app"
	})
	_, root := appRoot(t, "gitoverlay/hostile", nil)
	tree := readTree(t, tarDir(t, filepath.Join(testdataDir, "hostile-names")))
	got, err := Render(context.Background(), tree, "", WithApplicationOverlay(ApplicationDir(root), "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	manifeststest.Equal(t, got, want)
}

const appKust = "kustomization.yaml"

// Nothing the Application's kustomization names may leave its directory:
// each attempt is refused with one line, before kustomize runs, and
// nothing is rendered.
func TestApplicationOverlayConfinement(t *testing.T) {
	tree := readTree(t, tarDir(t, featuresTree))
	const base = "resources: [.ocm/manifests/overlays/prod]\n"
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\ndata: {token: hunter2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, appKust), []byte("resources: [secret.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		setup func(t *testing.T, dir string)
		msg   string
	}{
		{"sibling directory", map[string]string{appKust: "resources: [.ocm/manifests/overlays/prod, ../other]\n"}, nil, `"../other" escapes the Application's directory`},
		{"absolute path", map[string]string{appKust: "resources: [.ocm/manifests/base, " + outside + "]\n"}, nil, "is an absolute path"},
		{"patch file outside", map[string]string{appKust: base + "patches: [{path: ../../etc/passwd}]\n"}, nil, "escapes the Application's directory"},
		{"generator file outside", map[string]string{appKust: base + "configMapGenerator: [{name: x, files: [../x/token]}]\n"}, nil, "escapes the Application's directory"},
		{"remote base", map[string]string{appKust: "resources:\n- https://github.com/argoproj/argo-cd//manifests/cluster-install?ref=v3.0.0\n"}, nil, "remote reference"},
		{"helm inflation", map[string]string{appKust: base + "helmCharts: [{name: x, repo: https://charts.example.com}]\n"}, nil, "helmCharts is not supported"},
		{"exec plugin", map[string]string{appKust: base + "transformers: [t.yaml]\n", "t.yaml": "apiVersion: example.com/v1\nkind: X\nmetadata: {name: x}\n"}, nil, "only kustomize's builtin"},
		{"symlinked resource out", map[string]string{appKust: "resources: [.ocm/manifests/base, out.yaml]\n"}, func(t *testing.T, dir string) {
			symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "out.yaml"))
		}, `"out.yaml": not a file or directory inside the Application's directory`},
		{"symlinked directory out", map[string]string{appKust: "resources: [.ocm/manifests/base, out]\n"}, func(t *testing.T, dir string) {
			symlink(t, outside, filepath.Join(dir, "out"))
		}, "not a file or directory inside the Application's directory"},
		{"symlinked kustomization out", nil, func(t *testing.T, dir string) {
			symlink(t, filepath.Join(outside, appKust), filepath.Join(dir, appKust))
		}, "not a file or directory inside the Application's directory"},
		{"symlinked patch out", map[string]string{appKust: base + "patches: [{path: p.yaml}]\n"}, func(t *testing.T, dir string) {
			symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "p.yaml"))
		}, "not a file or directory inside the Application's directory"},
		{"FIFO as a patch", map[string]string{appKust: base + "patches: [{path: p.yaml}]\n"}, func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "p.yaml"), 0o644); err != nil {
				t.Skip(err)
			}
		}, "not a file or directory inside the Application's directory"},
		{"the reserved directory in git", map[string]string{appKust: base, ".ocm/manifests/base/kustomization.yaml": "resources: []\n"}, nil, "reserved"},
		{"the reserved directory itself", map[string]string{appKust: "resources: [.ocm]\n"}, nil, ".ocm"},
		{"a tree reaching into the Application's directory", map[string]string{appKust: "resources: [.ocm/manifests/x]\n", "team.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t}\n"}, nil, "no such file or directory in the resource tree"},
		{"a file too large", map[string]string{appKust: base + "resources: [big.yaml]\n", "big.yaml": strings.Repeat("#", MaxAppFileSize+1)}, nil, "more than the limit"},
		{"no kustomization", map[string]string{"other.yaml": "a: b\n"}, nil, "has no kustomization file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, root := appRoot(t, "", tc.files)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			objs, err := Render(context.Background(), tree, "", WithApplicationOverlay(ApplicationDir(root), "manifests"))
			if err == nil || objs != nil || !errors.Is(err, errdef.ErrRender) {
				t.Fatalf("Render = %d objects, %v; want a render error", len(objs), err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.msg) || strings.Contains(msg, "\n") || strings.Contains(msg, "hunter2") || strings.Contains(msg, outside+"/") {
				t.Errorf("error = %s\nwant one line mentioning %q, nothing from outside", msg, tc.msg)
			}
		})
	}
}

// A tree's kustomization cannot reach the Application's files through
// the mount: the tree stays confined to itself.
func TestApplicationOverlayTreeStaysInTree(t *testing.T) {
	tree := readTree(t, tarOf(t, files(map[string]string{
		"kustomization.yaml": "resources: [../../team.yaml]\n",
	})...))
	_, root := appRoot(t, "", map[string]string{appKust: "resources: [.ocm/manifests]\n", "team.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t}\n"})
	objs, err := Render(context.Background(), tree, "", WithApplicationOverlay(ApplicationDir(root), "manifests"))
	if err == nil || objs != nil || !errors.Is(err, errdef.ErrUnsafeArchive) || !strings.Contains(err.Error(), "escapes the resource tree") {
		t.Fatalf("Render = %d objects, %v; want the tree's escape refused", len(objs), err)
	}
}

func TestNamedResources(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		ok    bool
		named string
		err   string
	}{
		{"none", map[string]string{"values.yaml": "a: 1\n"}, false, "", ""},
		{"two, through a base of the Application", map[string]string{appKust: "resources: [overlays/prod, .ocm/a/x]\n", "overlays/prod/kustomization.yaml": "resources: [../../.ocm/b]\ncomponents: [../../.ocm/a/c]\n"}, true, "a,b", ""},
		{"none named", map[string]string{appKust: "resources: [cm.yaml]\n"}, true, "", ""},
		{"bare", map[string]string{appKust: "resources: [./.ocm]\n"}, true, "", "names .ocm itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, root := appRoot(t, "", tc.files)
			ok, named, err := NamedResources(ApplicationDir(root))
			if ok != tc.ok || strings.Join(named, ",") != tc.named || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("NamedResources = %v %v %v, want %v %q %q", ok, named, err, tc.ok, tc.named, tc.err)
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
