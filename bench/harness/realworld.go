package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// The realworld section (issue 19): third-party charts (the cases and values
// of testdata/realworld/commands.txt; the charts from the team's full set,
// ../shared/fixtures/realworld beside the repository, else the repository's
// subset) and large synthetic charts of the harness's own (500+
// objects, 10 MB of CRDs, 20 subcharts), each rendered through the sidecar,
// as a generate process and with `render` (YAML), side by side with `helm
// template` in the same alternated rounds.

// realWorldDir holds the real-world cases and values, realWorldFull the
// team's full set of charts (from the repository root).
const realWorldDir, realWorldFull = "testdata/realworld", "../shared/fixtures/realworld"

// rwCase is one chart of the realworld section.
type rwCase struct {
	Label, Component string
	Release, NS      string
	KubeVersion      string
	APIVersions      []string
	Tgz              string   // the chart archive helm template reads
	HelmArgs         []string // helm template's flags after the chart (values files as absolute paths)
	ValueFiles       []string // the same values as files in the Application's directory, relative to it
	Objects          string   // kinds of helm's output, once measured
}

// realWorldCases reads commands.txt and pushes one component per chart;
// nil (and a loud message) when the fixtures are absent. With
// -realworld-extra DIR, DIR's cases are added: DIR/commands.txt in the same
// form, its charts in DIR/charts and its values files relative to DIR (a
// set of charts that is not in the repository, e.g. a held-out one).
func (b *bench) realWorldCases() []*rwCase {
	dir := filepath.Join(b.root, realWorldDir)
	charts := filepath.Join(b.root, realWorldFull, "charts")
	if _, err := os.Stat(charts); err != nil {
		logf("real-world charts: %s not found, measuring the repository's subset (%s)", charts, filepath.Join(dir, "charts"))
		charts = filepath.Join(dir, "charts")
	}
	cases := b.realWorldCasesIn(dir, charts)
	if extra := b.cfg.RealWorldExtra; extra != "" {
		more := b.realWorldCasesIn(extra, filepath.Join(extra, "charts"))
		if len(more) == 0 {
			fatalf("-realworld-extra %s: no helm cases", extra)
		}
		cases = append(cases, more...)
	}
	return cases
}

// realWorldCasesIn reads the cases of dir/commands.txt, with their charts
// in charts.
func (b *bench) realWorldCasesIn(dir, charts string) []*rwCase {
	cmds, err := os.ReadFile(filepath.Join(dir, "commands.txt"))
	if err != nil {
		logf("SKIP real-world charts: %s not found (%v): only the synthetic large charts are measured", filepath.Join(dir, "commands.txt"), err)
		return nil
	}
	var cases []*rwCase
	comps := map[string]*ocmbuild.Component{}
	for _, line := range strings.Split(string(cmds), "\n") {
		name, cmd, ok := strings.Cut(line, ": helm template ")
		if !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, " > ")
		f := strings.Fields(cmd)
		chartFile := filepath.Join(charts, filepath.Base(f[1]))
		if _, err := os.Stat(chartFile); err != nil {
			logf("SKIP real-world case %s: %s is not in %s", name, filepath.Base(f[1]), charts)
			continue
		}
		c := &rwCase{Label: name + " (real)", Release: f[0], Tgz: chartFile, KubeVersion: "", NS: "default"}
		chartName := strings.TrimSuffix(filepath.Base(f[1]), ".tgz")
		c.Component = "bench.example.com/realworld/" + chartName
		var set []string
		for i := 2; i < len(f); i++ {
			switch f[i] {
			case "--namespace":
				i++
				c.NS = f[i]
				c.HelmArgs = append(c.HelmArgs, "--namespace", f[i])
			case "--kube-version":
				i++
				c.KubeVersion = f[i]
				c.HelmArgs = append(c.HelmArgs, "--kube-version", f[i])
			case "--include-crds":
				c.HelmArgs = append(c.HelmArgs, "--include-crds")
			case "-f":
				i++
				c.HelmArgs = append(c.HelmArgs, "-f", filepath.Join(dir, f[i]))
				c.ValueFiles = append(c.ValueFiles, b.appFile(filepath.Join("rw", name, fmt.Sprintf("%d-%s", len(c.ValueFiles), filepath.Base(f[i]))), mustRead(filepath.Join(dir, f[i]))))
			case "--set":
				i++
				c.HelmArgs = append(c.HelmArgs, "--set", f[i])
				set = append(set, f[i])
			case "--api-versions":
				i++
				c.APIVersions = append(c.APIVersions, f[i])
				c.HelmArgs = append(c.HelmArgs, "--api-versions", f[i])
			default:
				fatalf("%s: %s: flag %q not understood", filepath.Join(dir, "commands.txt"), name, f[i])
			}
		}
		if len(set) > 0 {
			c.ValueFiles = append(c.ValueFiles, b.appFile(filepath.Join("rw", name, "set.yaml"), setValues(set)))
		}
		if comps[chartName] == nil {
			comps[chartName] = chartComponent(c.Component, mustRead(chartFile), strings.TrimPrefix(chartName[strings.LastIndex(chartName, "-")+1:], "v"))
		}
		cases = append(cases, c)
	}
	if len(cases) == 0 {
		logf("SKIP real-world charts: no helm cases in %s", filepath.Join(dir, "commands.txt"))
		return nil
	}
	var list []*ocmbuild.Component
	for _, c := range comps {
		list = append(list, c)
	}
	b.reg.Push(b.tb, "ocm", list...)
	return cases
}

