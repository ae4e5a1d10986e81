package kustomize

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
)

const (
	cm    = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	kfile = "kustomization.yaml"
)

// Hostile and unsupported kustomizations. Each is refused before kustomize
// runs (or by kustomize itself) with an error that matches ErrRender and a
// specific sentinel and names where the problem is.
func TestRenderHostile(t *testing.T) {
	remote := func(entry string) map[string]string {
		return map[string]string{kfile: "resources:\n  - " + entry + "\n", "cm.yaml": cm}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		entry string
		want  error    // specific sentinel
		msg   []string // substrings of the message
	}{
		// Remote bases and resources, several spellings.
		{"remote https with ref", remote("https://github.com/kubernetes-sigs/kustomize//examples/multibases?ref=v1.0.6"), "",
			errdef.ErrUnsafeArchive, []string{"kustomization.yaml", `resources entry "https://github.com/kubernetes-sigs/kustomize//examples/multibases?ref=v1.0.6"`, "remote"}},
		{"remote http file", remote("http://example.com/cm.yaml"), "", errdef.ErrUnsafeArchive, []string{`"http://example.com/cm.yaml"`, "remote"}},
		{"remote upper-case scheme", remote("HTTPS://example.com/cm.yaml"), "", errdef.ErrUnsafeArchive, []string{"remote"}},
		{"remote github.com shorthand", remote("github.com/org/repo/deploy?ref=v1"), "", errdef.ErrUnsafeArchive, []string{`"github.com/org/repo/deploy?ref=v1"`}},
		{"remote github.com without ref", remote("github.com/org/repo"), "", errdef.ErrUnsafeArchive, []string{"remote"}},
		{"remote git:: prefix", remote("git::https://gitlab.com/org/repo.git//deploy"), "", errdef.ErrUnsafeArchive, []string{"git::https://"}},
		{"remote ssh", remote("ssh://git@github.com/org/repo.git"), "", errdef.ErrUnsafeArchive, []string{"ssh://"}},
		{"remote scp-style", remote("git@github.com:org/repo.git/deploy"), "", errdef.ErrUnsafeArchive, []string{"git@github.com:org/repo.git"}},
		{"remote file scheme", remote("file:///etc/kubernetes"), "", errdef.ErrUnsafeArchive, []string{"file:///etc"}},
		{"remote query on local path", remote("../base?ref=main"), "", errdef.ErrUnsafeArchive, []string{"?ref=main"}},
		{"remote host without scheme", remote("gitlab.com/org/repo/deploy"), "", errdef.ErrUnsafeArchive, []string{"gitlab.com/org/repo/deploy", "remote"}},
		{"remote legacy bases", map[string]string{kfile: "bases:\n  - github.com/org/repo/base?ref=v1\n"}, "", errdef.ErrUnsafeArchive, []string{"bases entry"}},
		{"remote component", map[string]string{kfile: "resources: [cm.yaml]\ncomponents:\n  - https://github.com/org/repo//components/x\n", "cm.yaml": cm}, "",
			errdef.ErrUnsafeArchive, []string{"components entry", "remote"}},
		{"remote in a base", map[string]string{
			"overlays/prod/" + kfile: "resources:\n  - ../../base\n",
			"base/" + kfile:          "resources:\n  - cm.yaml\n  - https://raw.githubusercontent.com/org/repo/main/x.yaml\n",
			"base/cm.yaml":           cm,
		}, "overlays/prod", errdef.ErrUnsafeArchive, []string{"base/kustomization.yaml", "raw.githubusercontent.com"}},
		{"remote configMapGenerator file", map[string]string{kfile: "configMapGenerator:\n  - name: x\n    files:\n      - https://example.com/app.properties\n"}, "",
			errdef.ErrUnsafeArchive, []string{"configMapGenerator[x].files", "https://example.com/app.properties"}},
		{"remote configMapGenerator key=file", map[string]string{kfile: "configMapGenerator:\n  - name: x\n    files:\n      - app=https://example.com/app.properties\n"}, "",
			errdef.ErrUnsafeArchive, []string{"remote"}},
		{"remote secretGenerator env", map[string]string{kfile: "secretGenerator:\n  - name: x\n    envs:\n      - https://example.com/.env\n"}, "",
			errdef.ErrUnsafeArchive, []string{"secretGenerator[x].envs"}},
		{"remote patch file", map[string]string{kfile: "resources: [cm.yaml]\npatches:\n  - path: https://example.com/patch.yaml\n", "cm.yaml": cm}, "",
			errdef.ErrUnsafeArchive, []string{"patches entry"}},
		{"remote strategic merge patch", map[string]string{kfile: "resources: [cm.yaml]\npatchesStrategicMerge:\n  - https://example.com/patch.yaml\n", "cm.yaml": cm}, "",
			errdef.ErrUnsafeArchive, []string{"patchesStrategicMerge entry"}},
		{"remote openapi schema", map[string]string{kfile: "resources: [cm.yaml]\nopenapi:\n  path: https://example.com/schema.json\n", "cm.yaml": cm}, "",
			errdef.ErrUnsafeArchive, []string{"openapi.path"}},
		{"remote replacements file", map[string]string{kfile: "resources: [cm.yaml]\nreplacements:\n  - path: https://example.com/r.yaml\n", "cm.yaml": cm}, "",
			errdef.ErrUnsafeArchive, []string{"replacements entry"}},
		{"remote crds", map[string]string{kfile: "resources: [cm.yaml]\ncrds:\n  - https://example.com/crd.json\n", "cm.yaml": cm}, "",
			errdef.ErrUnsafeArchive, []string{"crds entry"}},

		// Plugins: exec, KRM functions, and paths in builtin configurations.
		{"exec plugin inline", map[string]string{kfile: "generators:\n  - |\n    apiVersion: someteam.example.com/v1\n    kind: ChartInflator\n    metadata:\n      name: notImportantHere\n"}, "",
			errdef.ErrUnsafeArchive, []string{"generators entry ChartInflator notImportantHere", "exec or Go plugin", "someteam.example.com/v1"}},
		{"exec KRM function in file", map[string]string{
			kfile:      "generators:\n  - gen.yaml\n",
			"gen.yaml": "apiVersion: example.com/v1\nkind: Gen\nmetadata:\n  name: g\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n",
		}, "", errdef.ErrUnsafeArchive, []string{"KRM function (exec)", "generators entry Gen g"}},
		{"container KRM function transformer", map[string]string{
			kfile:     "resources: [cm.yaml]\ntransformers:\n  - fn.yaml\n",
			"cm.yaml": cm,
			"fn.yaml": "apiVersion: example.com/v1\nkind: Fn\nmetadata:\n  name: f\n  annotations:\n    config.kubernetes.io/function: |\n      container:\n        image: evil.example.com/fn\n",
		}, "", errdef.ErrUnsafeArchive, []string{"KRM function (container)"}},
		{"validator plugin", map[string]string{kfile: "resources: [cm.yaml]\nvalidators:\n  - |\n    apiVersion: example.com/v1\n    kind: Validator\n    metadata:\n      name: v\n", "cm.yaml": cm}, "",
			errdef.ErrUnsafeArchive, []string{"validators entry"}},
		{"exec plugin via a generator directory", map[string]string{
			kfile:              "resources: [cm.yaml]\ngenerators:\n  - gens\n",
			"cm.yaml":          cm,
			"gens/" + kfile:    "resources: [plugin.yaml]\n",
			"gens/plugin.yaml": "apiVersion: example.com/v1\nkind: Exec\nmetadata:\n  name: e\n",
		}, "", errdef.ErrUnsafeArchive, []string{"gens/kustomization.yaml", "exec or Go plugin"}},
		{"builtin transformer with remote patch", map[string]string{
			kfile:     "resources: [cm.yaml]\ntransformers:\n  - |\n    apiVersion: builtin\n    kind: PatchTransformer\n    metadata:\n      name: p\n    path: https://example.com/p.yaml\n",
			"cm.yaml": cm,
		}, "", errdef.ErrUnsafeArchive, []string{"PatchTransformer p field path", "remote"}},
		{"builtin generator escaping", map[string]string{
			kfile: "generators:\n  - |\n    apiVersion: builtin\n    kind: ConfigMapGenerator\n    metadata:\n      name: c\n    files:\n      - ../../etc/passwd\n",
		}, "", errdef.ErrUnsafeArchive, []string{"escapes the resource tree"}},

		// Helm inflation.
		{"helmCharts", map[string]string{kfile: "helmCharts:\n  - name: podinfo\n    repo: https://stefanprodan.github.io/podinfo\n    version: 6.7.0\n"}, "",
			errdef.ErrRender, []string{"kustomization.yaml", "helmCharts is not supported"}},
		{"helmChartInflationGenerator field", map[string]string{kfile: "helmChartInflationGenerator:\n  - chartName: podinfo\n    chartRepoUrl: https://stefanprodan.github.io/podinfo\n"}, "",
			errdef.ErrRender, []string{"helmChartInflationGenerator is not supported"}},
		{"helm builtin generator", map[string]string{kfile: "generators:\n  - |\n    apiVersion: builtin\n    kind: HelmChartInflationGenerator\n    metadata:\n      name: h\n    name: podinfo\n    repo: https://stefanprodan.github.io/podinfo\n"}, "",
			errdef.ErrRender, []string{"HelmChartInflationGenerator h is not supported"}},

		// Paths that leave the tree.
		{"resources ../../etc/passwd", map[string]string{"app/" + kfile: "resources:\n  - ../../etc/passwd\n"}, "app",
			errdef.ErrUnsafeArchive, []string{"app/kustomization.yaml", `resources entry "../../etc/passwd" escapes the resource tree`}},
		{"resources absolute", map[string]string{kfile: "resources:\n  - /etc/passwd\n"}, "",
			errdef.ErrUnsafeArchive, []string{`"/etc/passwd" is an absolute path`}},
		{"component escaping", map[string]string{kfile: "components:\n  - ../c\n"}, "", errdef.ErrUnsafeArchive, []string{"components entry", "escapes"}},
		{"patch escaping", map[string]string{kfile: "resources: [cm.yaml]\npatches:\n  - path: ../../../root/.kube/config\n", "cm.yaml": cm}, "",
			errdef.ErrUnsafeArchive, []string{"patches entry", "escapes"}},
		{"configMapGenerator escaping", map[string]string{kfile: "configMapGenerator:\n  - name: x\n    files:\n      - key=../../etc/shadow\n"}, "",
			errdef.ErrUnsafeArchive, []string{"escapes"}},

		// Entry path.
		{"entry path escaping", map[string]string{kfile: "resources: [cm.yaml]\n", "cm.yaml": cm}, "../..", errdef.ErrInvalidInput, []string{`entry path "../.."`, "escapes"}},
		{"entry path escaping after clean", map[string]string{kfile: "resources: [cm.yaml]\n", "cm.yaml": cm}, "a/../../x", errdef.ErrInvalidInput, []string{"escapes"}},
		{"entry path absolute", map[string]string{kfile: "resources: [cm.yaml]\n", "cm.yaml": cm}, "/etc", errdef.ErrInvalidInput, []string{"absolute"}},
		{"entry path backslash", map[string]string{kfile: "resources: [cm.yaml]\n", "cm.yaml": cm}, `..\..`, errdef.ErrInvalidInput, []string{"backslash"}},
		{"entry path missing", map[string]string{kfile: "resources: [cm.yaml]\n", "cm.yaml": cm}, "overlays/staging", errdef.ErrNotFound, []string{`"overlays/staging" does not exist`}},
		{"entry path is a file", map[string]string{kfile: "resources: [cm.yaml]\n", "cm.yaml": cm}, "cm.yaml", errdef.ErrInvalidInput, []string{"is a file"}},

		// Broken kustomizations.
		{"missing resource", map[string]string{kfile: "resources:\n  - nothere.yaml\n"}, "", errdef.ErrNotFound, []string{`resources entry "nothere.yaml"`}},
		{"unknown field", map[string]string{kfile: "resourcez: [cm.yaml]\n"}, "", errdef.ErrInvalidInput, []string{"kustomization.yaml", "resourcez"}},
		{"two kustomization files", map[string]string{kfile: "resources: [cm.yaml]\n", "Kustomization": "resources: [cm.yaml]\n", "cm.yaml": cm}, "",
			errdef.ErrInvalidInput, []string{"several kustomization files"}},
		{"kustomize build error", map[string]string{kfile: "resources: [cm.yaml]\npatches:\n  - path: missing-patch.yaml\n", "cm.yaml": cm}, "",
			errdef.ErrRender, []string{`kustomize: build of "."`, "missing-patch.yaml"}},
		{"invalid resource YAML", map[string]string{kfile: "resources: [cm.yaml]\n", "cm.yaml": "apiVersion: v1\nkind: [\n"}, "",
			errdef.ErrRender, []string{"cm.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := readTree(t, tarOf(t, files(tc.files)...))
			objs, err := Render(context.Background(), tree, tc.entry)
			if err == nil {
				t.Fatalf("rendered %d objects, want an error", len(objs))
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, errdef.ErrRender) {
				t.Errorf("err = %v\nwant it to match %v and %v", err, tc.want, errdef.ErrRender)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("err = %v\nwant it to contain %q", err, m)
				}
			}
		})
	}
}

