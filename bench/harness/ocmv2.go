package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// The ocmv2 section (issue 26): component versions written by today's OCM
// CLI (v0.13) store a Helm chart as an OCI manifest inside the version's
// image index (testdata/ocm-cli-v2: ocm.example/fixtures/helm-dir:1.0.0,
// podinfo 6.14.1). Two figures:
//
//   - warm generate of that version against the same chart in the v0.48
//     format (an OCI artifact set as a local blob layer, built with
//     ocmbuild), from a registry and from a CTF in the Application's
//     directory, through the sidecar and as a process, alternated: within
//     5 %;
//   - cold generate (empty cache) from a registry that answers every
//     request after 25 ms against `helm template oci://… --version 6.14.1
//     --plain-http` of the same chart as `helm push` stored it (the bytes
//     helm v3.22.0 pushed, from testdata/ocm-cli-v2/registry-storage), with
//     a fresh Helm cache and registry config per run: what Argo CD's
//     native OCI Helm source does.

const (
	compV2        = "ocm.example/fixtures/helm-dir" // its version is benchVer, 1.0.0
	v2Chart       = "podinfo 6.14.1"
	v2ChartTag    = "6.14.1"
	v2Delay       = 25 * time.Millisecond
	v2ConfigBlob  = "sha256.c23d16dbcb92a2a32835d886e721c58aad87118176b635634a6837d8f9e0ea6d" // helm-dir's config resource
	v2ImageRef    = "127.0.0.1:5093/fixtures/images/greeter:1.0.0@sha256:3674d7d1ee793a5f72eb948cb0598ac27bdfb5a46bab06e3d597a78a791dfccd"
	v2HelmRepo    = "fixtures/charts/podinfo" // where helm push put the chart in registry-storage
	v2WarmRunsMul = 5                         // rounds of the 5 % figures: 5 × -runs
	v2KubeVersion = "1.31.0"                  // podinfo 6.14.1 needs >= 1.23 (the fixture goldens' version)
)

// v2Registry is the section's registry: filesystem storage, every request
// delayed by v2Delay while delay is set.
type v2Registry struct {
	*registrytest.Registry
	delay atomic.Bool
	mu    sync.Mutex
	spans [][2]time.Time // arrival and end of each request since resetSpans
}

func (r *v2Registry) resetSpans() {
	r.mu.Lock()
	r.spans = nil
	r.mu.Unlock()
}

// roundTrips is how many of the requests since resetSpans waited for every
// earlier one to end: the requests on the critical path, each paying the
// delay in full.
func (r *v2Registry) roundTrips() int {
	r.mu.Lock()
	s := slices.Clone(r.spans)
	r.mu.Unlock()
	slices.SortFunc(s, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	n := 0
	var end time.Time
	for _, x := range s {
		if !x[0].Before(end) {
			n++
		}
		if x[1].After(end) {
			end = x[1]
		}
	}
	return n
}

func (b *bench) startV2Registry() *v2Registry {
	r := &v2Registry{}
	r.Registry = registrytest.Start(b.tb, registrytest.WithStorageDir(b.dir("registry-ocmv2")),
		registrytest.WithMiddleware(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
				t0 := time.Now()
				if r.delay.Load() {
					time.Sleep(v2Delay)
				}
				next.ServeHTTP(w, q)
				r.mu.Lock()
				r.spans = append(r.spans, [2]time.Time{t0, time.Now()})
				r.mu.Unlock()
			})
		}))
	return r
}

// settle waits until the registry has logged every request.
func (r *v2Registry) settle() []registrytest.Request {
	prev := -1
	for i := 0; i < 20; i++ {
		n := len(r.Requests())
		if n == prev {
			break
		}
		prev = n
		time.Sleep(15 * time.Millisecond)
	}
	return r.Requests()
}