// syntheticCases builds and pushes the harness's own large charts.
func (b *bench) syntheticCases() []*rwCase {
	charts := b.dir("charts")
	mk := func(label, comp, file string, files map[string][]byte) *rwCase {
		tgz, err := ocmbuild.PackageChart(files)
		if err != nil {
			fatalf("%s: %v", label, err)
		}
		p := filepath.Join(charts, file)
		writeFiles(charts, map[string][]byte{file: tgz})
		b.reg.Push(b.tb, "ocm", chartComponent(comp, tgz, "1.0.0"))
		return &rwCase{Label: label, Component: comp, Release: "bench", NS: "bench", Tgz: p, HelmArgs: []string{"--namespace", "bench", "--include-crds"}}
	}
	return []*rwCase{
		mk("many-objects (synthetic, 100 services, 550 objects)", "bench.example.com/large/many-objects", "many-1.0.0.tgz", largeChartFiles(100)),
		mk("crds-10mb (synthetic, 20 CRDs of 0.5 MB)", "bench.example.com/large/crds", "crds-1.0.0.tgz", examples.CRDChartFiles(20, 512<<10)),
		mk("subcharts-20 (synthetic umbrella)", "bench.example.com/large/umbrella", "umbrella-1.0.0.tgz", umbrellaChartFiles(20)),
	}
}

// umbrellaChartFiles is an umbrella chart of n subcharts (packaged archives
// under charts/, as `helm dependency build` leaves them), each a small
// service chart with its own helpers and values, configured from the
// umbrella's values.
func umbrellaChartFiles(n int) map[string][]byte {
	var deps, vals strings.Builder
	f := map[string][]byte{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("svc%02d", i)
		fmt.Fprintf(&deps, "  - name: %s\n    version: 1.0.0\n", name)
		fmt.Fprintf(&vals, "%s:\n  replicas: %d\n  image: {repository: team/%s, tag: \"1.%d.0\"}\n", name, 1+i%3, name, i)
		sub := largeChartFiles(2)
		sub["Chart.yaml"] = []byte(fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 1.0.0\nappVersion: \"1.0.0\"\n", name))
		delete(sub, "crds/widgets.yaml")
		delete(sub, "values.schema.json")
		sub["templates/_helpers.tpl"] = []byte(strings.ReplaceAll(string(sub["templates/_helpers.tpl"]), `"platform.`, `"`+name+`.`))
		for k, v := range sub {
			if strings.HasPrefix(k, "templates/") {
				sub[k] = []byte(strings.ReplaceAll(string(v), `"platform.`, `"`+name+`.`))
			}
		}
		tgz, err := ocmbuild.PackageChart(sub)
		if err != nil {
			fatalf("subchart %s: %v", name, err)
		}
		f["charts/"+name+"-1.0.0.tgz"] = tgz
	}
	f["Chart.yaml"] = []byte("apiVersion: v2\nname: umbrella\nversion: 1.0.0\ndependencies:\n" + deps.String())
	f["values.yaml"] = []byte(vals.String())
	return f
}

