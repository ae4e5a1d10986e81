package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// The kro section (issue 27): OCM's helm-configuration-localization
// component (examples.KroHelm: the demo podinfo chart, an image and the
// ResourceGraphDefinition OCM's controllers deploy it with), rendered by
// the plugin from the RGD (its Argo CD deployer block, with the instance
// parameters the Application gives), through the sidecar and as a process,
// against `helm template` of the chart with the values that block computes,
// alternated; and the RGD's plan/evaluation alone in process (no Helm), the
// median of many iterations.

// Instance parameters of the kro figures and what the RGD's Argo CD block
// makes of them (examples.KroHelmRGD): release name and namespace from the
// block, replicaCount and ui.message from the instance, the image from the
// OCM Resource node's computed status, ui.color from the block's Helm
// parameters.
var (
	kroParams  = map[string]string{"podinfo.message": "hello from the bench", "podinfo.replicas": "2"}
	kroRelease = "helm-configuration-localization"
	// The release namespace is the Application's destination namespace
	// (ARGOCD_APP_NAMESPACE of b.generate), not the block's
	// destination.namespace (docs/kro.md).
	kroNS     = "bench"
	kroValues = map[string]any{
		"replicaCount": 2,
		"image":        map[string]any{"repository": "ghcr.io/stefanprodan/podinfo", "tag": "6.9.1"},
		"ui":           map[string]any{"message": "hello from the bench", "color": "#ff0000"},
	}
)

const (
	kroEvalIters = 200 // in-process evaluations (after 10 untimed)
	kroEvalLimit = 5.0 // ms, median
	// kroSidecarLimit: the sidecar on an RGD component / helm template of
	// the substituted chart (issue 38).
	kroSidecarLimit = 0.6
)

func (b *bench) kroComponent() *ocmbuild.Component {
	comps, err := examples.KroDemo(filepath.Join(b.root, "testdata", "src"))
	if err != nil {
		fatalf("examples: %v", err)
	}
	for _, c := range comps {
		if c.Name == examples.KroHelm {
			return c
		}
	}
	fatalf("example component %s missing", examples.KroHelm)
	return nil
}

func (b *bench) kro(ctx context.Context) {
	b.section("kro")
	comp := b.kroComponent()
	if comp.Version != benchVer {
		fatalf("%s: version %s, the harness generates %s", comp.Name, comp.Version, benchVer)
	}
	b.reg.Push(b.tb, "kro", comp)
	repo := b.reg.Host + "/kro"
	chartFile := filepath.Join(b.dir("charts"), "podinfo-6.7.0.tgz") // written by setup: the chart of examples.KroDemo
	writeFiles(filepath.Dir(chartFile), map[string][]byte{filepath.Base(chartFile): b.podinfoTgz})
	vals, err := yaml.Marshal(kroValues)
	if err != nil {
		fatalf("%v", err)
	}
	valuesFile := filepath.Join(b.dir("kro"), "values.yaml")
	writeFiles(filepath.Dir(valuesFile), map[string][]byte{filepath.Base(valuesFile): vals})

	cache := b.dir("cache-warm")
	spec := func(name string) cmdSpec {
		c := b.generate(name, "bench", repo, examples.KroHelm, "", cache)
		params := []map[string]string{{"name": "component", "string": examples.KroHelm}, {"name": "version", "string": benchVer}}
		for _, k := range sortedKeys(kroParams) {
			params = append(params, map[string]string{"name": "parameters." + k, "string": kroParams[k]})
		}
		pj, _ := json.Marshal(params)
		c.Env = setEnv(c.Env, "ARGOCD_APP_PARAMETERS", string(pj))
		return c
	}
	helm := newJob(cmdSpec{Name: "helm template (the RGD's values)", Bin: b.bins.Helm, Env: b.baseEnv, Dir: b.appDir,
		Args: []string{"template", kroRelease, chartFile, "--namespace", kroNS, "--include-crds", "-f", valuesFile}})
	side := newJob(b.sidecar(spec("generate warm (kro RGD)")))
	proc := newJob(spec("generate warm (kro RGD)"))
	logf("kro: %d runs of each command, interleaved", b.cfg.Runs)
	interleave(ctx, b.cfg.Runs, helm, side, proc)
	sameBytes("kro", proc.s, side.s)
	sameObjects("kro: the RGD's render against helm template with its values", helm.s.samples[0].Stdout, proc.s.samples[0].Stdout)
	what := fmt.Sprintf("%s (kro RGD, Argo CD block; %s)", examples.KroHelm, strings.SplitN(kinds(helm.s.samples[0].Stdout), ":", 2)[0])
	b.wallGoal("sidecar", "G38 kro", "generate, warm cache, registry: "+what, side.s, helm.s, "ms helm template with the RGD's values", kroSidecarLimit)
	b.modeGoal("process", goal{ID: "info", What: "generate, warm cache, registry: " + what, Value: round(proc.s.wall()), Unit: "ms",
		Reference: round(helm.s.wall()), RefWhat: "ms helm template with the RGD's values", Ratio: round(proc.s.wall() / helm.s.wall()), Note: minNote(proc.s, helm.s)})

	ev := b.kroEvaluate(ctx, repo)
	b.addGoal(goal{ID: "G38 kro eval", What: fmt.Sprintf("in process: plan/evaluate the RGD of %s (no Helm), median of %d", examples.KroHelm, len(ev)),
		Value: round(median(ev)), Unit: "ms", LimitWhat: fmt.Sprintf("≤ %g ms", kroEvalLimit), Limit: kroEvalLimit, Met: boolp(median(ev) <= kroEvalLimit),
		Note: fmt.Sprintf("min %.2f ms, p90 %.2f ms, max %.2f ms; warm blob cache, registry over loopback; the plan's one step renders the chart with %s", minOf(ev), quantile(ev, 0.9), maxOf(ev), compactJSON(kroValues))})
	b.res.Sections["kro"] = map[string]any{"helm_template": helm.s.summary(), "sidecar": side.s.summary(), "process": proc.s.summary(),
		"output": kinds(helm.s.samples[0].Stdout), "parameters": kroParams, "values": kroValues,
		"evaluate_ms": map[string]any{"median": round(median(ev)), "min": round(minOf(ev)), "p90": round(quantile(ev, 0.9)), "max": round(maxOf(ev)), "n": len(ev)}}
	b.checkServers("kro")
}

