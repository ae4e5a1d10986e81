package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// The workers section (issue 15's "must not regress"): the render server of
// this tree side by side with another build's, typically main before the
// worker processes (2a391e5), each with its own argocd-ocm-client (the
// protocol changed with the workers):
//
//	go run ./bench/harness -only workers -before-plugin OLD/argocd-ocm-plugin -before-client OLD/argocd-ocm-client
//
// Both sidecars run in the same alternated rounds: warm generations of the
// demo chart through the client (wall, CPU of client + server), and bursts
// of -concurrency Applications at once on an empty shared cache (wall, CPU
// of the clients and the server). The sidecar's peak memory is the
// supervisor's VmHWM plus each worker's private peak (see renderServer.mem):
// the binary's pages count once, as the container's memory accounting
// counts them.
var (
	beforePlugin = flag.String("before-plugin", "", "workers section: the plugin binary whose render server this tree's is compared with")
	beforeClient = flag.String("before-client", "", "workers section: the argocd-ocm-client of -before-plugin (same protocol)")
	burstRounds  = flag.Int("burst-rounds", 5, "workers section: alternated bursts of each build")
	workersLarge = flag.String("workers-large", "", "workers section: also compare warm generations of the realworld charts and kustomize trees whose label contains one of these comma-separated texts (e.g. kube-prometheus-stack-default,cluster-install), against helm template / kustomize build in the same rounds")
)

type sidecarBuild struct {
	Name, Plugin, Client string
}

// sidecarOf turns a generate command into build's sidecar command; the
// build's name is part of the sidecar environment, so each build gets a
// render server of its own.
func (b *bench) sidecarOf(bd sidecarBuild, c cmdSpec) cmdSpec {
	c.Env = append(slices.Clone(c.Env), "ARGOCD_OCM_BENCH_BUILD="+bd.Name)
	c = b.sidecarClient(bd.Plugin, bd.Client, c)
	c.Name = bd.Name + " sidecar " + c.Name
	return c
}

type burstFigure struct {
	WallMS       []float64 `json:"wall_ms"`
	ClientCPUMS  []float64 `json:"client_cpu_ms"`
	ServerCPUMS  []float64 `json:"server_cpu_ms"`
	PeakMiB      []float64 `json:"sidecar_peak_mib"`
	Failures     int       `json:"failures"`
	FirstFailure string    `json:"first_failure,omitempty"`
	LoadAvg      []float64 `json:"loadavg_1m"`
	// Workers: distinct worker processes in the server's log so far.
	Workers []int `json:"workers_so_far"`
}

var workerRE = regexp.MustCompile(`worker=([1-9][0-9]*)`)

