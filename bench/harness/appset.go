package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// appSetRE finds the Application names in a generation's output.
var appSetRE = regexp.MustCompile(`"appset-(\d+)[-"]`)

// appset (issue 19): an ApplicationSet refresh of N Applications of one
// component, each with a values file of its own, through one render server
// (the sidecar), at most -appset-parallel generations in flight (Argo CD's
// controller and repo-server bound the generations of a refresh). Total
// wall time against N × helm template of the same chart ÷ cores; every
// generation must succeed and print its own Application's objects with its
// own values; the server's memory must stay flat (its RSS over the second
// half of the refresh against the first half).
func (b *bench) appset(ctx context.Context) {
	b.section("appset")
	n, par := b.cfg.AppSetApps, b.cfg.AppSetParallel
	c, real := b.appSetChart()
	// Reference: helm template and a single sidecar generation with a
	// values file, alternated, right before the refresh.
	cache := filepath.Join(b.work, "cache-appset")
	vf := b.appFile("appset/ref.yaml", appSetValues(0))
	helmSpec := b.helmCase(c)
	helmSpec.Args = append(helmSpec.Args, "-f", filepath.Join(b.appDir, vf))
	helm := newJob(helmSpec)
	single := newJob(b.sidecar(b.generateCase("generate warm, one Application", c, cache, vf)))
	interleave(ctx, max(3, b.cfg.Runs/2), helm, single)
	srv := single.spec.server
	srv.resetPeak()

	logf("ApplicationSet refresh: %d Applications of %s, %d values files, at most %d generations in flight, one render server", n, c.Component, n, par)
	specs := make([]cmdSpec, n)
	for i := range specs {
		app := *c
		app.Release = fmt.Sprintf("appset-%d", i)
		s := b.sidecar(b.generateCase(fmt.Sprintf("generate %s", app.Release), &app, cache, b.appFile(fmt.Sprintf("appset/values-%d.yaml", i), appSetValues(i))))
		s.concurrent = true
		specs[i] = s
	}
	cpu0 := srv.cpu()
	samples, rss, wall := runRefresh(ctx, srv, specs, par)
	srvCPU := ms(time.Duration(srv.cpu() - cpu0))
	_, peak := srv.mem()

	errs, firstErr, clientCPU := checkAppSet(samples, real)
	half := len(rss) / 2
	first, second := maxOf(rss[:max(half, 1)]), maxOf(rss[half:])
	cores := float64(b.res.Machine.CPUs)
	hw := helm.s.wall()
	ideal := float64(n) * hw / cores
	ratio := ms(wall) / ideal
	b.modeGoal("sidecar", goal{ID: "G19 appset", What: fmt.Sprintf("ApplicationSet refresh: %d Applications of %s, %d values files, ≤ %d in flight: total wall time", n, c.Label, n, par),
		Value: round(ms(wall) / 1000), Unit: "s", Reference: round(ideal / 1000), RefWhat: fmt.Sprintf("s = %d × %s ms helm template ÷ %.0f cores", n, num(round(hw)), cores),
		Ratio: round(ratio), Limit: 1, LimitWhat: "≤ 1", Met: boolp(ratio <= 1),
		Note: fmt.Sprintf("CPU: render server %.1f s = %.1f ms per Application (helm template %.0f ms CPU); single warm generation %.0f ms wall",
			srvCPU/1000, (srvCPU+clientCPU)/float64(n), helm.s.cpu(), single.s.wall())})
	b.modeGoal("sidecar", goal{ID: "G19 appset", What: fmt.Sprintf("ApplicationSet refresh of %d: failed generations (exit ≠ 0, or not its own Application's objects and values)", n),
		Value: float64(errs), Unit: "errors", LimitWhat: "0", Met: boolp(errs == 0), Note: firstErr})
	flat := second <= 1.2*first
	b.modeGoal("sidecar", goal{ID: "G19 appset", What: fmt.Sprintf("ApplicationSet refresh of %d: render server RSS, largest in the second half of the refresh / first half", n),
		Value: round(second), Unit: "MiB", Reference: round(first), RefWhat: "MiB first half", Ratio: round(second / first), Limit: 1.2, LimitWhat: "≤ 1.2 (flat)",
		Met: boolp(flat), Note: fmt.Sprintf("%d samples every 50 ms; VmHWM over the refresh %.0f MiB", len(rss), peak)})
	b.res.Sections["appset"] = map[string]any{
		"applications": n, "parallel": par, "chart": c.Label, "wall_ms": round(ms(wall)), "ideal_ms": round(ideal), "helm_template": helm.s.summary(),
		"single_sidecar": single.s.summary(), "server_cpu_ms": round(srvCPU), "clients_cpu_ms": round(clientCPU), "errors": errs, "first_error": firstErr,
		"server_rss_mib_samples": rss, "server_peak_mib": round(peak),
	}
	b.checkServers("appset")
}