// kroEvaluate times the RGD's plan/evaluation in process, as a render
// plans (the component resolved and its resources read through the
// verified access, before Helm runs); it checks that the plan is the one
// Helm step with the block's values and that the render succeeds.
func (b *bench) kroEvaluate(ctx context.Context, repo string) []float64 {
	logf("kro: %d in-process evaluations of the RGD", kroEvalIters)
	runtime.GC()
	engine := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(b.dir("cache-warm")), argocdocm.WithPlainHTTP(b.reg.Host), argocdocm.WithoutDockerConfig())
	r, err := engine.Renderer(argocdocm.Generation{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Notes: io.Discard})
	if err != nil {
		fatalf("%v", err)
	}
	req := argocdocm.Request{Repository: repo, Component: examples.KroHelm, Version: benchVer, Application: "bench", Namespace: "bench", Parameters: kroParams}
	res, err := r.Render(ctx, req)
	if err != nil || len(res.Objects) == 0 {
		fatalf("kro in-process render: %v (%d objects)", err, len(res.Objects))
	}
	found, err := r.Resolve(ctx, req)
	if err != nil {
		fatalf("kro: %v", err)
	}
	defer found.Close()
	in := plan.Input{Request: argocdocm.Request{Application: req.Application, Repository: repo, Component: req.Component, Version: req.Version,
		Namespace: req.Namespace, Parameters: req.Parameters}, Registry: strings.TrimSuffix(strings.TrimPrefix(repo, "http://"), "/"), Reader: plan.NewResources(access.Resolver{})}
	planner := rgd.Wrap(&deployment.DefinitionPlanner{})
	var out []float64
	var steps []plan.Step
	for i := 0; i < 10+kroEvalIters; i++ {
		t0 := time.Now()
		p, err := planner.Plan(ctx, found.Component, in)
		d := time.Since(t0)
		if err != nil {
			fatalf("kro: plan: %v", err)
		}
		if i >= 10 {
			out = append(out, ms(d))
		}
		steps = p.Steps
	}
	if len(steps) != 1 || steps[0].ReleaseName != kroRelease || steps[0].Namespace != kroNS {
		fatalf("kro in-process plan: %d steps (want 1, release %s in %s)", len(steps), kroRelease, kroNS)
	}
	want, _ := json.Marshal(kroValues)
	got, _ := json.Marshal(steps[0].Values)
	if !jsonEqual(want, got) {
		fatalf("kro: the RGD's Argo CD block computes the values %s, the harness's helm template uses %s", got, want)
	}
	return out
}

// sameObjects fails unless two renders (YAML or JSON streams) hold the same
// objects, in any order.
func sameObjects(label string, want, got []byte) {
	norm := func(name string, b []byte) []string {
		objs, err := manifests.Decode(name, b)
		if err != nil {
			fatalf("%s: %v", label, err)
		}
		var out []string
		for _, o := range objs {
			j, _ := json.Marshal(o)
			out = append(out, string(j))
		}
		sort.Strings(out)
		return out
	}
	w, g := norm("helm template", want), norm("generate", got)
	if !reflect.DeepEqual(w, g) {
		for i := range min(len(w), len(g)) {
			if w[i] != g[i] {
				fatalf("%s: %d / %d objects; first difference:\n  helm:     %s\n  generate: %s", label, len(w), len(g), w[i], g[i])
			}
		}
		fatalf("%s: %d objects from helm template, %d from generate", label, len(w), len(g))
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func compactJSON(v any) string {
	j, _ := json.Marshal(v)
	return string(j)
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
