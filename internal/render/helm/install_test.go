package helm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// helmInstall renders c with Helm's own install action as `helm template`
// does (client-only dry run), as RenderChart did before it ran Helm's
// steps itself.
func helmInstall(c *chart.Chart, vals map[string]any, opts helm.Options) (*release.Release, error) {
	cfg := action.NewConfiguration()
	cfg.SetLogger(slog.DiscardHandler)
	install := action.NewInstall(cfg)
	install.DryRunStrategy = action.DryRunClient
	install.Replace = true
	install.ReleaseName = opts.ReleaseName
	if install.ReleaseName == "" {
		install.ReleaseName = "release-name"
	}
	install.Namespace = opts.Namespace
	if install.Namespace == "" {
		install.Namespace = "default"
	}
	install.SkipCRDs = opts.SkipCRDs
	install.SkipSchemaValidation = opts.SkipSchemaValidation
	install.APIVersions = common.VersionSet(opts.APIVersions)
	kv := opts.KubeVersion
	if kv == "" {
		kv = helm.DefaultKubeVersion()
	}
	v, err := common.ParseKubeVersion(kv)
	if err != nil {
		return nil, err
	}
	install.KubeVersion = v
	r, err := install.RunWithContext(context.Background(), c, vals)
	if err != nil {
		return nil, err
	}
	return r.(*release.Release), nil
}

// randomSuffix is the random suffix of helm test Pods' names (podinfo's).
var randomSuffix = regexp.MustCompile(`(?m)^(  name: .*-test)-[a-z0-9]{5}$`)

type installCase struct {
	name  string
	chart []byte
	opts  helm.Options
	vals  func() map[string]any
}