// A resource symlinked out of the tree never reaches kustomize: the archive
// layer refuses the archive.
func TestRenderSymlinkOutOfTree(t *testing.T) {
	for _, link := range []string{"../../etc/passwd", "/etc/passwd"} {
		data := tarOf(t,
			entry{name: kfile, body: "resources: [cm.yaml]\n"},
			entry{name: "cm.yaml", link: link},
		)
		_, err := archive.ReadTree(strings.NewReader(string(data)))
		if !errors.Is(err, errdef.ErrUnsafeArchive) || !strings.Contains(err.Error(), "cm.yaml") {
			t.Errorf("symlink to %s: err = %v, want ErrUnsafeArchive naming cm.yaml", link, err)
		}
	}
}

// Defence in depth: with the pre-scan bypassed, kustomize's own settings
// (plugins disabled, helm disabled) still refuse exec plugins, KRM
// functions and helm inflation.
func TestBuildWithoutScanStillRefusesPlugins(t *testing.T) {
	for _, tc := range []struct {
		name, kustomization, want string
	}{
		{"exec plugin", "generators:\n  - |\n    apiVersion: someteam.example.com/v1\n    kind: ChartInflator\n    metadata:\n      name: x\n", "external plugins disabled"},
		{"exec function", "generators:\n  - |\n    apiVersion: example.com/v1\n    kind: Gen\n    metadata:\n      name: g\n      annotations:\n        config.kubernetes.io/function: |\n          exec:\n            path: /bin/sh\n", "external plugins disabled"},
		{"helmCharts", "helmCharts:\n  - name: podinfo\n    repo: https://stefanprodan.github.io/podinfo\n", "enable-helm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := readTree(t, tarOf(t, entry{name: kfile, body: tc.kustomization}))
			mem, err := inMemory(tree.FS())
			if err != nil {
				t.Fatal(err)
			}
			_, err = build(context.Background(), mem, ".", newOptions(nil), false)
			if !errors.Is(err, errdef.ErrRender) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrRender mentioning %q", err, tc.want)
			}
		})
	}
}

