package helm_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// The goldens were made by the helm v4.3.2 CLI (testdata/ocm-cli/golden/commands.txt).
func TestRenderMatchesHelmTemplate(t *testing.T) {
	chart, err := os.ReadFile(fixtures.Path(t, "inputs", "podinfo-mini-0.1.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	relocated := map[string]any{}
	b, err := os.ReadFile(fixtures.Path(t, "golden", "values-relocated.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &relocated); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		golden string
		values map[string]any
	}{
		{"podinfo-mini-defaults.yaml", nil},
		{"podinfo-mini-relocated.yaml", relocated},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			got, err := helm.Render(context.Background(), chart, helm.Options{
				ReleaseName: "demo", Namespace: "demo", KubeVersion: "1.31.0", Values: tc.values,
			})
			if err != nil {
				t.Fatal(err)
			}
			manifeststest.Equal(t, got, manifeststest.ReadFile(t, fixtures.Path(t, "golden", tc.golden)))
		})
	}
}

func catalogChart(t *testing.T) []byte {
	t.Helper()
	files, err := ocmbuild.ReadDir("../../../testdata/src/charts/catalog")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ocmbuild.PackageChart(files)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func kinds(objs []manifests.Object) string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o["kind"].(string))
	}
	return strings.Join(ks, ",")
}

func find(objs []manifests.Object, kind string) manifests.Object {
	for _, o := range objs {
		if o["kind"] == kind {
			return o
		}
	}
	return nil
}

func TestRenderCRDsSubchartsHooksCapabilities(t *testing.T) {
	chart := catalogChart(t)
	ctx := context.Background()
	objs, err := helm.Render(ctx, chart, helm.Options{
		ReleaseName: "shop", Namespace: "shop", KubeVersion: "v1.30.4+k3s1",
		APIVersions: []string{"monitoring.coreos.com/v1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Helm install order: CRD first (included by default), then kinds, the hook Job last.
	if got := kinds(objs); got != "CustomResourceDefinition,Deployment,StatefulSet,Product,Job" {
		t.Fatalf("kinds %s", got)
	}
	job := find(objs, "Job")
	args, _ := yaml.Marshal(job["spec"])
	if !strings.Contains(string(args), "--kube=v1.30.4") {
		t.Errorf("kube version not passed: %s", args)
	}
	dep, _ := yaml.Marshal(find(objs, "Deployment"))
	if !strings.Contains(string(dep), "METRICS") || !strings.Contains(string(dep), "namespace: shop") {
		t.Errorf("api versions / namespace not passed: %s", dep)
	}
	sts, _ := yaml.Marshal(find(objs, "StatefulSet"))
	if !strings.Contains(string(sts), "redis:7.4") {
		t.Errorf("parent values did not reach the subchart: %s", sts)
	}

	objs, err = helm.Render(ctx, chart, helm.Options{SkipCRDs: true, SkipHooks: true,
		Values: map[string]any{"cache": map[string]any{"enabled": false}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(objs); got != "Deployment,Product" {
		t.Fatalf("kinds without CRDs, hooks and disabled subchart: %s", got)
	}
	if dep, _ := yaml.Marshal(find(objs, "Deployment")); strings.Contains(string(dep), "METRICS") {
		t.Errorf("API version leaked from the previous render: %s", dep)
	}
}

func TestRenderErrors(t *testing.T) {
	chart := catalogChart(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		chart   []byte
		opts    helm.Options
		want    error
		mention string
	}{
		{"not a chart", []byte("hello"), helm.Options{}, errdef.ErrRender, "loading chart"},
		{"bad kube version", chart, helm.Options{KubeVersion: "banana"}, errdef.ErrInvalidInput, "banana"},
		{"bad release name", chart, helm.Options{ReleaseName: "Not_Valid"}, errdef.ErrInvalidInput, "Not_Valid"},
		{"schema violation", chart, helm.Options{Values: map[string]any{"image": map[string]any{"tag": 5}}}, errdef.ErrRender, "catalog"},
		{"library chart", libraryChart(t), helm.Options{}, errdef.ErrRender, "library charts are not installable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helm.Render(ctx, tc.chart, tc.opts)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("got %v, want %v mentioning %q", err, tc.want, tc.mention)
			}
		})
	}
}

// libraryChart is a library chart: helm template refuses it.
func libraryChart(t *testing.T) []byte {
	t.Helper()
	tgz, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml":         []byte("apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n"),
		"templates/_lib.tpl": []byte("{{ define \"lib.x\" }}x{{ end }}"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tgz
}

func TestMissingDependencyIsRefused(t *testing.T) {
	files, err := ocmbuild.ReadDir("../../../testdata/src/charts/catalog")
	if err != nil {
		t.Fatal(err)
	}
	for n := range files {
		if strings.HasPrefix(n, "charts/") {
			delete(files, n)
		}
	}
	chart, err := ocmbuild.PackageChart(files)
	if err != nil {
		t.Fatal(err)
	}
	_, err = helm.Render(context.Background(), chart, helm.Options{})
	if !errors.Is(err, errdef.ErrRender) || !strings.Contains(err.Error(), "dependencies are not packaged") {
		t.Fatalf("got %v", err)
	}
}

// Without a KubeVersion a chart requiring a recent Kubernetes renders, as
// with a released helm binary (Helm's library default, v1.20.0, refuses it).
func TestDefaultKubeVersionSatisfiesRecentCharts(t *testing.T) {
	c := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "recent", Version: "0.1.0", KubeVersion: ">=1.25.0-0"},
		Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube\ndata:\n  version: {{ .Capabilities.KubeVersion.Version | quote }}\n")}},
	}
	objs, err := helm.RenderChart(context.Background(), c, helm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := find(objs, "ConfigMap")["data"].(map[string]any)["version"]
	if got != helm.DefaultKubeVersion() || got == "v1.20.0" {
		t.Errorf("Capabilities.KubeVersion = %v, want %s (not Helm's v1.20.0)", got, helm.DefaultKubeVersion())
	}
	// An explicit older version still refuses the chart.
	if _, err := helm.RenderChart(context.Background(), c, helm.Options{KubeVersion: "1.24.0"}); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
		t.Errorf("kube version 1.24.0: want the chart's kubeVersion error, got %v", err)
	}
}
