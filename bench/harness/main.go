// Command harness benchmarks argocd-ocm-plugin side by side with the Helm and
// kustomize CLIs built from the same library versions (bench/tools), as
// issue 9 asks: warm and cold renders, request counts, 100 concurrent
// generations sharing one cache, peak memory, unused and large resources,
// kustomize. It serves the components from an in-process CNCF distribution
// registry (internal/testsupport/registrytest) and runs every generation twice, with
// Argo CD's environment, over loopback: as installed in the sidecar (a
// request to the plugin service of a long-lived `argocd-ocm-plugin serve
// --plugin-socket`, as Argo CD's repo-server sends it, see sidecar.go) and
// as a separate `generate` process.
//
//	go run ./bench/harness            # full run (make bench)
//	go run ./bench/harness -quick     # CI smoke: few runs, small sizes
//	go run ./bench/harness -unused-size 1GiB   # the full 1 GiB unused resource
//	go run ./bench/harness -profile bench/results/profile   # + pprof CPU profiles
//
// Results: a table on stdout, bench/results/latest.json and latest.md.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

var globalTB *harnessTB

type config struct {
	Quick         bool    `json:"quick"`
	Runs          int     `json:"runs"`
	Concurrency   int     `json:"concurrency"`
	Bursts        int     `json:"bursts"`
	UnusedSize    int64   `json:"unused_size_bytes"`
	UsedSize      int64   `json:"used_size_bytes"`
	LargeServices int     `json:"large_chart_services"`
	ShopApps      int     `json:"kustomize_apps"`
	InProcRuns    int     `json:"in_process_runs"`
	Only          string  `json:"only,omitempty"`
	ProfileDir    string  `json:"profile_dir,omitempty"`
	StartLoad     float64 `json:"-"`

	// The ApplicationSet refresh section (appset.go).
	AppSetApps     int `json:"appset_applications"`
	AppSetParallel int `json:"appset_parallel"`
	// The CTF tgz section (ctftgz.go).
	CTFTgzSize int64 `json:"ctf_tgz_size_bytes"`
	// RealWorld selects the realworld section's charts (realworld.go).
	RealWorld string `json:"realworld,omitempty"`
	// RealWorldExtra adds the cases of another directory (realworld.go).
	RealWorldExtra string `json:"realworld_extra,omitempty"`
}

// options are the flags that are not part of the recorded config.
type options struct {
	out, buildDir string
	pluginBin     string
	pluginEnv     multiFlag
	keep          bool
}

func main() {
	cfg, opt := parseFlags()
	root := findRoot()
	opt.resolve(root, &cfg)
	work, err := os.MkdirTemp("", "argocd-ocm-bench-*")
	if err != nil {
		fatalf("%v", err)
	}
	tb := &harnessTB{tmp: work}
	globalTB = tb
	tb.Cleanup(func() {
		if opt.keep {
			logf("kept the work directory %s", work)
			return
		}
		os.RemoveAll(work)
	})
	defer tb.close()

	started := time.Now()
	cfg.StartLoad = loadAvg()
	bins := buildAll(root, opt.buildDir, opt.pluginBin)
	extraPluginEnv = opt.pluginEnv
	procstat = bins.Procstat
	statsDir = filepath.Join(work, "stats")
	if err := os.MkdirAll(statsDir, 0o755); err != nil {
		fatalf("%v", err)
	}
	b := newBench(cfg, root, work, bins, tb)
	b.res.Machine = machineInfo()
	b.res.Machine.LoadAvgStart = cfg.StartLoad
	b.res.Revision = revision(root)
	b.res.Config = cfg
	b.res.Binaries = bins
	b.setup()
	b.runSections(context.Background())
	b.stopServers()
	b.res.Machine.LoadAvgEnd = loadAvg()
	b.res.DurationSeconds = round(time.Since(started).Seconds())
	b.report(opt.out)
}