func TestLooksRemote(t *testing.T) {
	for s, want := range map[string]bool{
		"https://github.com/org/repo": true,
		"http://example.com/x.yaml":   true,
		"HTTPS://EXAMPLE.COM/x.yaml":  true,
		"https:x.yaml":                true,
		"github.com/org/repo":         true,
		"GitHub.com:org/repo":         true,
		"git::https://x/y":            true,
		"GIT::ssh://x/y":              true,
		"ssh://git@host/org/repo":     true,
		"git@host:org/repo":           true,
		"file:///etc":                 true,
		"s3://bucket/key":             true,
		"../base?ref=main":            true,
		"base?version=v1":             true,
		"base":                        false,
		"../../base":                  false,
		"deployment.yaml":             false,
		"overlays/prod":               false,
		"config:prod.yaml":            false,
		"weird?name.yaml":             false,
		"example.com/org/repo":        false, // hostLike, refused only when not in the tree
		"v1.2/deploy.yaml":            false,
		"files/motd.txt":              false,
		"motd.txt=files/motd.txt":     false,
	} {
		if got := looksRemote(s); got != want {
			t.Errorf("looksRemote(%q) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{
		"gitlab.com/org/repo": true, "example.com/x": true, "v1.2/deploy.yaml": true,
		"base": false, "../base": false, "deploy.yaml": false, "./x/y": false, "a./b": false,
	} {
		if got := hostLike(s); got != want {
			t.Errorf("hostLike(%q) = %v, want %v", s, got, want)
		}
	}
}
