package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The docs as they were (issue 21, part 4) fail; the fixed ones pass.
func TestLintFindsWhatTheDocsGotWrong(t *testing.T) {
	remoteKustomization := t.TempDir()
	if err := os.WriteFile(filepath.Join(remoteKustomization, "kustomization.yaml"),
		[]byte("resources:\n  - https://raw.githubusercontent.com/argoproj/argo-cd/v3.6.2/manifests/install.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		blocks []string // one page
		want   string   // "" : no finding
	}{
		{"namespace first", []string{"kubectl apply -n argocd --server-side --force-conflicts -k manifests/argocd"}, "namespace is used before this page creates it"},
		{"force conflicts", []string{"kubectl create namespace argocd\nkubectl apply -n argocd --server-side -k manifests/argocd"}, "without --force-conflicts"},
		{"remote install.yaml", []string{"kubectl create namespace argocd\nkubectl apply -n argocd --server-side --force-conflicts -k " + remoteKustomization},
			"does not build offline: remote resource https://raw.githubusercontent.com"},
		{"offline overlay", []string{"make argocd-manifests", "kubectl create namespace argocd\nkubectl apply -n argocd --server-side --force-conflicts -k manifests/argocd"}, ""},
		{"Argo CD's install.yaml", []string{"kubectl create namespace argocd\nkubectl apply -n argocd --server-side --force-conflicts -k manifests/argocd"},
			"run make argocd-manifests first"},
		{"pinned by make manifests", []string{"kubectl create namespace argocd\nkubectl apply -n argocd --server-side --force-conflicts -k bin/manifests/argocd"}, ""},
		{"helm repo add", []string{"helm upgrade --install argocd argo/argo-cd --version 7.9.1 -n argocd --create-namespace \\\n  -f manifests/helm/values.yaml"},
			`the repository "argo" is not added`},
		{"helm chart version", []string{"helm repo add argo https://argoproj.github.io/argo-helm", "helm upgrade --install argocd argo/argo-cd -n argocd --create-namespace \\\n  -f manifests/helm/values.yaml"},
			"without --version"},
		{"helm values file", []string{"helm repo add argo https://argoproj.github.io/argo-helm\nhelm upgrade --install argocd argo/argo-cd --version 7.9.1 -f my-values.yaml -f manifests/helm/values.yaml"},
			"helm -f my-values.yaml: no such file"},
		{"plugin not on PATH", []string{"cd testdata/demo   # the Application's spec.source.path\nargocd-ocm-plugin render --repository ctf --component example.com/demo/podinfo --version 1.0.0"},
			"argocd-ocm-plugin is not on PATH"},
		{"make install puts it on PATH", []string{"make install", "argocd-ocm-plugin version"}, ""},
		{"bin before make build", []string{"bin/argocd-ocm-plugin version"}, "does not exist yet: run make build first"},
		{"bin from elsewhere", []string{"make build\ncd testdata/demo\nbin/argocd-ocm-plugin version"}, "this is not the repository's bin/argocd-ocm-plugin"},
		{"cd blocks in sequence", []string{"cd testdata/demo\n../../bin/argocd-ocm-plugin version # after make build", "cd test/argocd && go test ./...", "cd test/argocd/argocd3 && go test ./..."},
			"cd test/argocd: no such directory"},
		{"cd back", []string{"make build\ncd testdata/demo\n../../bin/argocd-ocm-plugin version\ncd ../..", "cd test/argocd && go test ./...", "cd ../.."}, ""},
		{"subshells leave the reader where they were", []string{"(cd test/argocd && go test ./...)", "(cd test/argocd/argocd3 && go test ./...)"}, ""},
		{"heredoc is not a command", []string{"cat > x.yaml <<'EOF'\nargocd-ocm-plugin: no command\nEOF"}, ""},
		{"comment is not a command", []string{"make build # then argocd-ocm-plugin render"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Page{Root: repoRoot, Kustomize: kustomizeOffline}
			var got []string
			for i, text := range tc.blocks {
				for _, err := range p.Lint(Block{File: "page.md", Line: i + 1, Kind: Shell, Lang: "sh", Text: text + "\n"}) {
					got = append(got, err.Error())
				}
			}
			all := strings.Join(got, "\n")
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("unexpected findings:\n%s", all)
			case tc.want != "" && !strings.Contains(all, tc.want):
				t.Errorf("want a finding %q, got:\n%s", tc.want, all)
			}
		})
	}
}

