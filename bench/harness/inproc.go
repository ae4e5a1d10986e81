package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// inProcess separates process start-up from rendering: start-up of each
// binary (`version`, and GODEBUG=inittrace), then, inside this process, the
// Helm engine alone (what `helm template` does after start-up: load the
// archive, render) against the plugin's whole pipeline (resolve, fetch
// through the cache, verify, render, encode), with a new registry client
// per generation (what the render server does) and with one client kept.
// With -profile, CPU profiles of both.
func (b *bench) inProcess(ctx context.Context) {
	b.section("inprocess")
	hv := newJob(cmdSpec{Name: "helm version", Bin: b.bins.Helm, Args: []string{"version", "--short"}, Env: b.baseEnv, Dir: b.appDir})
	pv := newJob(cmdSpec{Name: "argocd-ocm-plugin version", Bin: b.bins.Plugin, Args: []string{"version"}, Env: b.baseEnv, Dir: b.appDir})
	// A thin client's floor: a tiny Go binary starting and exec'ing /bin/true.
	thin := newJob(cmdSpec{Name: "tiny Go binary", Bin: procstat, Args: []string{filepath.Join(b.work, "thin.json"), "true"}, Env: b.baseEnv, Dir: b.appDir})
	interleave(ctx, b.cfg.Runs, hv, pv, thin)
	hInit, hTop := initTrace(b.bins.Helm, b.baseEnv, "version", "--short")
	pInit, pTop := initTrace(b.bins.Plugin, b.baseEnv, "version")
	b.addGoal(goal{ID: "info", What: "process start-up (`version`): argocd-ocm-plugin", Value: round(pv.s.wall()), Unit: "ms",
		Reference: round(hv.s.wall()), RefWhat: "ms helm version", Ratio: round(pv.s.wall() / hv.s.wall())})
	b.addGoal(goal{ID: "info", What: "package init time (GODEBUG=inittrace=1): argocd-ocm-plugin", Value: round(pInit), Unit: "ms",
		Reference: round(hInit), RefWhat: "ms helm", Note: "plugin: " + pTop + "; helm: " + hTop})
	sec := map[string]any{"startup": map[string]any{"helm_version": hv.s.summary(), "plugin_version": pv.s.summary(), "tiny_go_binary": thin.s.summary(),
		"helm_init_ms": round(hInit), "plugin_init_ms": round(pInit), "helm_init_top": hTop, "plugin_init_top": pTop}}

	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	cdir := b.dir("cache-inproc")
	// One engine, as a command builds it: a new registry client per
	// generation, nothing shared between them.
	engine := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(cdir), argocdocm.WithPlainHTTP(b.reg.Host), argocdocm.WithoutDockerConfig())
	newRenderer := func() *argocdocm.Renderer {
		r, err := engine.Renderer(argocdocm.Generation{Logger: lg, Notes: io.Discard})
		if err != nil {
			fatalf("%v", err)
		}
		return r
	}
	type inprocCase struct {
		label, short string
		engineName   string
		cli          string
		text         []byte // the engine's output, for decode costs
		engine       func() int
		req          argocdocm.Request
	}
	var cases []inprocCase
	engineText := map[string][]byte{}
	for i, c := range b.chartFx {
		data := c.Data
		cases = append(cases, inprocCase{label: c.Label, short: []string{"podinfo", "large-chart"}[min(i, 1)], engineName: "Helm engine", cli: "helm template",
			req: argocdocm.Request{Component: c.Component}, engine: func() int {
				cfg := action.NewConfiguration()
				cfg.SetLogger(slog.DiscardHandler)
				inst := action.NewInstall(cfg)
				inst.DryRunStrategy, inst.Replace, inst.IncludeCRDs = action.DryRunClient, true, true
				inst.ReleaseName, inst.Namespace = "bench", "bench"
				ch, err := loader.LoadArchive(bytes.NewReader(data))
				if err != nil {
					fatalf("%v", err)
				}
				r, err := inst.RunWithContext(ctx, ch, map[string]any{})
				if err != nil {
					fatalf("%v", err)
				}
				rel := r.(*release.Release)
				n := len(rel.Manifest)
				for _, h := range rel.Hooks {
					n += len(h.Manifest)
				}
				if engineText[c.Label] == nil {
					engineText[c.Label] = []byte(rel.Manifest)
				}
				return n
			}})
	}
	for i, t := range b.treeFx {
		dir := t.Dir
		cases = append(cases, inprocCase{label: t.Label, short: []string{"extras", "shop"}[min(i, 1)], engineName: "kustomize engine", cli: "kustomize build",
			req: argocdocm.Request{Component: t.Component, Path: t.Path}, engine: func() int {
				o := krusty.MakeDefaultOptions()
				o.PluginConfig = types.DisabledPluginConfig()
				m, err := krusty.MakeKustomizer(o).Run(filesys.MakeFsOnDisk(), dir)
				if err != nil {
					fatalf("kustomize %s: %v", dir, err)
				}
				out, err := m.AsYaml()
				if err != nil {
					fatalf("%v", err)
				}
				return len(out)
			}})
	}
	for _, c := range cases {
		logf("in process: %s", c.label)
		req := c.req
		req.Application, req.Version, req.ReleaseName, req.Namespace = "bench", benchVer, "bench", "bench"
		var objs []manifests.Object
		render := func(r *argocdocm.Renderer, repo string) int {
			q := req
			q.Repository = repo
			res, err := r.Render(ctx, q)
			if err != nil {
				fatalf("in-process render of %s: %v", q.Component, err)
			}
			var buf bytes.Buffer
			if err := manifests.Encode(&buf, res.Objects); err != nil {
				fatalf("%v", err)
			}
			objs = res.Objects
			return buf.Len()
		}
		kept := newRenderer()
		fns := []inprocFn{
			{name: c.engineName, fn: c.engine},
			{name: "pipeline, registry, new client per generation", fn: func() int { return render(newRenderer(), b.repo) }},
			{name: "pipeline, registry, one client kept (long-lived)", fn: func() int { return render(kept, b.repo) }},
			{name: "pipeline, CTF", fn: func() int { return render(newRenderer(), b.ctfDir) }},
		}
		stats := inprocInterleave(b.cfg.InProcRuns, fns)
		c.text = engineText[c.label]
		sec[c.label] = stats
		e, p, k, x := stats[0], stats[1], stats[2], stats[3]
		b.addGoal(goal{ID: "info", What: "in process, warm, per generation (pipeline / " + c.engineName + "): " + c.label, Value: round(p.WallMedianMS), Unit: "ms",
			Reference: round(e.WallMedianMS), RefWhat: "ms " + c.engineName, Ratio: round(p.WallMedianMS / e.WallMedianMS),
			Note: fmt.Sprintf("allocations %.1f MiB vs %.1f MiB; one client kept: %.1f ms; CTF: %.1f ms", p.AllocMiB, e.AllocMiB, k.WallMedianMS, x.WallMedianMS)})
		if ref := b.cliWall[c.label]; ref > 0 {
			// The projection made before the long-lived mode existed, next
			// to the figure measured in the charts/kustomize sections.
			proj := thin.s.wall() + k.WallMedianMS
			note := fmt.Sprintf("tiny Go binary %.1f ms + render with a kept client %.1f ms", thin.s.wall(), k.WallMedianMS)
			if sw := b.sidecarWall[c.label]; sw > 0 {
				b.addGoal(goal{ID: "info", What: "measured long-lived generate (plugin service, warm, registry): " + c.label, Value: round(sw), Unit: "ms",
					Reference: round(ref), RefWhat: "ms " + c.cli, Ratio: round(sw / ref),
					Note: fmt.Sprintf("projected %.1f ms (%s)", proj, note)})
			} else {
				b.addGoal(goal{ID: "info", What: "projected long-lived generate (thin client + warm in-process render): " + c.label, Value: round(proj), Unit: "ms",
					Reference: round(ref), RefWhat: "ms " + c.cli, Ratio: round(proj / ref), Note: note})
			}
		}
		if len(objs) >= 50 {
			enc, js, dec := encodeCosts(objs, c.text)
			note := ""
			if dec > 0 {
				note = fmt.Sprintf("manifests.Decode of the engine's %d-byte output: %.1f ms", len(c.text), dec)
			}
			b.addGoal(goal{ID: "info", What: fmt.Sprintf("in process: manifests.Encode (YAML) of %d objects / encoding/json: %s", len(objs), c.label), Value: round(enc), Unit: "ms",
				Reference: round(js), RefWhat: "ms JSON", Ratio: round(enc / js), Note: note})
		}
		if b.cfg.ProfileDir != "" {
			profile(b.cfg.ProfileDir, "pipeline-"+c.short, func() { render(newRenderer(), b.repo) })
			profile(b.cfg.ProfileDir, "pipeline-ctf-"+c.short, func() { render(newRenderer(), b.ctfDir) })
			profile(b.cfg.ProfileDir, "engine-"+c.short, func() { c.engine() })
		}
	}
	if b.cfg.ProfileDir != "" {
		b.freshProfiles(ctx)
	}
	b.res.Sections["inprocess"] = sec
}

