package manifests_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for name, body := range files {
		m[name] = &fstest.MapFile{Data: []byte(body)}
	}
	return m
}

func cmYAML(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

func TestRender(t *testing.T) {
	fsys := mapFS(map[string]string{
		"app/b.yaml":           cmYAML("b"),
		"app/a.yml":            cmYAML("a1") + "---\n" + cmYAML("a2"),
		"app/a/nested.json":    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"nested"}}`,
		"app/C.YAML":           cmYAML("upper"),
		"app/.hidden.yaml":     "not: a manifest\n",
		"app/.git/config.yaml": "not: a manifest\n",
		"app/notes.txt":        "not yaml",
		"app/empty.yaml":       "# nothing yet\n",
		"other/ignored.yaml":   cmYAML("other"),
	})
	objs, err := manifests.Render(fsys, "app")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o["metadata"].(map[string]any)["name"].(string))
	}
	// Lexical path order: app/C.YAML < app/a.yml < app/a/nested.json < app/b.yaml.
	if got, want := strings.Join(names, ","), "upper,a1,a2,nested,b"; got != want {
		t.Errorf("names = %s, want %s", got, want)
	}

	all, err := manifests.Render(fsys, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 {
		t.Errorf("Render(root) = %d objects, want 6", len(all))
	}
}

func TestRenderErrors(t *testing.T) {
	fsys := mapFS(map[string]string{
		"bad/ok.yaml":        cmYAML("ok"),
		"bad/sub/oops.yaml":  cmYAML("x") + "---\nkind: [\n",
		"values/values.yaml": "replicaCount: 1\n",
		"docs/README.md":     "# docs\n",
		"file.yaml":          cmYAML("f"),
	})
	for _, tc := range []struct {
		dir  string
		want error
		msg  string
	}{
		{"bad", errdef.ErrInvalidInput, "bad/sub/oops.yaml: document 2: invalid YAML"},
		{"values", errdef.ErrInvalidInput, "values/values.yaml: document 1: object has no apiVersion"},
		{"docs", errdef.ErrNotFound, `no .yaml, .yml or .json files under "docs"`},
		{"missing", errdef.ErrNotFound, `"missing"`},
		{"file.yaml", errdef.ErrInvalidInput, "not a directory"},
		{"../x", errdef.ErrInvalidInput, "invalid directory"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			_, err := manifests.Render(fsys, tc.dir)
			if !errors.Is(err, tc.want) || !errors.Is(err, errdef.ErrRender) {
				t.Errorf("err = %v, want %v and ErrRender", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want it to contain %q", err, tc.msg)
			}
		})
	}
}

func TestIsManifestFile(t *testing.T) {
	for name, want := range map[string]bool{
		"a.yaml": true, "a.yml": true, "a.json": true, "A.YAML": true, "dir/x.Json": true,
		"a.txt": false, "yaml": false, "a.yaml.bak": false, "Kustomization": false,
	} {
		if got := manifests.IsManifestFile(name); got != want {
			t.Errorf("IsManifestFile(%q) = %v, want %v", name, got, want)
		}
	}
}