// parseFlags parses the command line into the config (with the defaults of
// a full or quick run filled in) and the other options.
func parseFlags() (config, *options) {
	var cfg config
	opt := &options{}
	var unused, used, ctfTgz string
	flag.BoolVar(&cfg.Quick, "quick", false, "CI smoke: 3 runs, 10 concurrent processes, 4 MiB/8 MiB large resources, no in-process section")
	flag.IntVar(&cfg.Runs, "runs", 0, "timed runs of each command per comparison (default 11, quick 3)")
	flag.IntVar(&cfg.Concurrency, "concurrency", 0, "concurrent generate processes (default 100, quick 10)")
	flag.IntVar(&cfg.Bursts, "bursts", 0, "concurrent section: bursts of -concurrency generations in each mode, each on a fresh empty cache; the goal is on their median (default 5, quick 2)")
	flag.StringVar(&unused, "unused-size", "", "size of the resource the render does not use (default 64MiB, quick 4MiB; the issue's figure: 1GiB)")
	flag.StringVar(&used, "used-size", "", "size of the large file in the directoryTree the render uses (default 100MiB, quick 8MiB)")
	flag.IntVar(&cfg.LargeServices, "large-services", 0, "services in the synthetic large chart, about 6 objects each (default 40, quick 10)")
	flag.IntVar(&cfg.ShopApps, "kustomize-apps", 0, "apps in the synthetic kustomize tree, 3 objects each (default 30, quick 10)")
	flag.StringVar(&cfg.Only, "only", "", "comma-separated sections: charts,realworld,kustomize,concurrent,resources,inprocess,generator,workers,ctftgz,appset,ocmv2,kro,keyless (default all)")
	flag.StringVar(&cfg.ProfileDir, "profile", "", "write pprof CPU profiles of in-process renders (and their top functions) to this directory")
	flag.IntVar(&cfg.AppSetApps, "appset-apps", 0, "Applications of the ApplicationSet refresh section (default 1000, the issue's figure; quick 50)")
	flag.IntVar(&cfg.AppSetParallel, "appset-parallel", 0, "generations of the ApplicationSet refresh in flight at once (default 10)")
	flag.StringVar(&ctfTgz, "ctf-tgz-size", "", "size of the unused resource in the offline CTF tgz section (default 38MiB, the issue's; quick 4MiB)")
	flag.StringVar(&cfg.RealWorld, "realworld", "", "only the realworld section's charts whose label contains this (e.g. kube-prometheus)")
	flag.StringVar(&cfg.RealWorldExtra, "realworld-extra", "", "also the helm cases of DIR/commands.txt (charts in DIR/charts, values relative to DIR), e.g. a held-out set")
	flag.StringVar(&opt.pluginBin, "plugin", "", "measure this prebuilt plugin binary instead of building ./cmd/argocd-ocm-plugin (e.g. a patched copy)")
	flag.Var(&opt.pluginEnv, "plugin-env", "extra K=V in the environment of every plugin process (repeatable)")
	flag.BoolVar(&opt.keep, "keep", false, "keep the work directory (fixtures, CTF, caches) for manual runs")
	flag.StringVar(&opt.out, "out", "bench/results/latest.json", "machine-readable result (a .md table is written next to it)")
	flag.StringVar(&opt.buildDir, "build-dir", "bench/.build", "where binaries are built and the reference tools cached")
	flag.Parse()
	def := func(v *int, full, quick int) {
		if *v <= 0 {
			*v = full
			if cfg.Quick {
				*v = quick
			}
		}
	}
	def(&cfg.Runs, 11, 3)
	def(&cfg.Concurrency, 100, 10)
	def(&cfg.Bursts, 5, 2)
	def(&cfg.InProcRuns, 10, 3)
	cfg.UnusedSize = sizeFlag("unused-size", unused, 64<<20, 4<<20, cfg.Quick)
	cfg.UsedSize = sizeFlag("used-size", used, 100<<20, 8<<20, cfg.Quick)
	def(&cfg.LargeServices, 40, 10)
	def(&cfg.ShopApps, 30, 10)
	def(&cfg.AppSetApps, 1000, 50)
	def(&cfg.AppSetParallel, 10, 10)
	cfg.CTFTgzSize = sizeFlag("ctf-tgz-size", ctfTgz, 38<<20, 4<<20, cfg.Quick)
	return cfg, opt
}

// resolve makes the relative paths of the options and of cfg relative to the
// repository root.
func (o *options) resolve(root string, cfg *config) {
	if !filepath.IsAbs(o.out) {
		o.out = filepath.Join(root, o.out)
	}
	if !filepath.IsAbs(o.buildDir) {
		o.buildDir = filepath.Join(root, o.buildDir)
	}
	if cfg.ProfileDir != "" && !filepath.IsAbs(cfg.ProfileDir) {
		cfg.ProfileDir = filepath.Join(root, cfg.ProfileDir)
	}
}