// setValues turns --set key=value flags into a values file (the real-world
// cases set scalars on dotted paths only).
func setValues(set []string) []byte {
	root := map[string]any{}
	for _, s := range set {
		k, v, _ := strings.Cut(s, "=")
		m := root
		parts := strings.Split(k, ".")
		for _, p := range parts[:len(parts)-1] {
			if _, ok := m[p].(map[string]any); !ok {
				m[p] = map[string]any{}
			}
			m = m[p].(map[string]any)
		}
		var val any
		if err := yaml.Unmarshal([]byte(v), &val); err != nil {
			fatalf("--set %s: %v", s, err)
		}
		m[parts[len(parts)-1]] = val
	}
	out, err := yaml.Marshal(root)
	if err != nil {
		fatalf("%v", err)
	}
	return out
}

// appFile writes a file into the Application's directory and returns its
// path relative to it.
func (b *bench) appFile(rel string, data []byte) string {
	writeFiles(b.appDir, map[string][]byte{rel: data})
	return filepath.ToSlash(rel)
}

func mustRead(p string) []byte {
	data, err := os.ReadFile(p)
	if err != nil {
		fatalf("%v", err)
	}
	return data
}

// generateCase is generate for Application c.Release in namespace c.NS
// with the case's values files and capabilities.
func (b *bench) generateCase(name string, c *rwCase, cacheDir string, extraValueFiles ...string) cmdSpec {
	spec := b.generate(name, c.Release, b.repo, c.Component, "", cacheDir)
	params := []map[string]string{{"name": "component", "string": c.Component}, {"name": "version", "string": benchVer}}
	if vf := append(slices.Clone(c.ValueFiles), extraValueFiles...); len(vf) > 0 {
		params = append(params, map[string]string{"name": "value-files", "string": strings.Join(vf, ",")})
	}
	pj, _ := json.Marshal(params)
	for i, kv := range spec.Env {
		switch {
		case strings.HasPrefix(kv, "ARGOCD_APP_PARAMETERS="):
			spec.Env[i] = "ARGOCD_APP_PARAMETERS=" + string(pj)
		case strings.HasPrefix(kv, "ARGOCD_APP_NAMESPACE="):
			spec.Env[i] = "ARGOCD_APP_NAMESPACE=" + c.NS
		}
	}
	if c.KubeVersion != "" {
		spec.Env = append(spec.Env, "KUBE_VERSION="+c.KubeVersion)
	}
	if len(c.APIVersions) > 0 {
		spec.Env = append(spec.Env, "KUBE_API_VERSIONS="+strings.Join(c.APIVersions, ","))
	}
	return spec
}

// renderCase is `argocd-ocm-plugin render` (YAML, for people) of the case.
func (b *bench) renderCase(c *rwCase, cacheDir string) cmdSpec {
	args := []string{"render", "--repository", b.repo, "--component", c.Component, "--version", benchVer, "--release-name", c.Release, "--namespace", c.NS}
	if c.KubeVersion != "" {
		args = append(args, "--kube-version", c.KubeVersion)
	}
	for _, f := range c.ValueFiles {
		args = append(args, "-f", f)
	}
	if len(c.APIVersions) > 0 {
		args = append(args, "--api-versions", strings.Join(c.APIVersions, ","))
	}
	env := append(slices.Clone(b.baseEnv), "ARGOCD_OCM_CACHE_DIR="+cacheDir, "ARGOCD_OCM_PLAIN_HTTP="+b.reg.Host)
	env = append(env, extraPluginEnv...)
	return cmdSpec{Name: "render (YAML) warm", Bin: b.bins.Plugin, Args: args, Env: env, Dir: b.appDir}
}

func (b *bench) helmCase(c *rwCase) cmdSpec {
	return cmdSpec{Name: "helm template", Bin: b.bins.Helm, Args: append([]string{"template", c.Release, c.Tgz}, c.HelmArgs...), Env: b.baseEnv, Dir: b.appDir}
}