// Helm's steps as installClientOnly runs them give, byte for byte, the
// release manifest and the hooks Helm's install action gives: on the
// real-world charts, the catalog chart (CRDs, a subchart, hooks), podinfo's
// goldens, and charts whose render fails at each of Helm's steps.
func TestInstallClientOnlyIsHelmInstall(t *testing.T) {
	podinfo, err := os.ReadFile(fixtures.Path(t, "inputs", "podinfo-mini-0.1.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	none := func() map[string]any { return map[string]any{} }
	cases := []installCase{
		{"podinfo-mini", podinfo, helm.Options{ReleaseName: "demo", Namespace: "demo", KubeVersion: "1.31.0"}, none},
		{"catalog", catalogChart(t), helm.Options{ReleaseName: "shop", Namespace: "shop", KubeVersion: "v1.30.4+k3s1", APIVersions: []string{"monitoring.coreos.com/v1"}}, none},
		{"catalog-no-cache", catalogChart(t), helm.Options{SkipCRDs: true}, func() map[string]any {
			return map[string]any{"cache": map[string]any{"enabled": false}}
		}},
	}
	for name, files := range map[string]map[string]string{
		"kube-version": {"Chart.yaml": "apiVersion: v2\nname: kv\nversion: 0.1.0\nkubeVersion: '<1.20'\n"},
		"engine-error": {"templates/a.yaml": "{{ fail \"no\" }}"},
		"yaml-error":   {"templates/a.yaml": "a: [\n"},
		"notes-partials-empty": {
			"templates/NOTES.txt": "{{ .Release.Name }}", "templates/_h.tpl": "{{ define \"x\" }}kind: A{{ end }}",
			"templates/empty.yaml": "\n---\n  \n", "templates/b.yaml": "# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
			"templates/hook.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: h\n  annotations:\n    helm.sh/hook: pre-install,test\n    helm.sh/hook-weight: \"-3\"\n",
		},
		// .Capabilities.HelmVersion is left out: Helm's install action says
		// v4.3, the helm CLI v4.3.2, and the plugin what the CLI says
		// (TestHelmVersionIsTheCLIs).
		"built-in-objects": {"templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  release: {{ toJson .Release | quote }}\n" +
			"  caps: {{ printf \"%v %v\" .Capabilities.KubeVersion (.Capabilities.APIVersions.Has \"policy/v1\") | quote }}\n" +
			"  chart: {{ toJson .Chart | quote }}\n  template: {{ toJson .Template | quote }}\n"},
		"schema": {"values.schema.json": `{"type":"object","properties":{"a":{"type":"integer"}}}`, "values.yaml": "a: x\n"},
		"schema-subcharts": {
			"Chart.yaml":         "apiVersion: v2\nname: schema-subcharts\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 0.1.0\n- name: sub\n  alias: again\n  version: 0.1.0\n- name: other\n  version: 0.1.0\n",
			"values.schema.json": `{"type":"object","properties":{"a":{"type":"integer"},"b":{"enum":[1,2]}}}`, "values.yaml": "a: x\nb: 1\nsub:\n  n: y\nagain:\n  n: 2\nother: {}\n", // one error a schema: the order of several is random
			"charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n", "charts/sub/values.schema.json": `{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`,
			"charts/other/Chart.yaml": "apiVersion: v2\nname: other\nversion: 0.1.0\n", "charts/other/values.schema.json": `{"type":"object"}`,
		},
		// What Helm 4 renders differently from Helm 3 (docs/helm4.md).
		"helm4-differences": {
			"values.yaml": "resources:\n  limits: null\n  requests:\n    cpu: 1m\n",
			"templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  resources: {{ toYaml .Values.resources | quote }}\n  kept: |+\n    text\n\n\n" +
				"--- # a comment after the separator\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n   \t\n" +
				"---\t\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: v\n" +
				"---apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: m\n" +
				"---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: s\n",
		},
		"null-default-required": {
			"values.yaml": "policy: null\n", "values.schema.json": `{"type":"object","required":["policy"],"properties":{"policy":{"type":"string"}}}`,
		},
		"schema-valid": {
			"Chart.yaml":         "apiVersion: v2\nname: schema-valid\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 0.1.0\n",
			"values.schema.json": `{"type":"object","properties":{"a":{"type":"integer"}}}`, "values.yaml": "a: 1\nsub:\n  n: 2\n",
			"templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
			"charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n", "charts/sub/values.schema.json": `{"type":"object","properties":{"n":{"type":"integer"}}}`,
		},
	} {
		if files["Chart.yaml"] == "" {
			files["Chart.yaml"] = "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"
		}
		b := map[string][]byte{}
		for k, v := range files {
			b[k] = []byte(v)
		}
		tgz, err := ocmbuild.PackageChart(b)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, installCase{name, tgz, helm.Options{}, none})
	}
	for _, c := range realWorldCases(t) {
		data, err := os.ReadFile(c.chart)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, installCase{c.name, data, c.opts, func() map[string]any { return c.values(t) }})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			load := func() *chart.Chart {
				c, err := helm.LoadArchive(tc.chart)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			want, wantErr := helmInstall(load(), tc.vals(), tc.opts)
			manifest, hooks, err := helm.InstallClientOnly(load(), tc.vals(), tc.opts)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("error %v, Helm's %v", err, wantErr)
			}
			if err != nil {
				return
			}
			if manifest != want.Manifest {
				t.Errorf("manifest differs from Helm's:\n%s\nHelm's:\n%s", manifest, want.Manifest)
			}
			mask := func(hs []*release.Hook) []*release.Hook {
				var out []*release.Hook
				for _, h := range hs {
					c := *h
					if m := randomSuffix.ReplaceAllString(c.Manifest, "$1"); m != c.Manifest {
						c.Manifest, c.Name = m, testPodSuffix.ReplaceAllString(c.Name, "")
					}
					out = append(out, &c)
				}
				return out
			}
			if got, want := mask(hooks), mask(want.Hooks); !reflect.DeepEqual(got, want) {
				t.Errorf("hooks differ from Helm's: %d hooks, Helm's %d", len(got), len(want))
				for i := range min(len(got), len(want)) {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Errorf("hook %d: %+v\nHelm's: %+v", i, got[i], want[i])
					}
				}
			}
			if len(hooks)+strings.Count(manifest, "---\n# Source: ") == 0 && tc.name != "kube-version" {
				t.Errorf("nothing rendered")
			}
		})
	}
}