// YAML as it was in docs/deployment-definition.md fails validation.
func TestValidateFindsWhatTheDocsGotWrong(t *testing.T) {
	v, err := NewValidator(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	app := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop-prod, namespace: argocd}
spec:
  %s
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://git.example.com/deploy.git
    path: shop
    plugin:
      name: argocd-ocm-plugin
      parameters:
        - {name: repository, string: registry.internal.example:5000/ocm}
`
	for _, tc := range []struct {
		name, marker, text, want string
	}{
		{"unquoted syncWave expression", DefinitionSpec, "renders:\n  - resource: {name: chart}\n    syncWave: ${parameters.late ? 5 : 2}\n", "not YAML"},
		{"quoted, undeclared parameter", DefinitionSpec, "renders:\n  - resource: {name: chart}\n    syncWave: '${parameters.late ? 5 : 2}'\n", `unknown parameter "late"`},
		{"quoted and declared", DefinitionSpec, "parameters: {late: {type: boolean, default: false}}\nrenders:\n  - resource: {name: chart}\n    syncWave: '${parameters.late ? 5 : 2}'\n", ""},
		{"a string wave", DefinitionSpec, "renders:\n  - resource: {name: chart}\n    syncWave: \"3\"\n", "syncWave"},
		{"Application without project", "", strings.Replace(app, "%s", "# no project", 1), "missing property 'project'"},
		{"Application", "", strings.Replace(app, "%s", "project: default", 1), ""},
		{"Application with an unknown field", "", strings.Replace(app, "%s", "project: default\n  sourcez: {}", 1), "sourcez"},
		{"Application without a name", "", strings.Replace(strings.Replace(app, "%s", "project: default", 1), "name: shop-prod, ", "", 1), "name"},
		{"unknown ComponentDeployment field", "", "apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1\nkind: ComponentDeployment\nmetadata: {name: x}\nspec:\n  renders:\n    - resource: {name: chart}\n      valuez: {}\n", `unknown field "valuez"`},
		{"platform config", PlatformConfig, "project: idp\npackages:\n  portal: {syncWave: 1}\n", ""},
		{"platform config with a typo", PlatformConfig, "project: idp\npackagez: {}\n", "packagez"},
		{"unmarked YAML", "", "replicaCount: 2\n", "mark what it is"},
		{"fragment", Fragment, "replicaCount: 2\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := v.Validate(Block{File: "page.md", Line: 1, Kind: YAML, Lang: "yaml", Marker: tc.marker, Text: tc.text})
			var all []string
			for _, e := range errs {
				all = append(all, e.Error())
			}
			got := strings.Join(all, "\n")
			switch {
			case tc.want == "" && got != "":
				t.Errorf("unexpected: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("want %q, got %q", tc.want, got)
			}
		})
	}
}

func TestExtract(t *testing.T) {
	md := "# t\n\n<!-- docs-test: needs-cluster -->\n```sh\nkubectl get pods\n```\n\n1. item\n\n   ```yaml\n   a: 1\n   b:\n     c: 2\n   ```\n\n```\noutput\n```\n"
	blocks, err := Extract("x.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 || blocks[0].Marker != NeedsCluster || blocks[0].Kind != Shell || blocks[1].Kind != YAML ||
		blocks[1].Text != "a: 1\nb:\n  c: 2\n" || blocks[1].Line != 10 || blocks[2].Kind != "" {
		t.Fatalf("%+v", blocks)
	}
	for _, bad := range []string{"```sh\nunclosed\n", "<!-- docs-test: sometimes -->\n```sh\nx\n```\n", "<!-- docs-test: fragment x -->\n```sh\nx\n```\n"} {
		if _, err := Extract("x.md", []byte(bad)); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}
