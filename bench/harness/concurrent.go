package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// concurrent: N Applications of one component generated at once, one
// shared (initially empty) cache, as an ApplicationSet refresh does: N
// requests at once to one render server's plugin service, and N generate
// processes. One burst's wall time swings with the machine's other load
// (1.23–1.75 × the ideal in four runs of one afternoon), so each mode runs
// -bursts bursts and the goal is on the median of their ratios.
//
// The reference, n × a warm single generation ÷ cores, is the median of
// warm single generations of the mode measured right before each burst
// (interleaved with the bursts, so that drift in the load of other work
// over the section hits references and bursts alike), pooled: a burst
// paired with only its own few references was noisier, the sidecar's warm
// generation takes 4 ms and one spike of load doubles the median of a
// handful (see bench/README.md). Every burst starts from nothing, as
// the single burst did: an empty cache directory of its own and, in sidecar
// mode, a render server started for it (no started workers, registry
// connections or tag resolutions left from the previous burst), stopped
// after it.
func (b *bench) concurrent(ctx context.Context) {
	b.section("concurrent")
	n := b.cfg.Concurrency
	cores := float64(b.res.Machine.CPUs)
	warmCache := b.dir("cache-warm")
	refRuns := max(3, b.cfg.Runs/2)
	ref := map[string]*series{}
	runs := map[string][]burstRun{}
	for _, mode := range modes {
		ref[mode] = &series{}
	}
	for r := range b.cfg.Bursts {
		for _, mode := range modes {
			// The reference: warm single generations right before the burst.
			j := newJob(b.inMode(mode, b.generate("generate warm (registry)", "bench", b.repo, compPodinfo, "", warmCache)))
			interleave(ctx, refRuns, j)
			ref[mode].Name = j.s.Name
			for _, x := range j.s.samples {
				ref[mode].add(x)
			}
			cache := filepath.Join(b.work, fmt.Sprintf("cache-shared-%s-%d", mode, r+1))
			load := loadAvg()
			var run burstRun
			if mode == "sidecar" {
				// A render server of its own (the cache directory is part of
				// its environment), started now on the empty directory.
				srv := b.serverFor(cache)
				srv.resetPeak()
				cpu0 := srv.cpu()
				logf("burst %d/%d: %d concurrent requests to one render server's plugin service, one shared empty cache", r+1, b.cfg.Bursts, n)
				wall, samples, reqs := b.burst(ctx, cache, n, 0, nil, mode)
				srvCPU := ms(time.Duration(srv.cpu() - cpu0))
				_, srvPeak := srv.mem()
				run = newBurstRun(wall, samples, reqs, j.s)
				run.ServerCPUMS, run.ServerPeakMiB = round(srvCPU), round(srvPeak)
				b.checkServers("concurrent (sidecar)")
				b.stopServer(srv)
			} else {
				logf("burst %d/%d: %d concurrent generate processes, one shared empty cache", r+1, b.cfg.Bursts, n)
				wall, samples, reqs := b.burst(ctx, cache, n, 0, nil, mode)
				run = newBurstRun(wall, samples, reqs, j.s)
			}
			run.LoadAvg = load
			os.RemoveAll(cache)
			logf("burst %d/%d, %s: %.2f s (%d × %.1f ms warm right before ÷ %.0f cores: %.2f s); %d failed; load %.2f",
				r+1, b.cfg.Bursts, mode, run.WallMS/1000, n, run.WarmBeforeMS, cores, float64(n)*run.WarmBeforeMS/cores/1000, run.Errors, load)
			runs[mode] = append(runs[mode], run)
		}
	}
	b.warmPodinfoMS, b.warmPodinfoCPU = ref["process"].wall(), ref["process"].cpu()
	sec := map[string]any{"processes": n, "cores": cores, "bursts_per_mode": b.cfg.Bursts}
	for _, mode := range modes {
		sec[mode] = b.burstGoals(mode, n, cores, runs[mode], ref[mode])
	}
	b.res.Sections["concurrent"] = sec
	if b.cfg.Quick {
		return
	}
	// What helps one-shot processes: fewer Go threads per process, and
	// Argo CD's repo-server parallelism limit (reposerver.parallelism.limit),
	// which bounds concurrent generations. One burst each (information).
	ideal := float64(n) * b.warmPodinfoMS / cores
	for _, v := range []struct {
		what  string
		limit int
		env   []string
	}{
		{"GOMAXPROCS=1 in every process", 0, []string{"GOMAXPROCS=1"}},
		{"at most 4 at a time (Argo CD reposerver.parallelism.limit=4)", 4, nil},
	} {
		logf("%d generate processes, %s", n, v.what)
		w, ss, _ := b.burst(ctx, filepath.Join(b.work, "cache-shared"), n, v.limit, v.env, "process")
		var c float64
		errs := 0
		for _, x := range ss {
			c += ms(x.CPU)
			if x.Exit != 0 {
				errs++
			}
		}
		b.modeGoal("process", goal{ID: "info", What: fmt.Sprintf("%d generate, %s: wall time", n, v.what), Value: round(ms(w) / 1000), Unit: "s",
			Reference: round(ideal / 1000), RefWhat: "s (100 × warm ÷ cores)", Ratio: round(ms(w) / ideal),
			Note: fmt.Sprintf("CPU of all processes %.1f s = %.2f × 100 warm single; %d failed", c/1000, c/(float64(n)*b.warmPodinfoCPU), errs)})
	}
}

