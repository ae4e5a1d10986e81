package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/blob"
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

	podinfoTgz   []byte
	unusedDigest string
	bigDigest    string

	// Figures other sections build on.
	warmPodinfoMS  float64
	warmPodinfoCPU float64
	helmKinds      map[string]string  // chart label -> kinds of helm's output
	cliWall        map[string]float64 // fixture label -> median wall of helm template / kustomize build
	treeRSS        float64            // warm render of the small demo tree (baseline RSS)
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
}

func newBench(cfg config, root, work string, bins binaries, tb *harnessTB) *bench {
	return &bench{cfg: cfg, root: root, work: work, bins: bins, tb: tb,
		res: result{Sections: map[string]any{}, LoadAvg: map[string]float64{}}, helmKinds: map[string]string{}, cliWall: map[string]float64{}}
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
	home := b.dir("home")
	b.appDir = b.dir("app")
	b.baseEnv = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + b.dir("tmp"),
		"XDG_CACHE_HOME=" + b.dir("home", ".cache"), "XDG_CONFIG_HOME=" + b.dir("home", ".config"), "XDG_DATA_HOME=" + b.dir("home", ".local"),
		"DOCKER_CONFIG=" + b.dir("home", ".docker"),
	}
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
	podinfo, extras := pick(compPodinfo), pick(compExtras)

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

	b.ctfDir = b.dir("ctf")
	if err := ocmbuild.WriteCTF(b.ctfDir, podinfo, extras, large, shop, bigTree); err != nil {
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
	b.reg.Reset()
	logf("fixtures ready in %.1fs (registry %s)", time.Since(t0).Seconds(), b.reg.URL)
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

// charts: warm and cold generate against helm template, same run, alternated.
func (b *bench) charts(ctx context.Context) {
	b.section("charts")
	type chartResult struct {
		Label    string     `json:"label"`
		Helm     summary    `json:"helm_template"`
		Warm     summary    `json:"generate_warm_registry"`
		Cold     summary    `json:"generate_cold_registry"`
		CTF      summary    `json:"generate_warm_ctf"`
		Cold2    *summary   `json:"generate_cold_transferred,omitempty"`
		Requests []reqCheck `json:"cold_requests"`
		Reqs2    []reqCheck `json:"cold_requests_transferred,omitempty"`
		Output   string     `json:"output"`
	}
	var all []chartResult
	for _, c := range b.chartFx {
		logf("chart %s: %d runs of each command, interleaved", c.Label, b.cfg.Runs)
		warmCache := b.dir("cache-warm")
		coldCache := filepath.Join(b.work, "cache-cold")
		helm := newJob(b.helmTemplate(c.Tgz))
		warm := newJob(b.generate("generate warm (registry)", "bench", b.repo, c.Component, "", warmCache))
		ctf := newJob(b.generate("generate warm (CTF)", "bench", b.ctfDir, c.Component, "", warmCache))
		cold := newJob(b.generate("generate cold (registry)", "bench", b.repo, c.Component, "", coldCache))
		var checks, checks2 []reqCheck
		cold.before = func() { os.RemoveAll(coldCache); b.settle(); b.reg.Reset() }
		cold.after = func(sample) { checks = append(checks, checkRequests(b.settle(), c.Needed)) }
		jobs := []*job{helm, warm, cold, ctf}
		var cold2 *job
		if c.TransferredRepo != "" {
			cold2 = newJob(b.generate("generate cold (registry, transferred ociArtifact)", "bench", c.TransferredRepo, c.Component, "", coldCache))
			cold2.before = cold.before
			cold2.after = func(sample) { checks2 = append(checks2, checkRequests(b.settle(), c.TransferredNeeded)) }
			jobs = append(jobs, cold2)
		}
		interleave(ctx, b.cfg.Runs, jobs...)
		for _, j := range jobs[1:] {
			sameOutput(c.Label, helm.s, j.s)
		}
		b.helmKinds[c.Label] = kinds(helm.s.samples[0].Stdout)
		r := chartResult{Label: c.Label, Helm: helm.s.summary(), Warm: warm.s.summary(), Cold: cold.s.summary(), CTF: ctf.s.summary(),
			Requests: checks, Reqs2: checks2, Output: b.helmKinds[c.Label]}
		if cold2 != nil {
			s := cold2.s.summary()
			r.Cold2 = &s
		}
		all = append(all, r)
		if c.Component == compPodinfo {
			b.warmPodinfoMS, b.warmPodinfoCPU = warm.s.wall(), warm.s.cpu()
		}

		hw, hr := helm.s.wall(), helm.s.rss()
		b.cliWall[c.Label] = hw
		b.addGoal(goal{ID: "G1 warm", What: "generate, warm cache, registry: " + c.Label, Value: round(warm.s.wall()), Unit: "ms",
			Reference: round(hw), RefWhat: "ms helm template", Ratio: round(warm.s.wall() / hw), Limit: 1.2, LimitWhat: "≤ 1.2", Met: boolp(warm.s.wall()/hw <= 1.2), Note: minNote(warm.s, helm.s)})
		b.addGoal(goal{ID: "G1 warm", What: "generate, offline CTF: " + c.Label, Value: round(ctf.s.wall()), Unit: "ms",
			Reference: round(hw), RefWhat: "ms helm template", Ratio: round(ctf.s.wall() / hw), Limit: 1.2, LimitWhat: "≤ 1.2", Met: boolp(ctf.s.wall()/hw <= 1.2), Note: minNote(ctf.s, helm.s)})
		b.addGoal(goal{ID: "G2 cold", What: "generate, empty cache, loopback registry: " + c.Label, Value: round(cold.s.wall()), Unit: "ms",
			Reference: round(hw), RefWhat: "ms helm template", Ratio: round(cold.s.wall() / hw), Limit: 2, LimitWhat: "≤ 2", Met: boolp(cold.s.wall()/hw <= 2), Note: minNote(cold.s, helm.s)})
		addReqGoal := func(what string, cs []reqCheck) {
			worst, ok := cs[0], true
			for _, x := range cs {
				ok = ok && x.ok()
				if x.Total > worst.Total || !x.ok() {
					worst = x
				}
			}
			note := fmt.Sprintf("%d by tag, %d by digest, %d duplicate, unexpected %v", worst.TagGETs, worst.ByDigest, worst.Duplicates, worst.Unexpected)
			b.addGoal(goal{ID: "G2 requests", What: what, Value: float64(worst.Total), Unit: "requests",
				Reference: float64(worst.Needed + 1), RefWhat: "= needed blobs + tag", Limit: float64(worst.Needed + 1),
				LimitWhat: fmt.Sprintf("≤ %d, none twice", worst.Needed+1), Met: boolp(ok), Note: note})
		}
		addReqGoal("requests of one cold generate (chart as local blob): "+c.Label, checks)
		if cold2 != nil {
			addReqGoal("requests of one cold generate (transferred, ociArtifact): "+c.Label, checks2)
			b.addGoal(goal{ID: "G2 cold", What: "generate, empty cache, transferred ociArtifact: " + c.Label, Value: round(cold2.s.wall()), Unit: "ms",
				Reference: round(hw), RefWhat: "ms helm template", Ratio: round(cold2.s.wall() / hw), Limit: 2, LimitWhat: "≤ 2", Met: boolp(cold2.s.wall()/hw <= 2)})
		}
		b.addGoal(goal{ID: "G4 memory", What: "peak RSS, warm generate: " + c.Label, Value: round(warm.s.rss()), Unit: "MiB",
			Reference: round(hr), RefWhat: "MiB helm template", Ratio: round(warm.s.rss() / hr), Limit: 1.5, LimitWhat: "≤ 1.5", Met: boolp(warm.s.rss()/hr <= 1.5)})
		b.addGoal(goal{ID: "G4 memory", What: "peak RSS, cold generate: " + c.Label, Value: round(cold.s.rss()), Unit: "MiB",
			Reference: round(hr), RefWhat: "MiB helm template", Ratio: round(cold.s.rss() / hr), Limit: 1.5, LimitWhat: "≤ 1.5", Met: boolp(cold.s.rss()/hr <= 1.5)})
		b.addGoal(goal{ID: "info", What: "CPU time (user+sys), warm generate: " + c.Label, Value: round(warm.s.cpu()), Unit: "ms",
			Reference: round(helm.s.cpu()), RefWhat: "ms helm template", Ratio: round(warm.s.cpu() / helm.s.cpu())})
	}
	b.res.Sections["charts"] = all
}

// kustomize: warm generate of a directoryTree against kustomize build.
func (b *bench) kustomize(ctx context.Context) {
	b.section("kustomize")
	type treeResult struct {
		Label     string  `json:"label"`
		Kustomize summary `json:"kustomize_build"`
		Warm      summary `json:"generate_warm_registry"`
		CTF       summary `json:"generate_warm_ctf"`
		Output    string  `json:"output"`
	}
	var all []treeResult
	for _, t := range b.treeFx {
		logf("tree %s: %d runs of each command, interleaved", t.Label, b.cfg.Runs)
		cache := b.dir("cache-warm")
		k := newJob(cmdSpec{Name: "kustomize build", Bin: b.bins.Kustomize, Args: []string{"build", t.Dir}, Env: b.baseEnv, Dir: b.appDir})
		warm := newJob(b.generate("generate warm (registry)", "bench", b.repo, t.Component, t.Path, cache))
		ctf := newJob(b.generate("generate warm (CTF)", "bench", b.ctfDir, t.Component, t.Path, cache))
		interleave(ctx, b.cfg.Runs, k, warm, ctf)
		sameOutput(t.Label, k.s, warm.s)
		sameOutput(t.Label, k.s, ctf.s)
		all = append(all, treeResult{Label: t.Label, Kustomize: k.s.summary(), Warm: warm.s.summary(), CTF: ctf.s.summary(), Output: kinds(k.s.samples[0].Stdout)})
		if t.Component == compExtras {
			b.treeRSS = warm.s.rss()
		}
		kw := k.s.wall()
		b.cliWall[t.Label] = kw
		b.addGoal(goal{ID: "G5 kustomize", What: "generate, warm cache, registry: " + t.Label, Value: round(warm.s.wall()), Unit: "ms",
			Reference: round(kw), RefWhat: "ms kustomize build", Ratio: round(warm.s.wall() / kw), Limit: 1.2, LimitWhat: "≤ 1.2", Met: boolp(warm.s.wall()/kw <= 1.2), Note: minNote(warm.s, k.s)})
		b.addGoal(goal{ID: "G5 kustomize", What: "generate, offline CTF: " + t.Label, Value: round(ctf.s.wall()), Unit: "ms",
			Reference: round(kw), RefWhat: "ms kustomize build", Ratio: round(ctf.s.wall() / kw), Limit: 1.2, LimitWhat: "≤ 1.2", Met: boolp(ctf.s.wall()/kw <= 1.2), Note: minNote(ctf.s, k.s)})
		b.addGoal(goal{ID: "info", What: "peak RSS, warm generate: " + t.Label, Value: round(warm.s.rss()), Unit: "MiB",
			Reference: round(k.s.rss()), RefWhat: "MiB kustomize build", Ratio: round(warm.s.rss() / k.s.rss())})
	}
	b.res.Sections["kustomize"] = all
}

// concurrent: N Applications of one component, N generate processes at once,
// one shared (initially empty) cache, as an ApplicationSet refresh does.
func (b *bench) concurrent(ctx context.Context) {
	b.section("concurrent")
	// The reference: warm single renders right before the burst, so that
	// both see the same machine load.
	j := newJob(b.generate("generate warm (registry)", "bench", b.repo, compPodinfo, "", b.dir("cache-warm")))
	interleave(ctx, max(3, b.cfg.Runs/2), j)
	b.warmPodinfoMS, b.warmPodinfoCPU = j.s.wall(), j.s.cpu()
	n := b.cfg.Concurrency
	logf("%d concurrent generate processes, one shared empty cache", n)
	wall, samples, reqs := b.burst(ctx, n, 0, nil)
	errs, firstErr := 0, ""
	var rss, maxRSS, cpu float64
	for i, s := range samples {
		if s.Exit != 0 || !strings.Contains(string(s.Stdout), fmt.Sprintf("app-%d-podinfo", i)) {
			errs++
			if firstErr == "" {
				firstErr = fmt.Sprintf("app-%d: exit %d: %s", i, s.Exit, strings.TrimSpace(s.Stderr))
			}
		}
		r := float64(s.MaxRSSKB) / 1024
		cpu += ms(s.CPU)
		rss += r
		maxRSS = max(maxRSS, r)
	}
	perBlob := map[string]int{}
	tags, other := 0, 0
	for _, q := range reqs {
		last := q.Path[strings.LastIndex(q.Path, "/")+1:]
		switch {
		case q.IsBlob():
			perBlob[last]++
		case q.IsManifest() && !strings.HasPrefix(last, "sha256:"):
			tags++
		default:
			other++
		}
	}
	maxPerBlob := 0
	for _, c := range perBlob {
		maxPerBlob = max(maxPerBlob, c)
	}
	cores := float64(b.res.Machine.CPUs)
	ideal := float64(n) * b.warmPodinfoMS / cores
	ratio := ms(wall) / ideal
	b.res.Sections["concurrent"] = map[string]any{
		"processes": n, "wall_ms": round(ms(wall)), "warm_single_ms": round(b.warmPodinfoMS), "cores": cores,
		"ideal_ms": round(ideal), "errors": errs, "first_error": firstErr, "blob_gets": perBlob, "tag_gets": tags, "other_requests": other,
		"rss_sum_mib": round(rss), "rss_max_mib": round(maxRSS), "cpu_sum_ms": round(cpu), "warm_single_cpu_ms": round(b.warmPodinfoCPU),
	}
	b.addGoal(goal{ID: "G3 100 apps", What: fmt.Sprintf("%d concurrent generate, shared empty cache: wall time", n), Value: round(ms(wall) / 1000), Unit: "s",
		Reference: round(ideal / 1000), RefWhat: fmt.Sprintf("s = %d × %.0f ms warm ÷ %.0f cores", n, b.warmPodinfoMS, cores),
		Ratio: round(ratio), Limit: 1.5, LimitWhat: "≤ 1.5", Met: boolp(ratio <= 1.5)})
	b.addGoal(goal{ID: "G3 100 apps", What: fmt.Sprintf("%d concurrent generate: failed processes", n), Value: float64(errs), Unit: "errors",
		LimitWhat: "0", Met: boolp(errs == 0), Note: firstErr})
	b.addGoal(goal{ID: "G3 100 apps", What: fmt.Sprintf("%d concurrent generate: GETs of the most-fetched blob (%d blobs, %d tag GETs)", n, len(perBlob), tags),
		Value: float64(maxPerBlob), Unit: "GETs", LimitWhat: "1 (each blob once)", Met: boolp(maxPerBlob == 1)})
	b.addGoal(goal{ID: "info", What: fmt.Sprintf("%d concurrent generate: CPU time of all processes (vs %d × warm single)", n, n), Value: round(cpu / 1000), Unit: "s",
		Reference: round(float64(n) * b.warmPodinfoCPU / 1000), RefWhat: "s", Ratio: round(cpu / (float64(n) * b.warmPodinfoCPU)),
		Note: "CPU is what other load on the machine cannot inflate; wall time is"})
	b.addGoal(goal{ID: "info", What: fmt.Sprintf("%d concurrent generate: peak RSS, largest process / sum", n), Value: round(maxRSS), Unit: "MiB",
		Reference: round(rss), RefWhat: "MiB sum"})
	if b.cfg.Quick {
		return
	}
	// What would help without a long-lived mode: fewer Go threads per
	// process, and Argo CD's repo-server parallelism limit
	// (reposerver.parallelism.limit), which bounds concurrent generations.
	for _, v := range []struct {
		what  string
		limit int
		env   []string
	}{
		{"GOMAXPROCS=1 in every process", 0, []string{"GOMAXPROCS=1"}},
		{"at most 4 at a time (Argo CD reposerver.parallelism.limit=4)", 4, nil},
	} {
		logf("%d generate processes, %s", n, v.what)
		w, ss, _ := b.burst(ctx, n, v.limit, v.env)
		var c float64
		errs := 0
		for _, x := range ss {
			c += ms(x.CPU)
			if x.Exit != 0 {
				errs++
			}
		}
		b.addGoal(goal{ID: "info", What: fmt.Sprintf("%d generate, %s: wall time", n, v.what), Value: round(ms(w) / 1000), Unit: "s",
			Reference: round(ideal / 1000), RefWhat: "s (100 × warm ÷ cores)", Ratio: round(ms(w) / ideal),
			Note: fmt.Sprintf("CPU of all processes %.1f s = %.2f × 100 warm single; %d failed", c/1000, c/(float64(n)*b.warmPodinfoCPU), errs)})
	}
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
	// Unused resource.
	un := newJob(b.generate("generate cold, component with unused "+mib(b.cfg.UnusedSize)+" resource", "bench", b.repo, compUnused, "", cache))
	var unusedGETs, total int
	un.before = func() { os.RemoveAll(cache); b.settle(); b.reg.Reset() }
	un.after = func(sample) {
		for _, q := range b.settle() {
			total++
			if strings.HasSuffix(q.Path, "/"+b.unusedDigest) {
				unusedGETs++
			}
		}
	}
	interleave(ctx, runs, un)
	b.addGoal(goal{ID: "G4 unused", What: fmt.Sprintf("requests for a %s resource the render does not use (%d cold renders)", mib(b.cfg.UnusedSize), runs+1),
		Value: float64(unusedGETs), Unit: "requests", LimitWhat: "0", Met: boolp(unusedGETs == 0),
		Note: fmt.Sprintf("%d requests in all; -unused-size 1GiB for the issue's size", total)})

	// Used large directoryTree: cold (downloads and caches it) and warm.
	cold := newJob(b.generate("generate cold, "+mib(b.cfg.UsedSize)+" directoryTree", "bench", b.repo, compBigTree, "", cache))
	warm := newJob(b.generate("generate warm, "+mib(b.cfg.UsedSize)+" directoryTree", "bench", b.repo, compBigTree, "", b.dir("cache-warm")))
	bigGETs := 0
	cold.before = un.before
	cold.after = func(sample) {
		for _, q := range b.settle() {
			if q.IsBlob() && strings.HasSuffix(q.Path, "/"+b.bigDigest) {
				bigGETs++
			}
		}
	}
	interleave(ctx, 1, cold, warm)
	if b.treeRSS == 0 {
		j := newJob(b.generate("generate warm (registry)", "bench", b.repo, compExtras, "", b.dir("cache-warm")))
		interleave(ctx, runs, j)
		b.treeRSS = j.s.rss()
	}
	size := float64(b.cfg.UsedSize) / (1 << 20)
	peak := max(maxOf(cold.s.RSSMiB), maxOf(warm.s.RSSMiB))
	extra := peak - b.treeRSS
	b.res.Sections["resources"] = map[string]any{
		"unused_size_bytes": b.cfg.UnusedSize, "unused_gets": unusedGETs, "unused_run": un.s.summary(),
		"used_size_bytes": b.cfg.UsedSize, "used_cold": cold.s.summary(), "used_warm": warm.s.summary(),
		"baseline_rss_mib": round(b.treeRSS), "used_blob_gets_per_cold_run": float64(bigGETs) / 2,
	}
	b.addGoal(goal{ID: "G4 streamed", What: fmt.Sprintf("peak RSS above a small render, %s directoryTree used by the render (cold and warm)", mib(b.cfg.UsedSize)),
		Value: round(extra), Unit: "MiB", Reference: round(size), RefWhat: "MiB resource", Ratio: round(extra / size), Limit: 2, LimitWhat: "< 2 (not held twice)",
		Met: boolp(extra/size < 2), Note: fmt.Sprintf("peak %.0f MiB, small-render baseline %.0f MiB; blob GETs per cold run %.1f", peak, b.treeRSS, float64(bigGETs)/2)})
	b.addGoal(goal{ID: "G4 streamed", What: fmt.Sprintf("wall time, %s directoryTree: cold / warm", mib(b.cfg.UsedSize)), Value: round(cold.s.wall()), Unit: "ms",
		Reference: round(warm.s.wall()), RefWhat: "ms warm"})
}

// minNote gives the ratio of the fastest runs and of median CPU times: under
// load from other work the median wall time is noisy, the minimum and CPU
// time much less so.
func minNote(s, ref *series) string {
	return fmt.Sprintf("fastest runs %.0f / %.0f ms = %.2f; median CPU %.0f / %.0f ms = %.2f",
		minOf(s.WallMS), minOf(ref.WallMS), minOf(s.WallMS)/minOf(ref.WallMS), s.cpu(), ref.cpu(), s.cpu()/ref.cpu())
}

// burst runs n generate processes of the podinfo component as Applications
// app-0…app-(n-1) sharing one empty cache, all at once (limit 0) or at most
// limit at a time, and returns the wall time, the samples and the requests.
func (b *bench) burst(ctx context.Context, n, limit int, env []string) (time.Duration, []sample, []registrytest.Request) {
	cache := filepath.Join(b.work, "cache-shared")
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