type inprocFn struct {
	name string
	fn   func() int
}

type inprocStat struct {
	Name         string    `json:"name"`
	WallMedianMS float64   `json:"wall_median_ms"`
	WallMS       []float64 `json:"wall_ms"`
	AllocMiB     float64   `json:"alloc_median_mib"`
	OutputBytes  int       `json:"output_bytes"`
}

// inprocInterleave runs the functions n times each, rotating the order, with
// a GC before every run so that one's garbage is not another's cost.
func inprocInterleave(n int, fns []inprocFn) []inprocStat {
	stats := make([]inprocStat, len(fns))
	allocs := make([][]float64, len(fns))
	for i, f := range fns {
		stats[i].Name = f.name
		stats[i].OutputBytes = f.fn() // warm-up
	}
	var ms0, ms1 runtime.MemStats
	for r := 0; r < n; r++ {
		for k := range fns {
			i := (r + k) % len(fns)
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			t0 := time.Now()
			fns[i].fn()
			d := time.Since(t0)
			runtime.ReadMemStats(&ms1)
			stats[i].WallMS = append(stats[i].WallMS, round(ms(d)))
			allocs[i] = append(allocs[i], float64(ms1.TotalAlloc-ms0.TotalAlloc)/(1<<20))
		}
	}
	for i := range stats {
		stats[i].WallMedianMS = round(median(stats[i].WallMS))
		stats[i].AllocMiB = round(median(allocs[i]))
	}
	return stats
}