// realworld: every case's warm generate through the sidecar and as a
// process, and render (YAML), against helm template, alternated.
func (b *bench) realworld(ctx context.Context) {
	b.section("realworld")
	cases := slices.DeleteFunc(append(b.realWorldCases(), b.syntheticCases()...), func(c *rwCase) bool {
		return !strings.Contains(c.Label, b.cfg.RealWorld)
	})
	cache := b.dir("cache-warm")
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	protocol := startProtocolService(pctx, b.dir("protocol"))
	type caseResult struct {
		Label   string  `json:"label"`
		Output  string  `json:"output"`
		Helm    summary `json:"helm_template"`
		Sidecar summary `json:"generate_sidecar"`
		Process summary `json:"generate_process"`
		Render  summary `json:"render_yaml"`
		// Floor: Helm's engine executing the chart's templates alone
		// (floor.go); its CPU is the harness's.
		Floor summary `json:"templates_only_floor"`
		// Protocol: the plugin protocol's round trip alone (protocol.go).
		Protocol summary `json:"protocol_round_trip"`
		Server   float64 `json:"server_peak_rss_mib"`
		Load     float64 `json:"loadavg_1m"`
	}
	var all []caseResult
	for _, c := range cases {
		logf("chart %s: %d runs of each command, interleaved", c.Label, b.cfg.Runs)
		helm := newJob(b.helmCase(c))
		side := newJob(b.sidecar(b.generateCase("generate warm (registry)", c, cache)))
		proc := newJob(b.generateCase("generate warm (registry)", c, cache))
		render := newJob(b.renderCase(c, cache))
		floor := floorJob(c)
		proto := protocolJob(protocol, side)
		srv := side.spec.server
		srv.resetPeak()
		load := loadAvg()
		interleave(ctx, b.cfg.Runs, helm, side, proc, render, floor, proto)
		_, peak := srv.mem()
		for _, j := range []*job{side, proc, render} {
			sameOutput(c.Label, helm.s, j.s)
		}
		sameBytesMasked(c.Label, proc.s, side.s)
		c.Objects = kinds(helm.s.samples[0].Stdout)
		b.cliWall[c.Label] = helm.s.wall()
		b.sidecarWall[c.Label] = side.s.wall()
		all = append(all, caseResult{Label: c.Label, Output: c.Objects, Helm: helm.s.summary(), Sidecar: side.s.summary(), Process: proc.s.summary(),
			Render: render.s.summary(), Floor: floor.s.summary(), Protocol: proto.s.summary(), Server: round(peak), Load: load})
		what := fmt.Sprintf("%s (%s)", c.Label, strings.SplitN(c.Objects, ":", 2)[0])
		b.warmGoals(what, strings.HasSuffix(c.Label, "(real)"), helm.s, side.s, proc.s, floor.s, proto.s)
		b.wallGoal("sidecar", "G19 charts", "generate, warm cache: "+what, side.s, helm.s, "ms helm template (v4.3.2)", 0.6)
		b.wallGoal("process", "G19 charts", "generate, warm cache: "+what, proc.s, helm.s, "ms helm template (v4.3.2)", 1.0)
		rv, hv := render.s.wall(), helm.s.wall()
		b.modeGoal("process", goal{ID: "G19 render", What: "render (YAML), warm cache: " + what, Value: round(rv), Unit: "ms", Reference: round(hv), RefWhat: "ms helm template",
			Ratio: round(rv / hv), Limit: 1.2, LimitWhat: "≤ 1.2", Met: boolp(rv/hv <= 1.2), Note: minNote(render.s, helm.s)})
		pr, hr := proc.s.rss(), helm.s.rss()
		b.addGoal(goal{ID: "G19 memory", What: "process (argocd-ocm-plugin generate): peak RSS, warm: " + what, Value: round(pr), Unit: "MiB",
			Reference: round(hr), RefWhat: "MiB helm template", Ratio: round(pr / hr), Limit: 1.2, LimitWhat: "≤ 1.2", Met: boolp(pr/hr <= 1.2),
			Note: fmt.Sprintf("render (YAML) %.0f MiB; render server peak over these runs %.0f MiB (info)", render.s.rss(), peak)})
	}
	b.res.Sections["realworld"] = all
	b.apiVersions(ctx, cases, cache)
	b.checkServers("realworld")
}

// warmGoals are issue 40's figures of a chart: the sidecar (a warm
// generation through the render server) against helm template, the process
// mode and the templates-only floor, as goals on real charts (info on the
// synthetic ones).
func (b *bench) warmGoals(what string, real bool, helm, side, proc, floor, proto *series) {
	limits := map[string]float64{"helm": 0.5, "process": 0.9, "floor": 1.5}
	if !real {
		limits = nil
	}
	add := func(id, refWhat string, ref *series, limit float64, note string) {
		v, r := side.wall(), ref.wall()
		g := goal{ID: id, What: "generate, warm cache: " + what, Value: round(v), Unit: "ms", Reference: round(r), RefWhat: refWhat, Ratio: round(v / r), Note: note}
		if limit > 0 {
			g.Limit, g.LimitWhat, g.Met = limit, "≤ "+strconv.FormatFloat(limit, 'g', -1, 64), boolp(v/r <= limit)
		} else {
			g.ID = "info"
		}
		b.modeGoal("sidecar", g)
	}
	add("G40 sidecar/helm", "ms helm template (v4.3.2)", helm, limits["helm"], minNote(side, helm))
	add("G40 sidecar/process", "ms generate process", proc, limits["process"], minNote(side, proc))
	add("G40 sidecar/floor", "ms Helm engine, templates only (floor)", floor, limits["floor"],
		minNote(side, floor)+"; "+floorNote("process", proc, floor)+"; "+floorNote("helm template", helm, floor)+"; "+protocolNote(side, proto, floor))
}