var appRE = regexp.MustCompile(`app-(\d+)-podinfo`)

// burstRun is the figures of one burst.
type burstRun struct {
	WallMS float64 `json:"wall_ms"`
	// Ratio is WallMS ÷ the mode's reference (n × the median of all its
	// warm single generations ÷ cores; see summarizeBursts).
	Ratio float64 `json:"ratio"`
	// WarmBeforeMS and WarmBeforeCPUMS are the medians of the warm single
	// generations measured right before the burst (part of the reference).
	WarmBeforeMS    float64 `json:"warm_single_before_ms"`
	WarmBeforeCPUMS float64 `json:"warm_single_before_cpu_ms"`
	// Errors counts the generations that failed: exit ≠ 0, or output not
	// naming its own Application (app-i for the i-th), or naming another.
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// BlobGETs is the GETs of each blob by digest; TagGETs the manifest
	// requests by tag; OtherRequests the rest.
	BlobGETs      map[string]int `json:"blob_gets"`
	TagGETs       int            `json:"tag_gets"`
	OtherRequests int            `json:"other_requests"`
	// CPUSumMS is the CPU time (user+sys) of all n processes; RSS the peak
	// RSS of each (process mode only: the clients of a sidecar burst run
	// without procstat, see cmdSpec.direct).
	CPUSumMS  float64 `json:"cpu_sum_ms"`
	RSSSumMiB float64 `json:"rss_sum_mib"`
	RSSMaxMiB float64 `json:"rss_max_mib"`
	// Sidecar mode: the render server's CPU time and peak RSS (VmHWM)
	// during the burst.
	ServerCPUMS   float64 `json:"server_cpu_ms,omitempty"`
	ServerPeakMiB float64 `json:"server_peak_rss_mib,omitempty"`
	LoadAvg       float64 `json:"loadavg_1m_before"`
}

// newBurstRun checks one burst (samples[i] is app-i's); before is the
// warm single generations measured right before it. Ratio is left to
// summarizeBursts.
func newBurstRun(wall time.Duration, samples []sample, reqs []registrytest.Request, before *series) burstRun {
	r := burstRun{WallMS: round(ms(wall)), WarmBeforeMS: round(before.wall()), WarmBeforeCPUMS: round(before.cpu()), BlobGETs: map[string]int{}}
	var cpu, rss float64
	for i, s := range samples {
		own := fmt.Sprint(i)
		ok := s.Exit == 0
		found := appRE.FindAllStringSubmatch(string(s.Stdout), -1)
		ok = ok && len(found) > 0
		for _, f := range found {
			ok = ok && f[1] == own
		}
		if !ok {
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = fmt.Sprintf("app-%d: exit %d, %d mentions of app-N-podinfo: %s", i, s.Exit, len(found), strings.TrimSpace(s.Stderr))
			}
		}
		m := float64(s.MaxRSSKB) / 1024
		cpu += ms(s.CPU)
		rss += m
		r.RSSMaxMiB = max(r.RSSMaxMiB, round(m))
	}
	r.CPUSumMS, r.RSSSumMiB = round(cpu), round(rss)
	for _, q := range reqs {
		last := q.Path[strings.LastIndex(q.Path, "/")+1:]
		switch {
		case q.IsBlob():
			r.BlobGETs[last]++
		case q.IsManifest() && !strings.HasPrefix(last, "sha256:"):
			r.TagGETs++
		default:
			r.OtherRequests++
		}
	}
	return r
}

// maxPerBlob is the GETs of the most-fetched blob.
func (r burstRun) maxPerBlob() int {
	m := 0
	for _, c := range r.BlobGETs {
		m = max(m, c)
	}
	return m
}

// burstSummary aggregates the bursts of one mode: medians of the timings
// (the goal's verdict is on the median ratio), the worst of the checks
// (failures summed, the most GETs of any blob in any burst) and of peaks.
type burstSummary struct {
	N                            int
	WallMedian, WallMin, WallMax float64
	RatioMedian, RatioMin        float64
	RatioMax                     float64
	Ratios, Walls                []float64
	Errors                       int
	FirstError                   string
	BlobGETs                     map[string]int // most GETs of each blob in one burst
	MaxPerBlob                   int
	TagGETs, OtherRequests       int // most in one burst
	CPUSumMedian, RSSSumMedian   float64
	RSSMax                       float64
	ServerCPUMedian              float64
	ServerPeakMax                float64
	ServerPeakMedian             float64
	LoadMin, LoadMax             float64
}