// runSections runs the selected sections in their fixed order.
func (b *bench) runSections(ctx context.Context) {
	if b.want("charts") {
		b.charts(ctx)
	}
	if b.want("realworld") {
		b.realworld(ctx)
	}
	if b.want("kustomize") {
		b.kustomize(ctx)
	}
	if b.want("resources") {
		b.resources(ctx)
	}
	if b.want("inprocess") && (!b.cfg.Quick || b.cfg.Only != "") {
		b.inProcess(ctx)
	}
	if b.want("generator") {
		b.generator(ctx)
	}
	if b.want("workers") {
		b.workers(ctx)
	}
	if b.want("ctftgz") {
		b.ctftgz(ctx)
	}
	if b.want("appset") {
		b.appset(ctx)
	}
	if b.want("ocmv2") {
		b.ocmv2(ctx)
	}
	if b.want("kro") {
		b.kro(ctx)
	}
	if b.want("keyless") {
		b.keyless(ctx)
	}
	// Last: 100 processes at once leave the load average high for minutes.
	if b.want("concurrent") {
		b.concurrent(ctx)
	}
}

// sizeFlag parses "64MiB", "1GiB", "100M", "12345".
func sizeFlag(name, s string, full, quick int64, isQuick bool) int64 {
	if s == "" {
		if isQuick {
			return quick
		}
		return full
	}
	mult := int64(1)
	up := strings.ToUpper(strings.TrimSpace(s))
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(up, u.suffix) {
			up, mult = strings.TrimSuffix(up, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(up), 64)
	if err != nil || n <= 0 {
		fatalf("-%s %q: want a size such as 64MiB or 1GiB", name, s)
	}
	return int64(n * float64(mult))
}

// revision is the git commit of the working tree, "+dirty" when it has changes.
func revision(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty=+dirty", "--abbrev=12").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func findRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		fatalf("%v", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/argocd-ocm-plugin/argocd-ocm-plugin\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			fatalf("run the harness inside the argocd-ocm-plugin repository")
		}
		dir = parent
	}
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
}

// machine describes where the figures were taken.
type machine struct {
	CPUs         int     `json:"cpus"`
	CPUModel     string  `json:"cpu_model"`
	MemTotalGiB  float64 `json:"mem_total_gib"`
	Kernel       string  `json:"kernel"`
	GoVersion    string  `json:"go_version"`
	LoadAvgStart float64 `json:"loadavg_1m_start"`
	LoadAvgEnd   float64 `json:"loadavg_1m_end"`
	Time         string  `json:"time"`
}

func machineInfo() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Time: time.Now().UTC().Format(time.RFC3339)}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				fmt.Sscan(strings.TrimPrefix(l, "MemTotal:"), &kb)
			}
		}
		m.MemTotalGiB = round(kb / (1 << 20))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// result is the machine-readable output.
type result struct {
	Machine         machine            `json:"machine"`
	Config          config             `json:"config"`
	Revision        string             `json:"revision"`
	Binaries        binaries           `json:"binaries"`
	DurationSeconds float64            `json:"duration_seconds"`
	Goals           []goal             `json:"goals"`
	Info            []goal             `json:"info"`
	Sections        map[string]any     `json:"sections"`
	LoadAvg         map[string]float64 `json:"loadavg_1m_per_section"`
	Servers         []*renderServer    `json:"render_servers"`
}

// goal is one figure: a measured value against its reference and limit.
type goal struct {
	ID string `json:"id"`
	// Mode is "sidecar" (serve's plugin service, the product as
	// installed), "process" (one argocd-ocm-plugin generate process per
	// generation) or "" (a goal for both modes measured on processes:
	// G4's memory of one render).
	Mode      string  `json:"mode,omitempty"`
	What      string  `json:"what"`
	Value     float64 `json:"value"`
	Unit      string  `json:"unit"`
	Reference float64 `json:"reference,omitempty"`
	RefWhat   string  `json:"reference_what,omitempty"`
	Ratio     float64 `json:"ratio,omitempty"`
	Limit     float64 `json:"limit,omitempty"`
	LimitWhat string  `json:"limit_what,omitempty"`
	Met       *bool   `json:"met,omitempty"`
	Note      string  `json:"note,omitempty"`
}