// legacyV2Component is helm-dir:1.0.0 as the OCM CLI v0.48 writes it: the
// same resources (the chart, the external image, the config file), the
// chart an OCI artifact set in a local blob layer.
func legacyV2Component(chartTgz, config []byte) *ocmbuild.Component {
	set, err := ocmbuild.ChartArtifactSet(chartTgz, v2ChartTag, false)
	if err != nil {
		fatalf("artifact set of %s: %v", v2Chart, err)
	}
	return &ocmbuild.Component{Name: compV2, Version: benchVer, Provider: "ocm.example", Resources: []ocmbuild.Resource{
		{Name: "chart", Version: "1.0.0", Type: "helmChart", Data: set, MediaType: ocmbuild.MediaTypeArtifactSet},
		{Name: "image", Version: "1.0.0", Type: "ociImage", Access: map[string]any{"type": "ociArtifact", "imageReference": v2ImageRef}},
		{Name: "config", Version: "1.0.0", Type: "yaml", Data: config, MediaType: "application/x-yaml"},
	}}
}

// pushHelmPushed copies the chart helm v3.22.0 pushed into the fixture
// registry (testdata/ocm-cli-v2/registry-storage) into repo:tag, byte for
// byte: manifest, config (application/vnd.cncf.helm.config.v1+json) and
// layer (application/vnd.cncf.helm.chart.content.v1.tar+gzip).
func (b *bench) pushHelmPushed(reg *registrytest.Registry, storage, repo, tag string) (layers []string) {
	v2 := filepath.Join(storage, "docker", "registry", "v2")
	readBlob := func(d string) []byte {
		hex := strings.TrimPrefix(d, "sha256:")
		return mustRead(filepath.Join(v2, "blobs", "sha256", hex[:2], hex, "data"))
	}
	link := strings.TrimSpace(string(mustRead(filepath.Join(v2, "repositories", filepath.FromSlash(v2HelmRepo), "_manifests", "tags", tag, "current", "link"))))
	mb := readBlob(link)
	var m ocispec.Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		fatalf("helm-pushed manifest %s: %v", link, err)
	}
	if m.Config.MediaType != "application/vnd.cncf.helm.config.v1+json" || len(m.Layers) != 1 || m.Layers[0].MediaType != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" {
		fatalf("%s:%s in %s is not laid out as helm push lays out a chart: %s", v2HelmRepo, tag, storage, mb)
	}
	reg.PushBlob(b.tb, repo, readBlob(m.Config.Digest.String()))
	for _, l := range m.Layers {
		reg.PushBlob(b.tb, repo, readBlob(l.Digest.String()))
		layers = append(layers, l.Digest.String())
	}
	// Helm's manifest has no mediaType field: the PUT's Content-Type says it.
	reg.PushManifest(b.tb, repo, tag, cmp.Or(m.MediaType, ocispec.MediaTypeImageManifest), mb)
	return layers
}

// setEnv returns env with k set to v (replaced where present).
func setEnv(env []string, k, v string) []string {
	out := slices.Clone(env)
	for i, kv := range out {
		if strings.HasPrefix(kv, k+"=") {
			out[i] = k + "=" + v
			return out
		}
	}
	return append(out, k+"="+v)
}

// v2Generate is generate of helm-dir:1.0.0 from repo, plain HTTP to the
// section's registry.
func (b *bench) v2Generate(name string, reg *v2Registry, repo, cacheDir string) cmdSpec {
	c := b.generate(name, "bench", repo, compV2, "", cacheDir)
	c.Env = append(setEnv(c.Env, "ARGOCD_OCM_PLAIN_HTTP", reg.Host), "KUBE_VERSION="+v2KubeVersion)
	return c
}

// pairedRatio is the median over the rounds of a's wall time over b's in
// the same round (the jobs ran next to each other in every round).
func pairedRatio(a, b *series) float64 {
	n := min(len(a.WallMS), len(b.WallMS))
	r := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		r = append(r, a.WallMS[i]/b.WallMS[i])
	}
	return median(r)
}