func (b *bench) workers(ctx context.Context) {
	b.section("workers")
	if *beforePlugin == "" || *beforeClient == "" {
		logf("workers: skipped (give -before-plugin and -before-client)")
		return
	}
	builds := []sidecarBuild{{"before", *beforePlugin, *beforeClient}, {"after", b.bins.Plugin, b.bins.Client}}
	sec := map[string]any{"before_plugin": *beforePlugin}

	// Warm single generations, alternated; the peak over all of them.
	warm := map[string]*job{}
	var jobs []*job
	for _, bd := range builds {
		j := newJob(b.sidecarOf(bd, b.generate("generate warm (registry)", "bench", b.repo, compPodinfo, "", b.dir("cache-warm-"+bd.Name))))
		warm[bd.Name] = j
		jobs = append(jobs, j)
	}
	for _, j := range jobs {
		j.spec.server.resetPeak()
	}
	interleave(ctx, b.cfg.Runs, jobs...)
	sameBytes("workers", warm["before"].s, warm["after"].s)
	peak := map[string]float64{}
	for name, j := range warm {
		_, peak[name] = j.spec.server.mem()
	}
	bw, aw := warm["before"].s, warm["after"].s
	b.modeGoal("sidecar", goal{ID: "G15 no regress", What: "warm generate through the client, demo chart: after / before the workers", Value: round(aw.wall()), Unit: "ms",
		Reference: round(bw.wall()), RefWhat: "ms before", Ratio: round(aw.wall() / bw.wall()), Limit: 1.2, LimitWhat: "≤ 1.2", Met: boolp(aw.wall()/bw.wall() <= 1.2),
		Note: fmt.Sprintf("CPU client + server %.1f + %.1f ms after, %.1f + %.1f ms before", aw.clientCPU(), aw.serverCPU(), bw.clientCPU(), bw.serverCPU())})
	b.modeGoal("sidecar", goal{ID: "G15 no regress", What: fmt.Sprintf("sidecar peak RSS over %d warm generations (supervisor + workers' private)", 2*(b.cfg.Runs+1)), Value: round(peak["after"]), Unit: "MiB",
		Reference: round(peak["before"]), RefWhat: "MiB before", Ratio: round(peak["after"] / peak["before"]), Limit: 1.2, LimitWhat: "≤ 1.2", Met: boolp(peak["after"] <= 1.2*peak["before"])})
	sec["warm"] = map[string]any{"before": bw.summary(), "after": aw.summary(), "peak_mib": peak}
	if *workersLarge != "" {
		sec["large"] = b.workersLarge(ctx, builds)
	}

	// Bursts, alternated by round.
	n := b.cfg.Concurrency
	figs := map[string]*burstFigure{"before": {}, "after": {}}
	for r := 0; r < *burstRounds; r++ {
		for k := range builds {
			bd := builds[(r+k)%len(builds)]
			b.workerBurst(ctx, r, bd, n, figs[bd.Name])
		}
	}
	bf, af := figs["before"], figs["after"]
	b.modeGoal("sidecar", goal{ID: "G15 no regress", What: fmt.Sprintf("%d generations at once through the client, empty shared cache: wall, after / before", n), Value: round(median(af.WallMS)), Unit: "ms",
		Reference: round(median(bf.WallMS)), RefWhat: "ms before", Ratio: round(median(af.WallMS) / median(bf.WallMS)), Limit: 1, LimitWhat: "≤ 1",
		Met: boolp(median(af.WallMS) <= median(bf.WallMS) && af.Failures == 0),
		Note: fmt.Sprintf("medians of %d alternated bursts; server CPU %.0f ms after, %.0f ms before; clients %.0f / %.0f ms; failures %d / %d",
			*burstRounds, median(af.ServerCPUMS), median(bf.ServerCPUMS), median(af.ClientCPUMS), median(bf.ClientCPUMS), af.Failures, bf.Failures)})
	b.modeGoal("sidecar", goal{ID: "G15 no regress", What: fmt.Sprintf("%d generations at once: sidecar peak RSS (supervisor + workers' private), after / before", n), Value: round(median(af.PeakMiB)), Unit: "MiB",
		Reference: round(median(bf.PeakMiB)), RefWhat: "MiB before", Ratio: round(median(af.PeakMiB) / median(bf.PeakMiB)), Limit: 1.2, LimitWhat: "≤ 1.2",
		Met: boolp(median(af.PeakMiB) <= 1.2*median(bf.PeakMiB))})
	sec["burst"] = figs
	b.res.Sections["workers"] = sec
	b.checkServers("workers")
}

// workerBurst runs burst round r (0-based) of build bd: n generations at
// once through its client, on an empty cache, and adds the figures to f.
func (b *bench) workerBurst(ctx context.Context, r int, bd sidecarBuild, n int, f *burstFigure) {
	cache := filepath.Join(b.work, "cache-burst-"+bd.Name)
	specs := make([]cmdSpec, n)
	for i := range specs {
		specs[i] = b.sidecarOf(bd, b.generate(fmt.Sprintf("generate app-%d", i), fmt.Sprintf("app-%d", i), b.repo, compPodinfo, "", cache))
		specs[i].concurrent, specs[i].direct = true, true
	}
	srv := specs[0].server
	srv.resetPeak()
	f.LoadAvg = append(f.LoadAvg, loadAvg())
	cpu0 := srv.cpu()
	wall, samples := b.burstOf(ctx, cache, specs)
	srvCPU := ms(time.Duration(srv.cpu() - cpu0))
	_, pk := srv.mem()
	var clientCPU float64
	for i, s := range samples {
		clientCPU += ms(s.CPU)
		found := appRE.FindAllStringSubmatch(string(s.Stdout), -1)
		ok := s.Exit == 0 && len(found) > 0
		for _, m := range found {
			ok = ok && m[1] == fmt.Sprint(i)
		}
		if !ok {
			f.Failures++
			if f.FirstFailure == "" {
				f.FirstFailure = fmt.Sprintf("app-%d: exit %d: %s", i, s.Exit, strings.TrimSpace(s.Stderr))
			}
		}
	}
	f.WallMS = append(f.WallMS, round(ms(wall)))
	f.ClientCPUMS = append(f.ClientCPUMS, round(clientCPU))
	f.ServerCPUMS = append(f.ServerCPUMS, round(srvCPU))
	f.PeakMiB = append(f.PeakMiB, round(pk))
	workers := map[string]bool{}
	for _, m := range workerRE.FindAllStringSubmatch(srv.logText(), -1) {
		workers[m[1]] = true
	}
	f.Workers = append(f.Workers, len(workers))
	logf("workers: burst %d, %s: %.0f ms, CPU clients %.0f ms + server %.0f ms, sidecar peak %.1f MiB, load %.2f, %d worker processes so far",
		r+1, bd.Name, ms(wall), clientCPU, srvCPU, pk, f.LoadAvg[len(f.LoadAvg)-1], len(workers))
}