// profile writes a CPU profile of fn run repeatedly for about 3 s, and the
// top functions (flat and cumulative) as text next to it.
func profile(dir, name string, fn func()) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatalf("%v", err)
	}
	p := filepath.Join(dir, name+".pprof")
	f, err := os.Create(p)
	if err != nil {
		fatalf("%v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fatalf("%v", err)
	}
	n := 0
	for t0 := time.Now(); time.Since(t0) < 3*time.Second || n < 3; n++ {
		fn()
	}
	pprof.StopCPUProfile()
	f.Close()
	var txt bytes.Buffer
	for _, mode := range [][]string{{"-top"}, {"-top", "-cum"}} {
		args := append([]string{"tool", "pprof", "-nodecount=40"}, mode...)
		out, err := exec.Command("go", append(args, p)...).CombinedOutput()
		if err != nil {
			logf("go tool pprof %s: %v", p, err)
		}
		fmt.Fprintf(&txt, "### go tool pprof %v %s (%d runs)\n%s\n", mode, filepath.Base(p), n, out)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".txt"), txt.Bytes(), 0o644); err != nil {
		fatalf("%v", err)
	}
	logf("profile %s (%d runs)", p, n)
}

var initRE = regexp.MustCompile(`(?m)^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock`)

// initTrace is the median over 5 runs of the total package-init clock time,
// and the three slowest packages of the last run.
func initTrace(bin string, env []string, args ...string) (float64, string) {
	var totals []float64
	var top string
	for i := 0; i < 5; i++ {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(slices.Clone(env), "GODEBUG=inittrace=1")
		out, _ := cmd.CombinedOutput()
		type pkg struct {
			name string
			ms   float64
		}
		var pkgs []pkg
		total := 0.0
		for _, m := range initRE.FindAllStringSubmatch(string(out), -1) {
			v, _ := strconv.ParseFloat(m[2], 64)
			total += v
			pkgs = append(pkgs, pkg{m[1], v})
		}
		totals = append(totals, total)
		slices.SortFunc(pkgs, func(a, b pkg) int {
			switch {
			case a.ms > b.ms:
				return -1
			case a.ms < b.ms:
				return 1
			}
			return 0
		})
		top = ""
		for j := 0; j < len(pkgs) && j < 3; j++ {
			top += fmt.Sprintf("%s %.1f ms ", pkgs[j].name, pkgs[j].ms)
		}
	}
	return median(totals), top
}