// apiVersionsCount is what Argo CD passes in KUBE_API_VERSIONS on a
// cluster with many CRDs (every group/version and group/version/Kind).
const apiVersionsCount = 1100

// apiVersionList is n API versions as Argo CD lists them: group/version
// and group/version/Kind entries of made-up CRD groups.
func apiVersionList(n int) []string {
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		gv := fmt.Sprintf("crd%d.example.com/v1", i)
		out = append(out, gv)
		for k := 0; k < 3 && len(out) < n; k++ {
			out = append(out, fmt.Sprintf("%s/Kind%d", gv, k))
		}
	}
	return out
}

// apiVersions: a chart that asks .Capabilities.APIVersions.Has often (the
// first of kube-prometheus-stack, else the first case) generated with 10
// and with apiVersionsCount API versions, through the sidecar and as a
// process, alternated: the cost of a cluster with many CRDs (G37: within 5 %).
func (b *bench) apiVersions(ctx context.Context, cases []*rwCase, cache string) {
	if len(cases) == 0 {
		return
	}
	c := cases[0]
	for _, k := range cases {
		if strings.Contains(k.Label, "kube-prometheus-stack") {
			c = k
			break
		}
	}
	with := func(n int) *rwCase {
		k := *c
		k.APIVersions = append(slices.Clone(c.APIVersions), apiVersionList(n)...)
		return &k
	}
	few, many := with(10), with(apiVersionsCount)
	logf("api versions: %s with %d and %d API versions, %d runs each, interleaved", c.Label, len(few.APIVersions), len(many.APIVersions), b.cfg.Runs)
	name := func(n int) string { return fmt.Sprintf("generate warm, %d API versions", n) }
	sideFew := newJob(b.sidecar(b.generateCase(name(len(few.APIVersions)), few, cache)))
	sideMany := newJob(b.sidecar(b.generateCase(name(len(many.APIVersions)), many, cache)))
	procFew := newJob(b.generateCase(name(len(few.APIVersions)), few, cache))
	procMany := newJob(b.generateCase(name(len(many.APIVersions)), many, cache))
	interleave(ctx, b.cfg.Runs, sideFew, sideMany, procFew, procMany)
	what := fmt.Sprintf("generate, warm cache, %d API versions (KUBE_API_VERSIONS): %s", len(many.APIVersions), c.Label)
	b.wallGoal("sidecar", "G37 api versions", what, sideMany.s, sideFew.s, fmt.Sprintf("ms with %d", len(few.APIVersions)), 1.05)
	b.wallGoal("process", "G37 api versions", what, procMany.s, procFew.s, fmt.Sprintf("ms with %d", len(few.APIVersions)), 1.05)
}

// randomTestName is the random suffix Helm's randAlphaNum gives test hook
// Pods of some charts (podinfo's), in generate's JSON output.
var randomTestName = regexp.MustCompile(`("name":"[^"]*-)[a-z0-9]{5}"`)

// sameBytesMasked is sameBytes, except that in documents of helm test hooks
// random name suffixes are masked.
func sameBytesMasked(label string, proc, side *series) {
	mask := func(b []byte) string {
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.Contains(l, `"helm.sh/hook":"test`) {
				lines[i] = randomTestName.ReplaceAllString(l, "${1}XXXXX\"")
			}
		}
		return strings.Join(lines, "\n")
	}
	want := mask(proc.samples[0].Stdout)
	for _, s := range side.samples {
		if mask(s.Stdout) != want {
			fatalf("%s: %s printed %d bytes that differ from the %d bytes of %s (random test hook names masked)", label, side.Name, len(s.Stdout), len(want), proc.Name)
		}
	}
}