func (b *bench) ocmv2(ctx context.Context) {
	b.section("ocmv2")
	src := filepath.Join(b.root, "testdata", "ocm-cli-v2")
	chartTgz := mustRead(filepath.Join(b.root, "testdata", "realworld", "charts", "podinfo-6.14.1.tgz"))
	chartFile := filepath.Join(b.dir("charts"), "podinfo-6.14.1.tgz")
	writeFiles(filepath.Dir(chartFile), map[string][]byte{filepath.Base(chartFile): chartTgz})
	reg := b.startV2Registry()

	// The v0.13 version, with the project's transfer (an index stays an
	// index; CTF to CTF byte for byte): from the OCM CLI's CTF into a CTF
	// of its own in the Application's directory (generate reads only files
	// there; the fixture CTF holds 28 versions, the v0.48 one a single
	// version, and a larger CTF must not count as the format's cost), and
	// from there into the registry.
	indexCTF := filepath.Join(b.dir("app", "ocmv2"), "index-ctf")
	for _, t := range []*transfer.Transfer{
		{From: filepath.Join(src, "ctf"), To: indexCTF, Component: compV2, Version: benchVer},
		{From: indexCTF, To: "http://" + reg.Host + "/index", Component: compV2, Version: benchVer},
	} {
		if _, err := t.Run(ctx); err != nil {
			fatalf("transfer %s:%s from %s to %s: %v", compV2, benchVer, t.From, t.To, err)
		}
	}
	// The same chart and resources in the v0.48 format.
	legacy := legacyV2Component(chartTgz, mustRead(filepath.Join(src, "ctf", "blobs", v2ConfigBlob)))
	legacyCTF := filepath.Join(b.dir("app", "ocmv2"), "legacy-ctf")
	if err := ocmbuild.WriteCTF(legacyCTF, legacy); err != nil {
		fatalf("ctf: %v", err)
	}
	reg.Push(b.tb, "legacy", legacy)
	if l := b.pushHelmPushed(reg.Registry, filepath.Join(src, "registry-storage"), "charts/podinfo", v2ChartTag); l[0] != blob.Digest(chartTgz) {
		fatalf("the helm-pushed chart layer %s is not %s (%s)", l[0], blob.Digest(chartTgz), v2Chart)
	}
	reg.Reset()

	b.ocmv2Warm(ctx, reg, chartFile, indexCTF, legacyCTF)
	b.ocmv2Cold(ctx, reg)
	b.checkServers("ocmv2")
}

