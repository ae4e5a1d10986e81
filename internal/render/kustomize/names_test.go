package kustomize

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
)

// hostileNamesDir is a tree whose every level uses names kyaml's in-memory
// file system refuses: "+", spaces, "@", "~", "=", ",", unicode, a 200-byte
// name, 40 levels of nesting, and unused files with such names beside them.
// Its golden is the real kustomize CLI's output (the command is in the
// golden's header).
var hostileNamesDir = filepath.Join("..", "..", "..", "testdata", "kustomize", "hostile-names")

func TestRenderHostileNamesGolden(t *testing.T) {
	want := manifeststest.ReadFile(t, hostileNamesDir+".golden.yaml")
	if len(want) != 7 {
		t.Fatalf("golden has %d objects, want 7", len(want))
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"tar", tarDir(t, hostileNamesDir)},
		{"tgz", gzipped(t, tarDir(t, hostileNamesDir))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Render(context.Background(), readTree(t, tc.data), "overlays/release-ha-1.21+")
			if err != nil {
				t.Fatal(err)
			}
			manifeststest.Equal(t, got, want)
		})
	}
}

// One name at a time, in each place a name can be: an unused file beside the
// kustomization, a resource file, a directory on the way to it, and the entry
// path itself. Each must build the one ConfigMap.
func TestRenderAnyName(t *testing.T) {
	long := strings.Repeat("x", 255) // the longest name most file systems take
	deep := strings.Repeat("d/", 100)
	names := []string{
		"release-ha-1.21+", "my notes.txt", "a@b", "~backup~", "k=v", "a,b", "ünïcödé", "日本語", "emoji-🚀",
		"...", "a..b", "-leading-dash", "#hash", "%2e%2e", "$HOME", "semi;colon", "quote'\"", "tab\tname",
		"(paren) [bracket] {brace}", "*star?", long,
	}
	for _, name := range names {
		t.Run(strings.ReplaceAll(name[:min(len(name), 24)], "/", "_"), func(t *testing.T) {
			for _, tc := range []struct {
				where, entry string
				files        map[string]string
			}{
				{"unused file", "", map[string]string{kfile: "resources: [cm.yaml]\n", "cm.yaml": cm, name: "not: [yaml\n", "sub/" + name + "/x": "?"}},
				{"resource file", "", map[string]string{kfile: "resources:\n  - " + quote(name+".yaml") + "\n", name + ".yaml": cm}},
				{"directory", "", map[string]string{kfile: "resources:\n  - " + quote(name+"/"+deep+"cm.yaml") + "\n", name + "/" + deep + "cm.yaml": cm}},
				{"entry path", name + "/" + deep + "overlay", map[string]string{
					name + "/" + deep + "overlay/" + kfile:           "resources:\n  - " + quote("../base "+name) + "\n",
					name + "/" + deep + "base " + name + "/" + kfile: "resources: [cm.yaml]\n",
					name + "/" + deep + "base " + name + "/cm.yaml":  cm,
				}},
			} {
				if strings.ContainsAny(name, "*?") && tc.where != "unused file" && tc.where != "entry path" {
					continue // a resource path with glob characters is a glob to kustomize
				}
				if strings.Contains(name, "..") && tc.where == "entry path" {
					// "../base a..b": kustomize v5.8.2 itself refuses a reference
					// with ".." inside a name as ambiguous (the CLI too).
					continue
				}
				objs, err := Render(context.Background(), readTree(t, tarOf(t, files(tc.files)...)), tc.entry)
				if err != nil {
					t.Errorf("%s: %v", tc.where, err)
					continue
				}
				if len(objs) != 1 || get(t, objs[0], "metadata", "name") != "cm" {
					t.Errorf("%s: objects = %v, want the ConfigMap cm", tc.where, objs)
				}
			}
		})
	}
}

// quote is a YAML double-quoted string.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

// Odd names change nothing about confinement: a name that looks like a
// traversal is a name, and a real traversal is still refused.
func TestRenderNamesStayConfined(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		entry string
		want  error
	}{
		{"sibling file through ../ with odd names", map[string]string{
			"over lay+/" + kfile: "resources: [cm.yaml]\npatches:\n  - path: \"../sib @ling/p.yaml\"\n",
			"over lay+/cm.yaml":  cm,
			"sib @ling/p.yaml":   cm,
		}, "over lay+", errdef.ErrRender},
		{"escape above the root", map[string]string{kfile: "resources:\n  - \"../../etc/my passwd\"\n"}, "", errdef.ErrUnsafeArchive},
		{"escape from the entry", map[string]string{"a b/" + kfile: "resources: [cm.yaml]\n", "a b/cm.yaml": cm}, "a b/../../x", errdef.ErrInvalidInput},
		{"scp-style directory that exists in the tree", map[string]string{
			kfile:                              "resources:\n  - git@github.com:org/repo\n",
			"git@github.com:org/repo/" + kfile: "resources: [cm.yaml]\n",
			"git@github.com:org/repo/cm.yaml":  cm,
		}, "", errdef.ErrUnsafeArchive}, // kustomize would clone it: still remote
		{"missing name with a space", map[string]string{kfile: "resources:\n  - \"no such.yaml\"\n"}, "", errdef.ErrRender},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Render(context.Background(), readTree(t, tarOf(t, files(tc.files)...)), tc.entry)
			if err == nil || !errors.Is(err, tc.want) || !errors.Is(err, errdef.ErrRender) {
				t.Fatalf("Render = %v, %v; want an error matching %v", objs, err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}
