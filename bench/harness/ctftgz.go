package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// ctftgz (issue 19): an offline CTF tgz committed in the Application's
// directory (a chart and a large resource of incompressible bytes the
// render does not use: -ctf-tgz-size, default 38 MiB as in the issue),
// rendered warm through the sidecar and as a process against helm template
// of the chart. The tgz must be unpacked at most once per content digest
// (into the shared blob cache): the cache holds one unpacked tar after all
// runs, and the first generation (which unpacks it) is timed apart.
func (b *bench) ctftgz(ctx context.Context) {
	b.section("ctftgz")
	chart := b.chartFx[len(b.chartFx)-1] // the synthetic platform chart
	const comp = "bench.example.com/offline/platform"
	c := chartComponent(comp, chart.Data, "1.0.0", ocmbuild.Resource{Name: "images", Type: "blob",
		Data: randomBytes(b.cfg.CTFTgzSize, 3), MediaType: "application/octet-stream"})
	rel := filepath.Join("offline", "bundle.tgz")
	p := filepath.Join(b.appDir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		fatalf("%v", err)
	}
	if err := ocmbuild.WriteCTFArchive(p, true, c); err != nil {
		fatalf("ctf tgz: %v", err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		fatalf("%v", err)
	}
	cacheDir := filepath.Join(b.work, "cache-ctftgz")
	os.RemoveAll(cacheDir)
	rc := &rwCase{Label: "platform chart in a CTF tgz", Component: comp, Release: "bench", NS: "bench"}
	spec := func(name string) cmdSpec {
		s := b.generateCase(name, rc, cacheDir)
		for i, kv := range s.Env {
			if len(kv) > len("ARGOCD_ENV_REPOSITORY=") && kv[:len("ARGOCD_ENV_REPOSITORY=")] == "ARGOCD_ENV_REPOSITORY=" {
				s.Env[i] = "ARGOCD_ENV_REPOSITORY=" + rel
			}
		}
		return s
	}
	// The first generation of the sidecar unpacks the tgz; every later one
	// (sidecar or process, same cache directory) must not.
	first := runProc(ctx, b.sidecar(spec("first generate, CTF tgz")))
	mustOK(cmdSpec{Name: "first generate, CTF tgz"}, first)
	helm := newJob(b.helmTemplate(chart.Tgz))
	side := newJob(b.sidecar(spec("generate warm, CTF tgz")))
	proc := newJob(spec("generate warm, CTF tgz"))
	interleave(ctx, b.cfg.Runs, helm, side, proc)
	sameOutput("ctf tgz", helm.s, side.s)
	sameBytes("ctf tgz", proc.s, side.s)
	tars, _ := filepath.Glob(filepath.Join(cacheDir, "derived", "ctf-tar", "sha256", "*"))
	what := fmt.Sprintf("%s (%.0f MiB tgz in the Application's directory)", chart.Label, float64(fi.Size())/(1<<20))
	b.modeGoal("sidecar", goal{ID: "G19 ctf tgz", What: "unpacked tars in the cache after " + fmt.Sprint(2*b.cfg.Runs+3) + " generations of " + what, Value: float64(len(tars)),
		Unit: "tars", LimitWhat: "1 (once per content digest)", Met: boolp(len(tars) == 1),
		Note: fmt.Sprintf("first generation (unpacks) %.0f ms wall", ms(first.Wall))})
	b.wallGoal("sidecar", "G19 ctf tgz", "generate, warm, offline CTF tgz: "+what, side.s, helm.s, "ms helm template", 1.0)
	b.wallGoal("process", "G19 ctf tgz", "generate, warm, offline CTF tgz: "+what, proc.s, helm.s, "ms helm template", 1.15)
	b.res.Sections["ctftgz"] = map[string]any{"tgz_bytes": fi.Size(), "first_sidecar_ms": round(ms(first.Wall)), "helm_template": helm.s.summary(),
		"sidecar": side.s.summary(), "process": proc.s.summary(), "unpacked_tars": len(tars)}
	b.checkServers("ctftgz")
}