// summarizeBursts sets each run's Ratio, its wall time ÷ idealMS (the
// mode's reference), and aggregates the runs.
func summarizeBursts(runs []burstRun, idealMS float64) burstSummary {
	s := burstSummary{N: len(runs), BlobGETs: map[string]int{}}
	var cpu, rss, srvCPU, srvPeak, load []float64
	for i := range runs {
		r := &runs[i]
		r.Ratio = round(r.WallMS / idealMS)
		s.Walls = append(s.Walls, r.WallMS)
		s.Ratios = append(s.Ratios, r.Ratio)
		cpu = append(cpu, r.CPUSumMS)
		rss = append(rss, r.RSSSumMiB)
		srvCPU = append(srvCPU, r.ServerCPUMS)
		srvPeak = append(srvPeak, r.ServerPeakMiB)
		load = append(load, r.LoadAvg)
		s.Errors += r.Errors
		if s.FirstError == "" {
			s.FirstError = r.FirstError
		}
		for k, c := range r.BlobGETs {
			s.BlobGETs[k] = max(s.BlobGETs[k], c)
		}
		s.MaxPerBlob = max(s.MaxPerBlob, r.maxPerBlob())
		s.TagGETs = max(s.TagGETs, r.TagGETs)
		s.OtherRequests = max(s.OtherRequests, r.OtherRequests)
		s.RSSMax = max(s.RSSMax, r.RSSMaxMiB)
	}
	s.WallMedian, s.WallMin, s.WallMax = median(s.Walls), minOf(s.Walls), maxOf(s.Walls)
	s.RatioMedian, s.RatioMin, s.RatioMax = median(s.Ratios), minOf(s.Ratios), maxOf(s.Ratios)
	s.CPUSumMedian, s.RSSSumMedian = median(cpu), median(rss)
	s.ServerCPUMedian, s.ServerPeakMax, s.ServerPeakMedian = median(srvCPU), maxOf(srvPeak), median(srvPeak)
	s.LoadMin, s.LoadMax = minOf(load), maxOf(load)
	return s
}

// note is what the goal's note says of the bursts: "median of N bursts",
// every burst's ratio and wall time, in order.
func (s burstSummary) note() string {
	bursts := "bursts"
	if s.N == 1 {
		bursts = "burst"
	}
	var ratios, walls []string
	for i := range s.Ratios {
		ratios = append(ratios, fmt.Sprintf("%.2f", s.Ratios[i]))
		walls = append(walls, fmt.Sprintf("%.2f", s.Walls[i]/1000))
	}
	return fmt.Sprintf("median of %d %s, each on a fresh empty cache (reference: the median of the warm single generations measured right before each burst): ratios %s (min %.2f, max %.2f); wall %s s; load average %.2f–%.2f",
		s.N, bursts, strings.Join(ratios, ", "), s.RatioMin, s.RatioMax, strings.Join(walls, ", "), s.LoadMin, s.LoadMax)
}