// ocmv2Warm: index-stored chart against the local blob layer, warm cache,
// registry and CTF, both modes, alternated with helm template of the tgz.
func (b *bench) ocmv2Warm(ctx context.Context, reg *v2Registry, chartFile, indexCTF, legacyCTF string) {
	runs := v2WarmRunsMul * b.cfg.Runs
	logf("ocmv2 warm: %d runs of each command, interleaved", runs)
	cache := b.dir("cache-ocmv2-warm")
	helm := newJob(b.helmTemplate(chartFile))
	helm.spec.Args = append(helm.spec.Args, "--kube-version", v2KubeVersion)
	type pair struct{ index, legacy *job }
	// Registry requests of the warm runs, by job.
	reqs := map[*job]*[]string{}
	counted := func(j *job) *job {
		r := &[]string{}
		reqs[j] = r
		j.before = func() { reg.settle(); reg.Reset() }
		j.after = func(sample) {
			*r = (*r)[:0]
			for _, q := range reg.settle() {
				*r = append(*r, q.Method+" "+strings.TrimPrefix(q.Path, "/v2/"))
			}
		}
		return j
	}
	srcs := []struct{ label, index, legacy string }{
		{"registry", reg.Host + "/index", reg.Host + "/legacy"},
		{"offline CTF", indexCTF, legacyCTF},
	}
	jobs := []*job{helm}
	pairs := map[string]map[string]pair{}
	for _, s := range srcs {
		pairs[s.label] = map[string]pair{}
		for _, mode := range modes {
			p := pair{
				index:  newJob(b.inMode(mode, b.v2Generate("generate warm ("+s.label+", chart in the index)", reg, s.index, cache))),
				legacy: newJob(b.inMode(mode, b.v2Generate("generate warm ("+s.label+", chart as local blob layer)", reg, s.legacy, cache))),
			}
			if s.label == "registry" {
				counted(p.index)
				counted(p.legacy)
			}
			if mode == "sidecar" {
				// The render server is idle while process-mode jobs run, and
				// the job after them always paid for waking it (0.76 with the
				// pair's order swapped, 1.09-1.16 as listed): one untimed
				// request right before each timed one puts both formats on a
				// server that just served.
				warmFirst(ctx, p.index)
				warmFirst(ctx, p.legacy)
			}
			pairs[s.label][mode] = p
			jobs = append(jobs, p.index, p.legacy)
		}
	}
	interleave(ctx, runs, jobs...)
	ref := pairs["registry"]["process"].index.s
	for _, j := range jobs[1:] {
		sameOutput("ocmv2 "+v2Chart, helm.s, j.s)
		sameBytesMasked("ocmv2 "+v2Chart, ref, j.s)
	}
	type modeResult struct {
		Index          summary  `json:"index"`
		Legacy         summary  `json:"local_blob"`
		IndexRequests  []string `json:"index_requests_last_run,omitempty"`
		LegacyRequests []string `json:"local_blob_requests_last_run,omitempty"`
	}
	res := map[string]any{"helm_template": helm.s.summary(), "output": kinds(helm.s.samples[0].Stdout), "runs": runs}
	for _, s := range srcs {
		bySrc := map[string]modeResult{}
		for _, mode := range modes {
			p := pairs[s.label][mode]
			bySrc[mode] = modeResult{Index: p.index.s.summary(), Legacy: p.legacy.s.summary()}
			v, r := p.index.s.wall(), p.legacy.s.wall()
			rq := ""
			if ri, rl := reqs[p.index], reqs[p.legacy]; ri != nil {
				rq = fmt.Sprintf("; registry requests of the last warm run: index %d %v, local blob %d %v", len(*ri), *ri, len(*rl), *rl)
				bySrc[mode] = modeResult{Index: p.index.s.summary(), Legacy: p.legacy.s.summary(), IndexRequests: *ri, LegacyRequests: *rl}
			}
			b.modeGoal(mode, goal{ID: "G26 index chart", What: fmt.Sprintf("generate, warm cache, %s: chart stored in the version's image index (OCM CLI v0.13) / the same chart as a local blob layer (v0.48 format), %s", s.label, v2Chart),
				Value: round(v), Unit: "ms", Reference: round(r), RefWhat: "ms chart as local blob", Ratio: round(v / r), Limit: 1.05, LimitWhat: "≤ 1.05 (within 5 %)", Met: boolp(v/r <= 1.05),
				Note: fmt.Sprintf("paired ratio (median of the rounds' ratios) %.3f; %s; helm template of the tgz %.0f ms%s", pairedRatio(p.index.s, p.legacy.s), minNote(p.index.s, p.legacy.s), helm.s.wall(), rq)})
		}
		res[s.label] = bySrc
	}
	b.res.Sections["ocmv2_warm"] = res
}

// warmFirst runs j once, untimed, right before each timed run (before
// j's own before hook).
func warmFirst(ctx context.Context, j *job) {
	prev := j.before
	j.before = func() {
		mustOK(j.spec, runProc(ctx, j.spec))
		if prev != nil {
			prev()
		}
	}
}