// appSetChart returns the chart of the appset section: the real-world
// podinfo chart (pushed as a component of its own) when present, else the
// demo chart; real says which.
func (b *bench) appSetChart() (c *rwCase, real bool) {
	c = &rwCase{Label: "podinfo (demo chart)", Component: compPodinfo, Release: "appset", NS: "apps", Tgz: b.chartFx[0].Tgz, KubeVersion: "1.31.0",
		HelmArgs: []string{"--namespace", "apps", "--kube-version", "1.31.0", "--include-crds"}}
	if tgz, err := filepath.Glob(filepath.Join(b.root, realWorldDir, "charts", "podinfo-*.tgz")); err == nil && len(tgz) == 1 {
		real = true
		c.Label, c.Component, c.Tgz = "podinfo "+strings.TrimSuffix(strings.TrimPrefix(filepath.Base(tgz[0]), "podinfo-"), ".tgz")+" (real)", "bench.example.com/appset/podinfo", tgz[0]
		b.reg.Push(b.tb, "ocm", chartComponent(c.Component, mustRead(tgz[0]), "1.0.0"))
	} else {
		logf("SKIP real-world podinfo chart for the ApplicationSet section (not at %s): the demo chart instead", filepath.Join(b.root, realWorldDir, "charts"))
	}
	return c, real
}

// appSetValues is the values file of the i-th Application.
func appSetValues(i int) []byte {
	return []byte(fmt.Sprintf("replicaCount: %d\npodAnnotations:\n  appset/index: \"%d\"\nui:\n  message: app %d\n", 1+i%7, i, i))
}

// runRefresh runs the generations of specs, at most par at once, and samples
// the server's RSS every 50 ms meanwhile; it returns the samples of the
// generations, the RSS samples and the wall time of the refresh.
func runRefresh(ctx context.Context, srv *renderServer, specs []cmdSpec, par int) ([]sample, []float64, time.Duration) {
	samples := make([]sample, len(specs))
	rss := make([]float64, 0, 64)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	done := make(chan struct{})
	go func() { // the server's RSS, sampled while the refresh runs
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
				r, _ := srv.mem()
				mu.Lock()
				rss = append(rss, r)
				mu.Unlock()
			}
		}
	}()
	t0 := time.Now()
	for i := range specs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			samples[i] = runProc(ctx, specs[i])
			<-sem
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	close(done)
	mu.Lock()
	defer mu.Unlock()
	return samples, rss, wall
}

// checkAppSet counts the generations that failed or did not print their own
// Application's objects and values (and keeps the first one's error), and
// sums the clients' CPU time.
func checkAppSet(samples []sample, real bool) (errs int, firstErr string, clientCPU float64) {
	for i, s := range samples {
		out := string(s.Stdout)
		own := fmt.Sprintf(`"appset-%d-podinfo"`, i)
		ok := s.Exit == 0 && strings.Contains(out, own) && strings.Contains(out, fmt.Sprintf(`"replicas":%d`, 1+i%7)) &&
			(!real || strings.Contains(out, fmt.Sprintf(`"appset/index":"%d"`, i)))
		for _, m := range appSetRE.FindAllStringSubmatch(out, -1) {
			ok = ok && m[1] == fmt.Sprint(i)
		}
		if !ok {
			errs++
			if firstErr == "" {
				firstErr = fmt.Sprintf("appset-%d: exit %d: %.300s", i, s.Exit, strings.TrimSpace(s.Stderr))
			}
		}
		clientCPU += ms(s.CPU)
	}
	return errs, firstErr, clientCPU
}