// encodeCosts times manifests.Encode (YAML, what the CLI prints) against
// encoding/json of the same objects (a YAML stream of JSON documents, which
// Argo CD reads alike), and manifests.Decode of the engine's text output;
// medians of 5 runs in ms.
func encodeCosts(objs []manifests.Object, text []byte) (yamlMS, jsonMS, decodeMS float64) {
	var y, j, d []float64
	for i := 0; i < 5; i++ {
		var buf bytes.Buffer
		runtime.GC()
		t0 := time.Now()
		if err := manifests.Encode(&buf, objs); err != nil {
			fatalf("%v", err)
		}
		y = append(y, ms(time.Since(t0)))
		buf.Reset()
		runtime.GC()
		t0 = time.Now()
		for _, o := range objs {
			buf.WriteString("---\n")
			b, err := json.Marshal(o)
			if err != nil {
				fatalf("%v", err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		j = append(j, ms(time.Since(t0)))
		if len(text) > 0 {
			runtime.GC()
			t0 = time.Now()
			if _, err := manifests.Decode("bench", text); err != nil {
				fatalf("%v", err)
			}
			d = append(d, ms(time.Since(t0)))
		}
	}
	if len(d) == 0 {
		return median(y), median(j), 0
	}
	return median(y), median(j), median(d)
}

// freshProfiles profiles single generations in fresh processes (bench/profrender:
// the pipeline as generate runs it, lazy initialisation included), warm cache.
func (b *bench) freshProfiles(ctx context.Context) {
	bin := filepath.Join(filepath.Dir(b.bins.Procstat), "profrender")
	goBuild(b.root, bin, "./bench/profrender")
	cache := b.dir("cache-profile")
	for _, p := range []struct{ name, component, path string }{
		{"fresh-large-chart", compLarge, ""}, {"fresh-podinfo", compPodinfo, ""},
		{"fresh-shop", compShop, "overlays/prod"}, {"fresh-extras", compExtras, ""}, {"fresh-bigtree", compBigTree, ""},
	} {
		args := []string{"-repository", b.repo, "-plain-http", b.reg.Host, "-component", p.component, "-version", benchVer, "-path", p.path}
		env := append(slices.Clone(b.baseEnv), "ARGOCD_OCM_CACHE_DIR="+cache)
		mustOK(cmdSpec{Name: "profrender", Bin: bin, Args: args, Env: env}, runProc(ctx, cmdSpec{Bin: bin, Args: args, Env: env})) // fill the cache
		var profs []string
		for i := 0; i < 3; i++ {
			prof := filepath.Join(b.cfg.ProfileDir, fmt.Sprintf("%s-%d.pprof", p.name, i))
			a := append(slices.Clone(args), "-cpuprofile", prof)
			if i == 0 {
				a = append(a, "-memprofile", filepath.Join(b.cfg.ProfileDir, p.name+"-allocs.pprof"))
			}
			mustOK(cmdSpec{Name: "profrender " + p.name, Bin: bin, Args: a, Env: env}, runProc(ctx, cmdSpec{Bin: bin, Args: a, Env: env}))
			profs = append(profs, prof)
		}
		out, err := exec.Command("go", append([]string{"tool", "pprof", "-top", "-cum", "-nodecount=60"}, profs...)...).CombinedOutput()
		if err != nil {
			logf("go tool pprof: %v", err)
		}
		if err := os.WriteFile(filepath.Join(b.cfg.ProfileDir, p.name+".txt"), out, 0o644); err != nil {
			fatalf("%v", err)
		}
		logf("profile %s-{0,1,2}.pprof (3 fresh processes)", filepath.Join(b.cfg.ProfileDir, p.name))
	}
}
