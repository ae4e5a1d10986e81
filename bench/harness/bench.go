package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

type bench struct {
	cfg        config
	root, work string
	bins       binaries
	tb         *harnessTB
	reg        *registrytest.Registry
	repo       string // the registry as the Application names it: host:port/ocm
	ctfDir     string
	appDir     string // the Application's directory (cwd of generate)
	baseEnv    []string
	res        result

	chartFx []*chartFixture
	treeFx  []*treeFixture
	kustFx  []*treeFixture // the kustomize section's own trees (kustomize_trees.go)

	podinfoTgz   []byte
	unusedDigest string
	bigDigest    string

	// Figures other sections build on.
	warmPodinfoMS  float64
	warmPodinfoCPU float64
	helmKinds      map[string]string  // chart label -> kinds of helm's output
	cliWall        map[string]float64 // fixture label -> median wall of helm template / kustomize build
	treeRSS        float64            // warm render of the small demo tree (baseline RSS)
	sidecarWall    map[string]float64 // fixture label -> median wall of a warm sidecar-mode generate

	servers []*renderServer // the render servers started so far (see sidecar)

	streamMu   sync.Mutex
	streamDirs map[string]string // the directories requests stream (see streamDir)
}

type chartFixture struct {
	Label, Component string
	Tgz              string   // chart archive for helm template
	Data             []byte   // its bytes
	Needed           []string // digests a cold render needs
	// Transferred copy (ociArtifact access), cold request counts only.
	TransferredRepo   string
	TransferredNeeded []string
}

type treeFixture struct {
	Label, Component string
	Dir              string // the tree on disk, for kustomize build
	Path             string // entry path inside the resource
	CTF              string // the offline CTF holding it; empty: the harness's
}

func newBench(cfg config, root, work string, bins binaries, tb *harnessTB) *bench {
	return &bench{cfg: cfg, root: root, work: work, bins: bins, tb: tb,
		res: result{Sections: map[string]any{}, LoadAvg: map[string]float64{}}, helmKinds: map[string]string{}, cliWall: map[string]float64{}, sidecarWall: map[string]float64{}}
}

func (b *bench) want(section string) bool {
	if b.cfg.Only == "" {
		return true
	}
	for _, s := range strings.Split(b.cfg.Only, ",") {
		if strings.TrimSpace(s) == section {
			return true
		}
	}
	return false
}

func (b *bench) dir(elem ...string) string {
	p := filepath.Join(append([]string{b.work}, elem...)...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		fatalf("%v", err)
	}
	return p
}

// setup builds the fixtures, starts the registry and pushes the components.
func (b *bench) setup() {
	t0 := time.Now()
	b.setBaseEnv()
	podinfo, extras := b.demoComponents()

	files, err := ocmbuild.ReadDir(filepath.Join(b.root, "testdata", "src", "charts", "podinfo"))
	if err != nil {
		fatalf("%v", err)
	}
	b.podinfoTgz, err = ocmbuild.PackageChart(files)
	if err != nil {
		fatalf("%v", err)
	}
	largeTgz, err := ocmbuild.PackageChart(largeChartFiles(b.cfg.LargeServices))
	if err != nil {
		fatalf("%v", err)
	}
	charts := b.dir("charts")
	writeFiles(charts, map[string][]byte{"podinfo-6.7.0.tgz": b.podinfoTgz, "platform-1.0.0.tgz": largeTgz})
	large := chartComponent(compLarge, largeTgz, "1.0.0", ocmbuild.Resource{Name: "image", Type: "ociImage", Version: "1.0.0",
		Access: map[string]any{"type": "ociArtifact", "imageReference": "registry.example.com/team/svc-00:1.0.0"}})

	shopFiles := shopTree(b.cfg.ShopApps)
	shopDir := b.dir("trees", "shop")
	writeFiles(shopDir, shopFiles)
	shopTgz, err := ocmbuild.TarFiles(shopFiles, true)
	if err != nil {
		fatalf("%v", err)
	}
	shop := treeComponent(compShop, shopTgz)
	extrasDir := b.dir("trees", "podinfo-extras")
	ef, err := ocmbuild.ReadDir(filepath.Join(b.root, "testdata", "src", "manifests", "podinfo-extras"))
	if err != nil {
		fatalf("%v", err)
	}
	writeFiles(extrasDir, ef)

	logf("generating the %s unused and %s used large resources", mib(b.cfg.UnusedSize), mib(b.cfg.UsedSize))
	unusedData := randomBytes(b.cfg.UnusedSize, 1)
	b.unusedDigest = blob.Digest(unusedData)
	unused := chartComponent(compUnused, b.podinfoTgz, "6.7.0", ocmbuild.Resource{Name: "dataset", Type: "blob", Data: unusedData, MediaType: "application/octet-stream"})
	bigTgz := bigTreeTgz(b.cfg.UsedSize)
	b.bigDigest = blob.Digest(bigTgz)
	bigTree := treeComponent(compBigTree, bigTgz)

	// Filesystem storage: the in-memory driver copies a blob on every chunk
	// written (quadratic in its size).
	b.reg = registrytest.Start(b.tb, registrytest.WithStorageDir(b.dir("registry")))
	b.repo = b.reg.Host + "/ocm"
	b.reg.Push(b.tb, "ocm", podinfo, extras, large, shop, unused, bigTree)
	transferred := b.reg.PushTransferred(b.tb, "transferred", podinfo)
	unusedData = nil

	// generate reads only files inside the Application's directory, and
	// the sidecar gets that directory streamed per generation: the CTF holds
	// what its figures render (the 100 MiB tree is rendered from the
	// registry only).
	b.ctfDir = b.dir("app", "ctf")
	if err := ocmbuild.WriteCTF(b.ctfDir, podinfo, extras, large, shop); err != nil {
		fatalf("ctf: %v", err)
	}

	b.chartFx = []*chartFixture{
		{Label: "podinfo (demo chart)", Component: compPodinfo, Tgz: filepath.Join(charts, "podinfo-6.7.0.tgz"), Data: b.podinfoTgz,
			Needed: neededLocal(podinfo), TransferredRepo: b.reg.Host + "/transferred", TransferredNeeded: neededTransferred(transferred[0], b.podinfoTgz)},
		{Label: fmt.Sprintf("platform (synthetic, %d services)", b.cfg.LargeServices), Component: compLarge,
			Tgz: filepath.Join(charts, "platform-1.0.0.tgz"), Data: largeTgz, Needed: neededLocal(large)},
	}
	b.treeFx = []*treeFixture{
		{Label: "podinfo-extras (demo)", Component: compExtras, Dir: extrasDir},
		{Label: fmt.Sprintf("shop overlay (synthetic, %d apps)", b.cfg.ShopApps), Component: compShop, Dir: filepath.Join(shopDir, "overlays", "prod"), Path: "overlays/prod"},
	}
	b.kustFx = b.addKustomizeTrees()
	b.reg.Reset()
	logf("fixtures ready in %.1fs (registry %s)", time.Since(t0).Seconds(), b.reg.URL)
}