func (b *bench) addGoal(g goal) {
	if g.Met != nil {
		b.res.Goals = append(b.res.Goals, g)
	} else {
		b.res.Info = append(b.res.Info, g)
	}
}

func boolp(v bool) *bool { return &v }

// report prints the table and writes the JSON and Markdown results.
func (b *bench) report(out string) {
	var md strings.Builder
	m := b.res.Machine
	fmt.Fprintf(&md, "Machine: %d vCPU (%s), %.1f GiB RAM, Linux %s, %s; load average (1 min) %.2f at start, %.2f at end; %s; revision %s; %d runs per figure (median); helm %s, kustomize/api %s.\n\n",
		m.CPUs, m.CPUModel, m.MemTotalGiB, m.Kernel, m.GoVersion, m.LoadAvgStart, m.LoadAvgEnd, m.Time, b.res.Revision, b.cfg.Runs, b.bins.HelmHelm, b.bins.KustomizeAPI)
	md.WriteString("| goal | measured | value | reference | ratio | limit | met |\n|---|---|---|---|---|---|---|\n")
	row := func(g goal) {
		met := "info"
		if g.Met != nil {
			met = map[bool]string{true: "yes", false: "**NO**"}[*g.Met]
		}
		ref, ratio, limit := "", "", ""
		if g.RefWhat != "" {
			ref = fmt.Sprintf("%s %s", num(g.Reference), g.RefWhat)
		}
		if g.Ratio != 0 {
			ratio = fmt.Sprintf("%.2f", g.Ratio)
		}
		if g.LimitWhat != "" {
			limit = g.LimitWhat
		}
		fmt.Fprintf(&md, "| %s | %s | %s %s | %s | %s | %s | %s |\n", g.ID, g.What, num(g.Value), g.Unit, ref, ratio, limit, met)
	}
	// The product as installed first, the one-shot process figures second.
	goals := slices.Clone(b.res.Goals)
	slices.SortStableFunc(goals, func(x, y goal) int { return cmp.Compare(modeRank(x.Mode), modeRank(y.Mode)) })
	for _, g := range goals {
		row(g)
	}
	if len(b.res.Info) > 0 {
		md.WriteString("\n| info | measured | value | reference | ratio | | |\n|---|---|---|---|---|---|---|\n")
		for _, g := range b.res.Info {
			row(g)
		}
	}
	md.WriteString("\nNotes:\n")
	for _, g := range append(goals, b.res.Info...) {
		if g.Note != "" {
			fmt.Fprintf(&md, "- %s, %s: %s\n", g.ID, g.What, g.Note)
		}
	}
	met, total := map[bool]int{}, map[bool]int{}
	for _, g := range b.res.Goals {
		p := g.Mode == "process"
		total[p]++
		if *g.Met {
			met[p]++
		}
	}
	fmt.Fprintf(&md, "\n%d of %d goal figures met as installed (sidecar rows, and G4's memory goals measured on processes); %d of %d in one-shot process mode. Reproduce: `make bench` (`go run ./bench/harness`); %.0f s.\n",
		met[false], total[false], met[true], total[true], b.res.DurationSeconds)
	fmt.Print("\n" + md.String())

	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		fatalf("%v", err)
	}
	j, err := json.MarshalIndent(b.res, "", "  ")
	if err != nil {
		fatalf("%v", err)
	}
	if err := os.WriteFile(out, append(j, '\n'), 0o644); err != nil {
		fatalf("%v", err)
	}
	mdPath := strings.TrimSuffix(out, filepath.Ext(out)) + ".md"
	if err := os.WriteFile(mdPath, []byte(md.String()), 0o644); err != nil {
		fatalf("%v", err)
	}
	logf("wrote %s and %s", out, mdPath)
}

func modeRank(m string) int {
	if m == "process" {
		return 1
	}
	return 0
}

func num(v float64) string {
	switch {
	case v == float64(int64(v)):
		return strconv.FormatInt(int64(v), 10)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// extraPluginEnv is added to every plugin process's environment (-plugin-env).
var extraPluginEnv []string