// burstOf runs specs all at once on an emptied cache and returns the wall
// time and the samples.
func (b *bench) burstOf(ctx context.Context, cache string, specs []cmdSpec) (time.Duration, []sample) {
	os.RemoveAll(cache)
	b.settle()
	b.reg.Reset()
	samples := make([]sample, len(specs))
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i, spec := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			samples[i] = runProc(ctx, spec)
		}()
	}
	t0 := time.Now()
	close(gate)
	wg.Wait()
	d := time.Since(t0)
	b.settle()
	return d, samples
}

// workersLarge compares the builds on large single renders: the realworld
// charts and kustomize trees whose label contains one of -workers-large's
// texts, each
// build's sidecar and the reference CLI in the same alternated rounds
// (where one build's worker uses more cores than the other's, this is
// where it shows).
func (b *bench) workersLarge(ctx context.Context, builds []sidecarBuild) []map[string]any {
	type large struct {
		label string
		ref   cmdSpec
		gen   func(cache string) cmdSpec
	}
	var cases []large
	wanted := func(label string) bool {
		return slices.ContainsFunc(strings.Split(*workersLarge, ","), func(t string) bool { return t != "" && strings.Contains(label, t) })
	}
	for _, c := range b.realWorldCases() {
		if wanted(c.Label) {
			cases = append(cases, large{c.Label, b.helmCase(c), func(cache string) cmdSpec { return b.generateCase("generate warm (registry)", c, cache) }})
		}
	}
	for _, t := range b.kustFx {
		if wanted(t.Label) {
			cases = append(cases, large{t.Label, cmdSpec{Name: "kustomize build", Bin: b.bins.Kustomize, Args: []string{"build", t.Dir}, Env: b.baseEnv, Dir: b.appDir},
				func(cache string) cmdSpec {
					return b.generate("generate warm (registry)", "bench", b.repo, t.Component, t.Path, cache)
				}})
		}
	}
	if len(cases) == 0 {
		logf("workers: no realworld chart or kustomize tree label contains any of %q", *workersLarge)
	}
	var all []map[string]any
	for _, c := range cases {
		logf("workers: %s, %d alternated runs of %s and each build's sidecar", c.label, b.cfg.Runs, c.ref.Name)
		ref := newJob(c.ref)
		jobs := []*job{ref}
		side := map[string]*job{}
		for _, bd := range builds {
			side[bd.Name] = newJob(b.sidecarOf(bd, c.gen(b.dir("cache-warm-"+bd.Name))))
			jobs = append(jobs, side[bd.Name])
		}
		load := loadAvg()
		interleave(ctx, b.cfg.Runs, jobs...)
		sameBytesMasked(c.label, side["before"].s, side["after"].s)
		bs, as := side["before"].s, side["after"].s
		b.modeGoal("sidecar", goal{ID: "info", What: fmt.Sprintf("warm generate through the client, %s: after / before", c.label), Value: round(as.wall()), Unit: "ms",
			Reference: round(bs.wall()), RefWhat: "ms before", Ratio: round(as.wall() / bs.wall()),
			Note: fmt.Sprintf("against %s %.0f ms: after %s; before %s; load %.2f", c.ref.Name, ref.s.wall(), minNote(as, ref.s), minNote(bs, ref.s), load)})
		all = append(all, map[string]any{"label": c.label, "reference": ref.s.summary(), "before": bs.summary(), "after": as.summary(), "loadavg_1m": load})
	}
	return all
}