// setBaseEnv creates the Application's directory and the home of every
// process and sets the environment they all start from.
func (b *bench) setBaseEnv() {
	home := b.dir("home")
	b.appDir = b.dir("app")
	b.baseEnv = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + b.dir("tmp"),
		"XDG_CACHE_HOME=" + b.dir("home", ".cache"), "XDG_CONFIG_HOME=" + b.dir("home", ".config"), "XDG_DATA_HOME=" + b.dir("home", ".local"),
		"DOCKER_CONFIG=" + b.dir("home", ".docker"),
	}
}

// demoComponents returns the podinfo and podinfo-extras components of the
// examples at the benchmarked version.
func (b *bench) demoComponents() (podinfo, extras *ocmbuild.Component) {
	demo, err := examples.Demo(filepath.Join(b.root, "testdata", "src"))
	if err != nil {
		fatalf("examples: %v", err)
	}
	pick := func(name string) *ocmbuild.Component {
		for _, c := range demo {
			if c.Name == name && c.Version == benchVer {
				return c
			}
		}
		fatalf("example component %s:%s missing", name, benchVer)
		return nil
	}
	return pick(compPodinfo), pick(compExtras)
}

// neededLocal is what a cold render of a component whose chart is a local
// blob must fetch: the descriptor manifest's config and descriptor layer and
// the chart layer (the manifest itself is read by tag).
func neededLocal(c *ocmbuild.Component) []string {
	a, err := c.Artifact()
	if err != nil {
		fatalf("%v", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(a.Manifest, &m); err != nil {
		fatalf("%v", err)
	}
	out := []string{m.Config.Digest.String(), m.Layers[0].Digest.String()}
	for _, r := range c.Resources {
		if r.Type == "helmChart" || r.Type == "directoryTree" {
			out = append(out, blob.Digest(r.Data))
		}
	}
	return out
}

// neededTransferred: config and descriptor layer, the chart's manifest (by
// digest) and its chart layer.
func neededTransferred(p registrytest.Pushed, chartTgz []byte) []string {
	a, err := p.Component.Artifact()
	if err != nil {
		fatalf("%v", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(a.Manifest, &m); err != nil {
		fatalf("%v", err)
	}
	out := []string{m.Config.Digest.String(), m.Layers[0].Digest.String(), blob.Digest(chartTgz)}
	for _, r := range p.Component.Resources {
		if ref, _ := r.Access["imageReference"].(string); r.Type == "helmChart" && strings.Contains(ref, "@") {
			out = append(out, ref[strings.LastIndex(ref, "@")+1:])
		}
	}
	return out
}

// generate is the plugin's generate command with the environment Argo CD
// gives it for Application app.
func (b *bench) generate(name, app, repo, component, path, cacheDir string) cmdSpec {
	params := []map[string]string{{"name": "component", "string": component}, {"name": "version", "string": benchVer}}
	if path != "" {
		params = append(params, map[string]string{"name": "path", "string": path})
	}
	pj, _ := json.Marshal(params)
	if rel, err := filepath.Rel(b.appDir, repo); err == nil && filepath.IsLocal(rel) {
		repo = rel // a CTF of the Application's checkout, as Argo CD gives it
	}
	env := append(slices.Clone(b.baseEnv),
		"ARGOCD_APP_NAME="+app, "ARGOCD_APP_NAMESPACE=bench", "ARGOCD_APP_PROJECT_NAME=default",
		"ARGOCD_APP_SOURCE_REPO_URL=https://git.example.com/apps.git", "ARGOCD_APP_SOURCE_PATH=apps/"+app,
		"ARGOCD_ENV_REPOSITORY="+repo, "ARGOCD_APP_PARAMETERS="+string(pj),
		"ARGOCD_OCM_CACHE_DIR="+cacheDir, "ARGOCD_OCM_PLAIN_HTTP="+b.reg.Host)
	env = append(env, extraPluginEnv...)
	return cmdSpec{Name: name, Bin: b.bins.Plugin, Args: []string{"generate"}, Env: env, Dir: b.appDir}
}

func (b *bench) helmTemplate(tgz string) cmdSpec {
	return cmdSpec{Name: "helm template", Bin: b.bins.Helm, Args: []string{"template", "bench", tgz, "--namespace", "bench", "--include-crds"}, Env: b.baseEnv, Dir: b.appDir}
}

// settle waits until the registry has logged every request (a handler logs
// after the client may already have read the whole response).
func (b *bench) settle() []registrytest.Request {
	prev := -1
	for i := 0; i < 20; i++ {
		n := len(b.reg.Requests())
		if n == prev {
			break
		}
		prev = n
		time.Sleep(15 * time.Millisecond)
	}
	return b.reg.Requests()
}

// reqCheck classifies the requests of one cold render.
type reqCheck struct {
	Total      int      `json:"total"`
	TagGETs    int      `json:"manifest_by_tag"`
	ByDigest   int      `json:"by_digest"`
	Duplicates int      `json:"duplicate_digests"`
	Unexpected []string `json:"unexpected,omitempty"`
	Needed     int      `json:"needed_digests"`
}

func (r reqCheck) ok() bool {
	return r.TagGETs <= 1 && r.Duplicates == 0 && len(r.Unexpected) == 0 && r.Total <= r.Needed+1
}

func checkRequests(reqs []registrytest.Request, needed []string) reqCheck {
	rc := reqCheck{Total: len(reqs), Needed: len(needed)}
	seen := map[string]int{}
	for _, q := range reqs {
		last := q.Path[strings.LastIndex(q.Path, "/")+1:]
		switch {
		case q.Method != "GET" || q.Status != 200:
			rc.Unexpected = append(rc.Unexpected, q.String())
		case strings.Contains(q.Path, "/manifests/") && !strings.HasPrefix(last, "sha256:"):
			rc.TagGETs++
		default:
			rc.ByDigest++
			seen[last]++
			if seen[last] == 2 {
				rc.Duplicates++
			}
			if !slices.Contains(needed, last) {
				rc.Unexpected = append(rc.Unexpected, q.String())
			}
		}
	}
	return rc
}

var kindRE = regexp.MustCompile(`(?m)^kind: *(\S+)`)

// kinds lists the top-level kinds of a YAML stream (whose documents may be
// JSON), sorted: a cheap check that two tools rendered the same objects.
func kinds(out []byte) string {
	var ks []string
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		doc = bytes.TrimSpace(bytes.TrimPrefix(doc, []byte("---\n")))
		if bytes.HasPrefix(doc, []byte("{")) {
			var o struct {
				Kind string `json:"kind"`
			}
			if json.Unmarshal(doc, &o) == nil && o.Kind != "" {
				ks = append(ks, o.Kind)
			}
			continue
		}
		for _, m := range kindRE.FindAllSubmatch(doc, -1) {
			ks = append(ks, string(m[1]))
		}
	}
	sort.Strings(ks)
	return fmt.Sprintf("%d objects: %s", len(ks), strings.Join(compact(ks), ","))
}

func compact(ks []string) []string {
	var out []string
	for i := 0; i < len(ks); {
		j := i
		for j < len(ks) && ks[j] == ks[i] {
			j++
		}
		out = append(out, fmt.Sprintf("%s×%d", ks[i], j-i))
		i = j
	}
	return out
}

func sameOutput(label string, ref, got *series) {
	want := kinds(ref.samples[0].Stdout)
	for _, s := range got.samples {
		if k := kinds(s.Stdout); k != want {
			fatalf("%s: %s rendered %s, %s rendered %s", label, got.Name, k, ref.Name, want)
		}
	}
}

// sameBytes checks that the sidecar printed exactly what the generate
// process printed.
func sameBytes(label string, proc, side *series) {
	want := proc.samples[0].Stdout
	for _, s := range side.samples {
		if !bytes.Equal(s.Stdout, want) {
			fatalf("%s: %s printed %d bytes that differ from the %d bytes of %s", label, side.Name, len(s.Stdout), len(want), proc.Name)
		}
	}
}

func mib(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

func (b *bench) section(name string) {
	l := loadAvg()
	b.res.LoadAvg[name] = l
	logf("== %s (load average %.2f)", name, l)
}

// Modes a generate runs in: "sidecar" is the product as installed (a
// request to the plugin service of the long-lived `argocd-ocm-plugin serve
// --plugin-socket`, as Argo CD's repo-server sends it); "process" is one
// `argocd-ocm-plugin generate` process per generation.
var modes = []string{"sidecar", "process"}

// modeLabel labels a figure by the mode generate ran in.
func modeLabel(mode, id, what string) (string, string) {
	switch mode {
	case "sidecar":
		return id, "sidecar (plugin service): " + what
	case "process":
		if id != "info" {
			id += " (process)"
		}
		return id, "process (argocd-ocm-plugin generate): " + what
	}
	return id, what
}

// modeGoal adds g labelled with mode.
func (b *bench) modeGoal(mode string, g goal) {
	g.ID, g.What = modeLabel(mode, g.ID, g.What)
	if g.Met != nil {
		g.Mode = mode
	}
	b.addGoal(g)
}

// wallGoal adds a goal figure: the median wall time of s against ref's,
// their ratio within limit.
func (b *bench) wallGoal(mode, id, what string, s, ref *series, refWhat string, limit float64) {
	v, r := s.wall(), ref.wall()
	b.modeGoal(mode, goal{ID: id, What: what, Value: round(v), Unit: "ms", Reference: round(r), RefWhat: refWhat, Ratio: round(v / r),
		Limit: limit, LimitWhat: "≤ " + strconv.FormatFloat(limit, 'g', -1, 64), Met: boolp(v/r <= limit), Note: minNote(s, ref)})
}

// coldSpec turns off the render server's shared tag resolutions
// (ARGOCD_OCM_TAG_TTL=0, a sidecar setting: a server of its own) for cold
// runs; a process ignores the variable.
func coldSpec(c cmdSpec) cmdSpec {
	c.Env = append(slices.Clone(c.Env), "ARGOCD_OCM_TAG_TTL=0")
	return c
}

// inMode returns c as run in mode.
func (b *bench) inMode(mode string, c cmdSpec) cmdSpec {
	if mode == "sidecar" {
		return b.sidecar(c)
	}
	return c
}

// serverFor is the render server sidecar-mode generate commands with
// cache directory cacheDir talk to.
func (b *bench) serverFor(cacheDir string) *renderServer {
	return b.sidecar(b.generate("", "bench", b.repo, compPodinfo, "", cacheDir)).server
}

// chartModeResult is the result of one chart in one mode (sidecar or process).
type chartModeResult struct {
	Warm     summary    `json:"generate_warm_registry"`
	Cold     summary    `json:"generate_cold_registry"`
	CTF      summary    `json:"generate_warm_ctf"`
	Cold2    *summary   `json:"generate_cold_transferred,omitempty"`
	Requests []reqCheck `json:"cold_requests"`
	Reqs2    []reqCheck `json:"cold_requests_transferred,omitempty"`
}

// chartResult is the charts section's result for one chart.
type chartResult struct {
	Label   string                     `json:"label"`
	Helm    summary                    `json:"helm_template"`
	Modes   map[string]chartModeResult `json:"modes"`
	Servers map[string]float64         `json:"server_peak_rss_mib"`
	Output  string                     `json:"output"`
}

// chartModeJobs are the generate jobs of one chart in one mode and the
// request checks of their cold runs.
type chartModeJobs struct {
	warm, ctf, cold, cold2 *job
	checks, checks2        []reqCheck
}

// charts: warm and cold generate against helm template, same run,
// alternated, in sidecar mode and as generate processes.
func (b *bench) charts(ctx context.Context) {
	b.section("charts")
	var all []chartResult
	for _, c := range b.chartFx {
		all = append(all, b.chart(ctx, c))
	}
	b.res.Sections["charts"] = all
	b.checkServers("charts")
}

// chart measures one chart fixture of the charts section and records its goals.
func (b *bench) chart(ctx context.Context, c *chartFixture) chartResult {
	logf("chart %s: %d runs of each command, interleaved", c.Label, b.cfg.Runs)
	helm, jobs, m := b.chartJobs(c)
	side, proc := m["sidecar"], m["process"]
	warmSrv, coldSrv := side.warm.spec.server, side.cold.spec.server
	warmSrv.resetPeak()
	coldSrv.resetPeak()
	interleave(ctx, b.cfg.Runs, jobs...)
	_, warmPeak := warmSrv.mem()
	_, coldPeak := coldSrv.mem()
	for _, j := range jobs[1:] {
		sameOutput(c.Label, helm.s, j.s)
	}
	sameBytes(c.Label, proc.warm.s, side.warm.s)
	sameBytes(c.Label, proc.warm.s, side.ctf.s)
	sameBytes(c.Label, proc.warm.s, side.cold.s)
	if side.cold2 != nil {
		sameBytes(c.Label, proc.cold2.s, side.cold2.s)
	}
	b.helmKinds[c.Label] = kinds(helm.s.samples[0].Stdout)
	r := chartResult{Label: c.Label, Helm: helm.s.summary(), Modes: map[string]chartModeResult{}, Output: b.helmKinds[c.Label],
		Servers: map[string]float64{"warm_cache_server": round(warmPeak), "cold_cache_server": round(coldPeak)}}
	for mode, mj := range m {
		mr := chartModeResult{Warm: mj.warm.s.summary(), Cold: mj.cold.s.summary(), CTF: mj.ctf.s.summary(), Requests: mj.checks, Reqs2: mj.checks2}
		if mj.cold2 != nil {
			s := mj.cold2.s.summary()
			mr.Cold2 = &s
		}
		r.Modes[mode] = mr
	}
	if c.Component == compPodinfo {
		b.warmPodinfoMS, b.warmPodinfoCPU = proc.warm.s.wall(), proc.warm.s.cpu()
	}
	b.sidecarWall[c.Label] = side.warm.s.wall()
	b.cliWall[c.Label] = helm.s.wall()
	b.chartGoals(c, helm, m, warmPeak, coldPeak)
	return r
}

// chartJobs returns the helm template job of a chart, its generate jobs by
// mode and all the jobs in the order they are interleaved.
func (b *bench) chartJobs(c *chartFixture) (helm *job, jobs []*job, m map[string]*chartModeJobs) {
	warmCache := b.dir("cache-warm")
	coldCache := filepath.Join(b.work, "cache-cold")
	coldBefore := func() { os.RemoveAll(coldCache); b.settle(); b.reg.Reset() }
	helm = newJob(b.helmTemplate(c.Tgz))
	jobs = []*job{helm}
	m = map[string]*chartModeJobs{}
	for _, mode := range modes {
		mj := &chartModeJobs{}
		m[mode] = mj
		mj.warm = newJob(b.inMode(mode, b.generate("generate warm (registry)", "bench", b.repo, c.Component, "", warmCache)))
		mj.ctf = newJob(b.inMode(mode, b.generate("generate warm (CTF)", "bench", b.ctfDir, c.Component, "", warmCache)))
		// The server needs no restart for a cold run: it opens the
		// cache directory per request. Its shared tag resolutions
		// are off (a server of its own) so that a cold run asks for
		// the tag as a first generation does.
		mj.cold = newJob(b.inMode(mode, coldSpec(b.generate("generate cold (registry)", "bench", b.repo, c.Component, "", coldCache))))
		mj.cold.before = coldBefore
		mj.cold.after = func(sample) { mj.checks = append(mj.checks, checkRequests(b.settle(), c.Needed)) }
		if c.TransferredRepo != "" {
			mj.cold2 = newJob(b.inMode(mode, coldSpec(b.generate("generate cold (registry, transferred ociArtifact)", "bench", c.TransferredRepo, c.Component, "", coldCache))))
			mj.cold2.before = coldBefore
			mj.cold2.after = func(sample) { mj.checks2 = append(mj.checks2, checkRequests(b.settle(), c.TransferredNeeded)) }
		}
	}
	// Sidecar and process jobs side by side, so that load hits both alike.
	for _, pick := range []func(*chartModeJobs) *job{
		func(x *chartModeJobs) *job { return x.warm }, func(x *chartModeJobs) *job { return x.cold },
		func(x *chartModeJobs) *job { return x.ctf }, func(x *chartModeJobs) *job { return x.cold2 },
	} {
		for _, mode := range modes {
			if j := pick(m[mode]); j != nil {
				jobs = append(jobs, j)
			}
		}
	}
	return helm, jobs, m
}

// chartGoals records the goals of one chart: wall time and requests by mode,
// then memory, then CPU time.
func (b *bench) chartGoals(c *chartFixture, helm *job, m map[string]*chartModeJobs, warmPeak, coldPeak float64) {
	proc := m["process"]
	hr := helm.s.rss()
	for _, mode := range modes {
		mj := m[mode]
		b.wallGoal(mode, "G1 warm", "generate, warm cache, registry: "+c.Label, mj.warm.s, helm.s, "ms helm template", 1.2)
		b.wallGoal(mode, "G1 warm", "generate, offline CTF: "+c.Label, mj.ctf.s, helm.s, "ms helm template", 1.2)
		b.wallGoal(mode, "G2 cold", "generate, empty cache, loopback registry: "+c.Label, mj.cold.s, helm.s, "ms helm template", 2)
		b.requestGoal(mode, "requests of one cold generate (chart as local blob): "+c.Label, mj.checks)
		if mj.cold2 != nil {
			b.requestGoal(mode, "requests of one cold generate (transferred, ociArtifact): "+c.Label, mj.checks2)
			b.wallGoal(mode, "G2 cold", "generate, empty cache, transferred ociArtifact: "+c.Label, mj.cold2.s, helm.s, "ms helm template", 2)
		}
	}
	// Memory of one render: a generate process. The render server's
	// figures are information: a long-lived process's peak over many
	// renders, its baseline included.
	b.addGoal(goal{ID: "G4 memory", What: "process (argocd-ocm-plugin generate): peak RSS, warm generate: " + c.Label, Value: round(proc.warm.s.rss()), Unit: "MiB",
		Reference: round(hr), RefWhat: "MiB helm template", Ratio: round(proc.warm.s.rss() / hr), Limit: 1.5, LimitWhat: "≤ 1.5", Met: boolp(proc.warm.s.rss()/hr <= 1.5)})
	b.addGoal(goal{ID: "G4 memory", What: "process (argocd-ocm-plugin generate): peak RSS, cold generate: " + c.Label, Value: round(proc.cold.s.rss()), Unit: "MiB",
		Reference: round(hr), RefWhat: "MiB helm template", Ratio: round(proc.cold.s.rss() / hr), Limit: 1.5, LimitWhat: "≤ 1.5", Met: boolp(proc.cold.s.rss()/hr <= 1.5)})
	b.modeGoal("sidecar", goal{ID: "info", What: "render server peak RSS (VmHWM) over the warm runs, registry and CTF: " + c.Label, Value: round(warmPeak), Unit: "MiB",
		Reference: round(hr), RefWhat: "MiB helm template", Ratio: round(warmPeak / hr),
		Note: fmt.Sprintf("peak of one long-lived process over %d renders (VmHWM reset before this chart); cold-cache server %.0f MiB",
			2*(b.cfg.Runs+1), coldPeak)})
	for _, mode := range modes {
		mj := m[mode]
		note := ""
		if mode == "sidecar" {
			note = "the render server's (supervisor and workers); packing and streaming the directory are the repo-server's"
		}
		b.modeGoal(mode, goal{ID: "info", What: "CPU time (user+sys), warm generate: " + c.Label, Value: round(mj.warm.s.cpu()), Unit: "ms",
			Reference: round(helm.s.cpu()), RefWhat: "ms helm template", Ratio: round(mj.warm.s.cpu() / helm.s.cpu()), Note: note})
	}
}

// requestGoal records the G2 requests goal of one mode from the worst of its
// cold runs' request checks.
func (b *bench) requestGoal(mode, what string, cs []reqCheck) {
	worst, ok := cs[0], true
	for _, x := range cs {
		ok = ok && x.ok()
		if x.Total > worst.Total || !x.ok() {
			worst = x
		}
	}
	note := fmt.Sprintf("%d by tag, %d by digest, %d duplicate, unexpected %v", worst.TagGETs, worst.ByDigest, worst.Duplicates, worst.Unexpected)
	b.modeGoal(mode, goal{ID: "G2 requests", What: what, Value: float64(worst.Total), Unit: "requests",
		Reference: float64(worst.Needed + 1), RefWhat: "= needed blobs + tag", Limit: float64(worst.Needed + 1),
		LimitWhat: fmt.Sprintf("≤ %d, none twice", worst.Needed+1), Met: boolp(ok), Note: note})
}

// kustomize: warm generate of a directoryTree against kustomize build.
func (b *bench) kustomize(ctx context.Context) {
	b.section("kustomize")
	type modeResult struct {
		Warm summary `json:"generate_warm_registry"`
		CTF  summary `json:"generate_warm_ctf"`
	}
	type treeResult struct {
		Label     string                `json:"label"`
		Kustomize summary               `json:"kustomize_build"`
		Modes     map[string]modeResult `json:"modes"`
		Output    string                `json:"output"`
	}
	var all []treeResult
	for _, t := range append(slices.Clone(b.treeFx), b.kustFx...) {
		logf("tree %s: %d runs of each command, interleaved", t.Label, b.cfg.Runs)
		ctfDir := cmp.Or(t.CTF, b.ctfDir)
		cache := b.dir("cache-warm")
		k := newJob(cmdSpec{Name: "kustomize build", Bin: b.bins.Kustomize, Args: []string{"build", t.Dir}, Env: b.baseEnv, Dir: b.appDir})
		warm, ctf := map[string]*job{}, map[string]*job{}
		for _, mode := range modes {
			warm[mode] = newJob(b.inMode(mode, b.generate("generate warm (registry)", "bench", b.repo, t.Component, t.Path, cache)))
			ctf[mode] = newJob(b.inMode(mode, b.generate("generate warm (CTF)", "bench", ctfDir, t.Component, t.Path, cache)))
		}
		jobs := []*job{k, warm["sidecar"], warm["process"], ctf["sidecar"], ctf["process"]}
		interleave(ctx, b.cfg.Runs, jobs...)
		for _, j := range jobs[1:] {
			sameOutput(t.Label, k.s, j.s)
		}
		sameBytes(t.Label, warm["process"].s, warm["sidecar"].s)
		sameBytes(t.Label, warm["process"].s, ctf["sidecar"].s)
		r := treeResult{Label: t.Label, Kustomize: k.s.summary(), Modes: map[string]modeResult{}, Output: kinds(k.s.samples[0].Stdout)}
		for _, mode := range modes {
			r.Modes[mode] = modeResult{Warm: warm[mode].s.summary(), CTF: ctf[mode].s.summary()}
		}
		all = append(all, r)
		if t.Component == compExtras {
			b.treeRSS = warm["process"].s.rss()
		}
		b.sidecarWall[t.Label] = warm["sidecar"].s.wall()
		kw := k.s.wall()
		b.cliWall[t.Label] = kw
		for _, mode := range modes {
			// Issue 17: the sidecar (the installed form) no slower than
			// kustomize build, a generate process within 1.2×.
			limit := 1.2
			if mode == "sidecar" {
				limit = 1.0
			}
			b.wallGoal(mode, "G5 kustomize", "generate, warm cache, registry: "+t.Label, warm[mode].s, k.s, "ms kustomize build", limit)
			b.wallGoal(mode, "G5 kustomize", "generate, offline CTF: "+t.Label, ctf[mode].s, k.s, "ms kustomize build", limit)
			b.modeGoal(mode, goal{ID: "info", What: "CPU time (user+sys), warm generate: " + t.Label, Value: round(warm[mode].s.cpu()), Unit: "ms",
				Reference: round(k.s.cpu()), RefWhat: "ms kustomize build", Ratio: round(warm[mode].s.cpu() / k.s.cpu())})
		}
		pw := warm["process"].s
		b.modeGoal("process", goal{ID: "info", What: "peak RSS, warm generate: " + t.Label, Value: round(pw.rss()), Unit: "MiB",
			Reference: round(k.s.rss()), RefWhat: "MiB kustomize build", Ratio: round(pw.rss() / k.s.rss())})
	}
	b.res.Sections["kustomize"] = all
	b.checkServers("kustomize")
}

// unusedCounts are the registry requests of the cold renders of the
// component with an unused resource: all of them and those for that resource.
type unusedCounts struct{ unused, total int }

// unusedResource renders the component with an unused large resource cold,
// in each mode, and records the G4 unused goals; it returns the jobs and
// their request counts by mode.
func (b *bench) unusedResource(ctx context.Context, runs int, cache string, coldBefore func()) (map[string]*job, map[string]*unusedCounts) {
	un, unCount := map[string]*job{}, map[string]*unusedCounts{}
	for _, mode := range modes {
		j := newJob(b.inMode(mode, b.generate("generate cold, component with unused "+mib(b.cfg.UnusedSize)+" resource", "bench", b.repo, compUnused, "", cache)))
		c := &unusedCounts{}
		j.before = coldBefore
		j.after = func(sample) {
			for _, q := range b.settle() {
				c.total++
				if strings.HasSuffix(q.Path, "/"+b.unusedDigest) {
					c.unused++
				}
			}
		}
		un[mode], unCount[mode] = j, c
	}
	interleave(ctx, runs, un["sidecar"], un["process"])
	for _, mode := range modes {
		c := unCount[mode]
		b.modeGoal(mode, goal{ID: "G4 unused", What: fmt.Sprintf("requests for a %s resource the render does not use (%d cold renders)", mib(b.cfg.UnusedSize), runs+1),
			Value: float64(c.unused), Unit: "requests", LimitWhat: "0", Met: boolp(c.unused == 0),
			Note: fmt.Sprintf("%d requests in all; -unused-size 1GiB for the issue's size", c.total)})
	}
	return un, unCount
}

// resources: an unused large resource is never fetched; a used large
// directoryTree is streamed, not held twice.
func (b *bench) resources(ctx context.Context) {
	b.section("resources")
	runs := 2
	if b.cfg.Quick {
		runs = 1
	}
	cache := filepath.Join(b.work, "cache-res")
	coldBefore := func() { os.RemoveAll(cache); b.settle(); b.reg.Reset() }
	un, unCount := b.unusedResource(ctx, runs, cache, coldBefore)

	// Used large directoryTree: cold (downloads and caches it) and warm.
	cold, warm, bigGETs := map[string]*job{}, map[string]*job{}, map[string]*int{}
	for _, mode := range modes {
		cold[mode] = newJob(b.inMode(mode, b.generate("generate cold, "+mib(b.cfg.UsedSize)+" directoryTree", "bench", b.repo, compBigTree, "", cache)))
		warm[mode] = newJob(b.inMode(mode, b.generate("generate warm, "+mib(b.cfg.UsedSize)+" directoryTree", "bench", b.repo, compBigTree, "", b.dir("cache-warm"))))
		n := new(int)
		bigGETs[mode] = n
		cold[mode].before = coldBefore
		cold[mode].after = func(sample) {
			for _, q := range b.settle() {
				if q.IsBlob() && strings.HasSuffix(q.Path, "/"+b.bigDigest) {
					*n++
				}
			}
		}
	}
	coldSrv, warmSrv := cold["sidecar"].spec.server, warm["sidecar"].spec.server
	coldBase, warmBase := coldSrv.resetPeak(), warmSrv.resetPeak()
	interleave(ctx, 1, cold["process"], warm["process"], cold["sidecar"], warm["sidecar"])
	coldRSS, coldPeak := coldSrv.mem()
	warmRSS, warmPeak := warmSrv.mem()
	sameBytes("big tree", warm["process"].s, warm["sidecar"].s)
	sameBytes("big tree", warm["process"].s, cold["sidecar"].s)
	if b.treeRSS == 0 {
		j := newJob(b.generate("generate warm (registry)", "bench", b.repo, compExtras, "", b.dir("cache-warm")))
		interleave(ctx, runs, j)
		b.treeRSS = j.s.rss()
	}
	size := float64(b.cfg.UsedSize) / (1 << 20)
	pc, pw := cold["process"].s, warm["process"].s
	peak := max(maxOf(pc.RSSMiB), maxOf(pw.RSSMiB))
	extra := peak - b.treeRSS
	srvExtra := max(coldPeak-coldBase, warmPeak-warmBase)
	b.res.Sections["resources"] = map[string]any{
		"unused_size_bytes": b.cfg.UnusedSize, "unused_gets": unCount["process"].unused, "unused_gets_sidecar": unCount["sidecar"].unused,
		"unused_run": un["process"].s.summary(), "unused_run_sidecar": un["sidecar"].s.summary(),
		"used_size_bytes": b.cfg.UsedSize, "used_cold": pc.summary(), "used_warm": pw.summary(),
		"used_cold_sidecar": cold["sidecar"].s.summary(), "used_warm_sidecar": warm["sidecar"].s.summary(),
		"baseline_rss_mib": round(b.treeRSS), "used_blob_gets_per_cold_run": float64(*bigGETs["process"]) / 2,
		"used_blob_gets_per_cold_run_sidecar": float64(*bigGETs["sidecar"]) / 2,
		"server_cold_cache":                   map[string]float64{"rss_before_mib": round(coldBase), "peak_mib": round(coldPeak), "rss_after_mib": round(coldRSS)},
		"server_warm_cache":                   map[string]float64{"rss_before_mib": round(warmBase), "peak_mib": round(warmPeak), "rss_after_mib": round(warmRSS)},
	}
	// Memory of one render: a generate process; the server's figure is
	// information.
	b.addGoal(goal{ID: "G4 streamed", What: fmt.Sprintf("process (argocd-ocm-plugin generate): peak RSS above a small render, %s directoryTree used by the render (cold and warm)", mib(b.cfg.UsedSize)),
		Value: round(extra), Unit: "MiB", Reference: round(size), RefWhat: "MiB resource", Ratio: round(extra / size), Limit: 2, LimitWhat: "< 2 (not held twice)",
		Met: boolp(extra/size < 2), Note: fmt.Sprintf("peak %.0f MiB, small-render baseline %.0f MiB; blob GETs per cold run %.1f", peak, b.treeRSS, float64(*bigGETs["process"])/2)})
	b.modeGoal("sidecar", goal{ID: "info", What: fmt.Sprintf("render server peak RSS (VmHWM) above its RSS before, %s directoryTree rendered through the plugin service (cold and warm)", mib(b.cfg.UsedSize)),
		Value: round(srvExtra), Unit: "MiB", Reference: round(size), RefWhat: "MiB resource", Ratio: round(srvExtra / size),
		Note: fmt.Sprintf("cold-cache server: RSS %.0f MiB before, peak %.0f, RSS %.0f after; warm-cache server: RSS %.0f before, peak %.0f, RSS %.0f after; blob GETs per cold run %.1f",
			coldBase, coldPeak, coldRSS, warmBase, warmPeak, warmRSS, float64(*bigGETs["sidecar"])/2)})
	for _, mode := range modes {
		b.modeGoal(mode, goal{ID: "info", What: fmt.Sprintf("wall time, %s directoryTree: cold / warm", mib(b.cfg.UsedSize)), Value: round(cold[mode].s.wall()), Unit: "ms",
			Reference: round(warm[mode].s.wall()), RefWhat: "ms warm"})
	}
	b.checkServers("resources")
}

// minNote gives the ratio of the fastest runs and of median CPU times: under
// load from other work the median wall time is noisy, the minimum and CPU
// time much less so. In sidecar mode CPU is the render server's (see
// runService).
func minNote(s, ref *series) string {
	note := fmt.Sprintf("fastest runs %.0f / %.0f ms = %.2f; median CPU %.0f / %.0f ms = %.2f",
		minOf(s.WallMS), minOf(ref.WallMS), minOf(s.WallMS)/minOf(ref.WallMS), s.cpu(), ref.cpu(), s.cpu()/ref.cpu())
	if len(s.ServerCPUMS) > 0 && s.clientCPU() > 0 {
		note += fmt.Sprintf(" (client %.1f + server %.1f ms)", s.clientCPU(), s.serverCPU())
	}
	return note
}