// burstGoals checks and reports the bursts of one mode: the median wall
// time against n × the warm single generation ÷ cores, failures (a run
// fails unless it exits 0 and its output names its own Application, and no
// other), GETs per blob; ref is all the warm single generations measured
// before the bursts.
func (b *bench) burstGoals(mode string, n int, cores float64, runs []burstRun, ref *series) map[string]any {
	warm := ref.wall()
	ideal := float64(n) * warm / cores
	s := summarizeBursts(runs, ideal)
	what := "concurrent generate"
	if mode == "sidecar" {
		what = "concurrent requests to one render server's plugin service"
	}
	b.modeGoal(mode, goal{ID: "G3 100 apps", What: fmt.Sprintf("%d %s, shared empty cache: wall time", n, what), Value: round(s.WallMedian / 1000), Unit: "s",
		Reference: round(ideal / 1000), RefWhat: fmt.Sprintf("s = %d × %s ms warm ÷ %.0f cores", n, num(round(warm)), cores),
		Ratio: round(s.RatioMedian), Limit: 1.5, LimitWhat: "≤ 1.5", Met: boolp(s.RatioMedian <= 1.5), Note: s.note()})
	errNote := fmt.Sprintf("%d generations in %d bursts", n*s.N, s.N)
	if s.FirstError != "" {
		errNote += "; first: " + s.FirstError
	}
	b.modeGoal(mode, goal{ID: "G3 100 apps", What: fmt.Sprintf("%d %s: failed generations (exit ≠ 0, or output not naming its own app-N)", n, what), Value: float64(s.Errors), Unit: "errors",
		LimitWhat: "0", Met: boolp(s.Errors == 0), Note: errNote})
	b.modeGoal(mode, goal{ID: "G3 100 apps", What: fmt.Sprintf("%d %s: GETs of the most-fetched blob (%d blobs, %d tag GETs)", n, what, len(s.BlobGETs), s.TagGETs),
		Value: float64(s.MaxPerBlob), Unit: "GETs", LimitWhat: "1 (each blob once)", Met: boolp(s.MaxPerBlob == 1), Note: fmt.Sprintf("most in any of %d bursts", s.N)})
	refCPU := float64(n) * ref.cpu()
	sec := map[string]any{
		"wall_ms": round(s.WallMedian), "warm_single_ms": round(warm), "ideal_ms": round(ideal), "errors": s.Errors, "first_error": s.FirstError,
		"blob_gets": s.BlobGETs, "tag_gets": s.TagGETs, "other_requests": s.OtherRequests, "rss_sum_mib": round(s.RSSSumMedian), "rss_max_mib": round(s.RSSMax),
		"cpu_sum_ms": round(s.CPUSumMedian), "warm_single_cpu_ms": round(ref.cpu()),
		"ratio": round(s.RatioMedian), "ratio_min": round(s.RatioMin), "ratio_max": round(s.RatioMax),
		"wall_min_ms": round(s.WallMin), "wall_max_ms": round(s.WallMax), "warm_single": ref.summary(), "bursts": runs,
	}
	if mode == "sidecar" {
		sec["server_cpu_ms"], sec["server_peak_rss_mib"] = round(s.ServerCPUMedian), round(s.ServerPeakMax)
		var total []float64
		for _, r := range runs {
			total = append(total, r.CPUSumMS+r.ServerCPUMS)
		}
		cpu := median(total)
		b.modeGoal(mode, goal{ID: "info", What: fmt.Sprintf("%d concurrent generations: CPU time of the render server (vs %d × warm single)", n, n),
			Value: round(cpu / 1000), Unit: "s", Reference: round(refCPU / 1000), RefWhat: "s", Ratio: round(cpu / refCPU),
			Note: fmt.Sprintf("median of %d bursts: supervisor and workers; the requests' packing and streaming are the repo-server's (the harness's)", s.N)})
		b.modeGoal(mode, goal{ID: "info", What: fmt.Sprintf("%d concurrent generations: render server peak RSS (VmHWM)", n), Value: round(s.ServerPeakMax), Unit: "MiB",
			Note: fmt.Sprintf("largest of %d bursts (median %.1f MiB)", s.N, s.ServerPeakMedian)})
		return sec
	}
	b.modeGoal(mode, goal{ID: "info", What: fmt.Sprintf("%d concurrent generate: CPU time of all processes (vs %d × warm single)", n, n), Value: round(s.CPUSumMedian / 1000), Unit: "s",
		Reference: round(refCPU / 1000), RefWhat: "s", Ratio: round(s.CPUSumMedian / refCPU),
		Note: fmt.Sprintf("median of %d bursts; CPU is what other load on the machine cannot inflate; wall time is", s.N)})
	b.modeGoal(mode, goal{ID: "info", What: fmt.Sprintf("%d concurrent generate: peak RSS, largest process / sum", n), Value: round(s.RSSMax), Unit: "MiB",
		Reference: round(s.RSSSumMedian), RefWhat: "MiB sum", Note: fmt.Sprintf("largest process of %d bursts / median sum", s.N)})
	return sec
}

// burst runs n generations of the podinfo component as Applications
// app-0…app-(n-1) sharing one empty cache directory cache, all at once
// (limit 0) or at most limit at a time, in mode, and returns the wall time,
// the samples and the requests.
func (b *bench) burst(ctx context.Context, cache string, n, limit int, env []string, mode string) (time.Duration, []sample, []registrytest.Request) {
	os.RemoveAll(cache)
	b.settle()
	b.reg.Reset()
	samples := make([]sample, n)
	var wg sync.WaitGroup
	startGate := make(chan struct{})
	if limit <= 0 {
		limit = n
	}
	sem := make(chan struct{}, limit)
	for i := 0; i < n; i++ {
		spec := b.generate(fmt.Sprintf("generate app-%d", i), fmt.Sprintf("app-%d", i), b.repo, compPodinfo, "", cache)
		spec.Env = append(spec.Env, env...)
		spec = b.inMode(mode, spec)
		spec.concurrent = true
		spec.direct = mode == "sidecar"
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startGate
			sem <- struct{}{}
			samples[i] = runProc(ctx, spec)
			<-sem
		}()
	}
	t0 := time.Now()
	close(startGate)
	wg.Wait()
	return time.Since(t0), samples, b.settle()
}