func objectsChart(t testing.TB, template string) []byte {
	t.Helper()
	tgz, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml":          []byte("apiVersion: v2\nname: objects\nversion: 0.1.0\n"),
		"templates/cm.yaml":   []byte(template),
		"templates/NOTES.txt": []byte("{{ range until 20000 }}\n---\n{{ end }}"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tgz
}

// A chart of 100 000 objects is refused as soon as Helm's engine has
// rendered it, before Helm sorts its manifests (which YAML-parses each
// document: 4.7 s), with the error of more than MaxObjects objects; hooks
// count too. At the limit, a chart still renders.
func TestObjectLimitBeforeSorting(t *testing.T) {
	sorts, restore := helm.CountSorts()
	defer restore()
	hook := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: h{{ . }}\n  annotations:\n    helm.sh/hook: pre-install\n"
	for name, tpl := range map[string]string{
		"objects":  examples.HostileTemplates["objects"],
		"hooks":    "{{- range until 10001 }}\n---\n" + hook + "{{- end }}\n",
		"in-files": "{{- range until 5001 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x{{ . }}\n---\n" + hook + "{{- end }}\n",
	} {
		t.Run(name, func(t *testing.T) {
			before := sorts()
			_, err := helm.Render(context.Background(), objectsChart(t, tpl), helm.Options{})
			want := fmt.Sprintf("render failed: helm chart objects: chart objects: more than %d objects: invalid input: limit exceeded", manifests.MaxObjects)
			if err == nil || err.Error() != want {
				t.Fatalf("error %v, want %s", err, want)
			}
			if !errors.Is(err, errdef.ErrRender) {
				t.Errorf("%v does not wrap ErrRender", err)
			}
			if n := sorts() - before; n != 0 {
				t.Errorf("refused after Helm sorted the manifests (%d sorts)", n)
			}
		})
	}
	// MaxObjects documents, partials, NOTES.txt and comment-only separators
	// beside them: rendered (and sorted by the plugin, without Helm's
	// sort: see sortedRelease).
	before := sorts()
	objs, err := helm.Render(context.Background(), objectsChart(t,
		"{{- range until 9999 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x{{ . }}\n{{- end }}\n---\n"+strings.ReplaceAll(hook, "{{ . }}", "last")),
		helm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != manifests.MaxObjects {
		t.Errorf("%d objects, want %d", len(objs), manifests.MaxObjects)
	}
	if n := sorts() - before; n != 0 {
		t.Errorf("%d sorts by Helm, want 0", n)
	}
}

// BenchmarkRefuseManyObjects is the time to refusal of the 100 000-object
// chart of examples.HostileTemplates.
func BenchmarkRefuseManyObjects(b *testing.B) {
	tgz := objectsChart(b, examples.HostileTemplates["objects"])
	for b.Loop() {
		if _, err := helm.Render(context.Background(), tgz, helm.Options{}); err == nil {
			b.Fatal("rendered")
		}
	}
}

// splitCount counts the documents Helm's SplitManifests splits a file into,
// and splitDocs gives them in order.
func TestSplitCount(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want := releaseutil.SplitManifests(s)
		if got := helm.SplitCount(s); got != len(want) {
			t.Fatalf("%q: %d documents, Helm's %d", s, got, len(want))
		}
		for i, d := range helm.SplitDocs(s) {
			if w := want[fmt.Sprintf("manifest-%d", i)]; d != w {
				t.Fatalf("%q: document %d is %q, Helm's %q", s, i, d, w)
			}
		}
	}
	for _, s := range []string{"", "---", "a", "---\na", "a\n---", "a\n---\nb", "a\n---\n---\nb", "a\n---\n---\n---\nb",
		"a\n----\nb", "a---b", " \n \t---x\n\n---\n\n", "\r\n---\r\nb", "a\n \f\n---", "---\n---\n---", "\v---\va\n\v---"} {
		check(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"-", "-", "-", "---", "\n", "\n", " ", "\t", "\r", "\f", "\v", "a", "#", "\u00a0"}
	for range 200_000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		check(b.String())
	}
}

// A render gives up with its generation's context: before Helm's engine when
// the context is done already, and after it when the context ends while
// templates run (the engine runs them to the end; nothing is decoded or
// sorted then). The deadline starts at a tenth of what the same render took
// here with a live context, so that it falls inside the engine; a machine
// that has become that much quicker since finishes the render first (its
// objects, no error), and the deadline is halved until it ends one.
func TestRenderStopsWithItsContext(t *testing.T) {
	slow := objectsChart(t, "{{ range until 2000000 }}{{ end }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
	start := time.Now()
	if objs, err := helm.Render(context.Background(), slow, helm.Options{}); err != nil || len(objs) != 1 {
		t.Fatalf("with a live context: %d objects, error %v", len(objs), err)
	}
	took := time.Since(start)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if objs, err := helm.Render(done, slow, helm.Options{}); !errors.Is(err, context.Canceled) || len(objs) != 0 {
		t.Errorf("cancelled: %d objects, error %v; want none and %v", len(objs), err, context.Canceled)
	}
	for d := took / 10; ; d /= 2 {
		short, cancelShort := context.WithTimeout(context.Background(), d)
		objs, err := helm.Render(short, slow, helm.Options{})
		cancelShort()
		if err == nil && len(objs) == 1 {
			if d < time.Microsecond {
				t.Fatalf("the render outran every deadline down to %v", d)
			}
			t.Logf("the render finished within %v (it took %v before): halving the deadline", d, took)
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) || len(objs) != 0 {
			t.Errorf("deadline of %v while templates run: %d objects, error %v; want none and %v", d, len(objs), err, context.DeadlineExceeded)
		}
		break
	}
}