// ocmv2Cold: cold generate of the index-stored chart from the registry
// answering after 25 ms, against helm template oci:// of the helm-pushed
// chart with a fresh Helm home, alternated.
func (b *bench) ocmv2Cold(ctx context.Context, reg *v2Registry) {
	logf("ocmv2 cold: registry answering after %s; %d runs of each command, interleaved", v2Delay, b.cfg.Runs)
	reg.delay.Store(true)
	defer reg.delay.Store(false)
	coldCache := filepath.Join(b.work, "cache-ocmv2-cold")
	helmHome := filepath.Join(b.work, "helm-ocmv2")
	helmEnv := slices.Clone(b.baseEnv)
	for k, v := range map[string]string{"HELM_CACHE_HOME": "cache", "HELM_CONFIG_HOME": "config", "HELM_DATA_HOME": "data", "HELM_REGISTRY_CONFIG": "config/registry/config.json",
		"HELM_REPOSITORY_CONFIG": "config/repositories.yaml", "HELM_REPOSITORY_CACHE": "cache/repository"} {
		helmEnv = setEnv(helmEnv, k, filepath.Join(helmHome, v))
	}
	type counts struct {
		runs, total, maxTotal int
		trips                 []float64
		last                  []string
	}
	count := func(c *counts) func(sample) {
		return func(sample) {
			reqs := reg.settle()
			c.trips = append(c.trips, float64(reg.roundTrips()))
			c.runs++
			c.total += len(reqs)
			c.maxTotal = max(c.maxTotal, len(reqs))
			c.last = c.last[:0]
			for _, q := range reqs {
				c.last = append(c.last, q.Method+" "+q.Path)
			}
		}
	}
	helmCounts := &counts{}
	helm := newJob(cmdSpec{Name: "helm template oci:// (fresh helm cache)", Bin: b.bins.Helm, Env: helmEnv, Dir: b.appDir,
		Args: []string{"template", "bench", "oci://" + reg.Host + "/charts/podinfo", "--version", v2ChartTag, "--plain-http", "--namespace", "bench", "--include-crds", "--kube-version", v2KubeVersion}})
	helm.before = func() { os.RemoveAll(helmHome); reg.settle(); reg.Reset(); reg.resetSpans() }
	helm.after = count(helmCounts)
	jobs := []*job{helm}
	cold, coldCounts := map[string]*job{}, map[string]*counts{}
	for _, mode := range modes {
		c := &counts{}
		j := newJob(b.inMode(mode, coldSpec(b.v2Generate("generate cold (registry +25 ms, chart in the index)", reg, reg.Host+"/index", coldCache))))
		j.before = func() { os.RemoveAll(coldCache); reg.settle(); reg.Reset(); reg.resetSpans() }
		j.after = count(c)
		cold[mode], coldCounts[mode] = j, c
		jobs = append(jobs, j)
	}
	interleave(ctx, b.cfg.Runs, jobs...)
	for _, j := range jobs[1:] {
		sameOutput("ocmv2 cold "+v2Chart, helm.s, j.s)
	}
	sameBytesMasked("ocmv2 cold "+v2Chart, cold["process"].s, cold["sidecar"].s)
	per := func(c *counts) float64 { return float64(c.total) / float64(max(c.runs, 1)) }
	res := map[string]any{"delay_ms": ms(v2Delay), "helm_template_oci": helm.s.summary(), "helm_requests_per_run": per(helmCounts), "helm_requests_last_run": helmCounts.last,
		"helm_round_trips_median": median(helmCounts.trips)}
	for _, mode := range modes {
		j, c := cold[mode], coldCounts[mode]
		v, r := j.s.wall(), helm.s.wall()
		b.modeGoal(mode, goal{ID: "G26 cold", What: fmt.Sprintf("generate, empty cache, registry answering after %.0f ms: chart in the version's image index (OCM CLI v0.13), %s", ms(v2Delay), v2Chart),
			Value: round(v), Unit: "ms", Reference: round(r), RefWhat: "ms helm template oci:// (helm push layout, fresh helm cache)", Ratio: round(v / r), Limit: 1.0, LimitWhat: "≤ 1.0", Met: boolp(v/r <= 1.0),
			Note: fmt.Sprintf("requests per run %.1f (at most %d), %.0f of them one after another (median), against helm's %.1f, %.0f one after another; each answered after %.0f ms; %s",
				per(c), c.maxTotal, median(c.trips), per(helmCounts), median(helmCounts.trips), ms(v2Delay), minNote(j.s, helm.s))})
		res[mode] = map[string]any{"generate_cold": j.s.summary(), "requests_per_run": per(c), "requests_max": c.maxTotal, "requests_last_run": c.last, "round_trips_median": median(c.trips)}
	}
	b.res.Sections["ocmv2_cold"] = res
}
