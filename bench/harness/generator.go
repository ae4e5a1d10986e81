package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// generatorVersions is how many versions of one component the generator
// section lists (issue 16: 200).
const generatorVersions = 200

// generator: the ApplicationSet plugin generator as installed (its own
// `argocd-ocm-plugin generator` process, over HTTP) listing every version
// of a component with 200 of them, warm (descriptors cached, the tag list
// read every time: --list-ttl=0), side by side with the plugin's own warm
// render of one of them (sidecar mode).
func (b *bench) generator(ctx context.Context) {
	b.section("generator")
	const comp = "example.com/bench/generated"
	b.pushGeneratorVersions(comp)
	token := "bench-generator-token-0123456789"
	url, stop := b.startGenerator(ctx, token)
	defer stop()
	body := []byte(`{"applicationSetName":"bench","input":{"parameters":{"repository":"` + b.repo + `","component":"` + comp + `","latest":0}}}`)
	post := func() (time.Duration, int) { return b.postGenerator(ctx, url, token, body) }
	cold, coldReqs := post()
	warm := &series{Name: "generator warm, 200 versions"}
	maxReqs := 0
	// The plugin's own warm render of one of the versions, interleaved.
	render := newJob(b.inMode("sidecar", b.generate("generate warm (registry)", "bench", b.repo, comp, "", b.dir("generator", "render-cache"))))
	render.run(ctx)
	for i := 0; i < b.cfg.Runs; i++ {
		d, n := post()
		warm.add(sample{Wall: d})
		maxReqs = max(maxReqs, n)
		render.s.add(render.run(ctx))
	}
	w, r := warm.wall(), render.s.wall()
	b.addGoal(goal{ID: "G16 generator", What: fmt.Sprintf("warm generator request, %d versions of one component", generatorVersions),
		Value: round(w), Unit: "ms", Reference: round(r), RefWhat: "ms warm sidecar generate of one of them", Ratio: round(w / r),
		Limit: 100, LimitWhat: "≤ 100 ms", Met: boolp(w <= 100)})
	b.addGoal(goal{ID: "G16 generator", What: "registry requests of a warm generator request (at most)", Value: float64(maxReqs), Unit: "requests",
		Limit: 1, LimitWhat: "≤ 1 (the tag list)", Met: boolp(maxReqs <= 1)})
	b.addGoal(goal{ID: "info", What: fmt.Sprintf("cold generator request, %d versions (%d registry requests)", generatorVersions, coldReqs),
		Value: round(ms(cold)), Unit: "ms"})
	b.res.Sections["generator"] = map[string]any{
		"versions": generatorVersions, "cold_ms": round(ms(cold)), "cold_registry_requests": coldReqs,
		"warm": warm.summary(), "warm_max_registry_requests": maxReqs, "render_warm_sidecar": render.s.summary(),
	}
	b.checkServers("generator")
}

// pushGeneratorVersions pushes generatorVersions versions of the demo
// podinfo component as comp.
func (b *bench) pushGeneratorVersions(comp string) {
	podinfo, _ := b.demoComponents()
	var comps []*ocmbuild.Component
	for i := 0; i < generatorVersions; i++ {
		c := *podinfo
		c.Name, c.Version = comp, fmt.Sprintf("1.%d.0", i) // 1.0.0 is benchVer, what generate renders
		comps = append(comps, &c)
	}
	t0 := time.Now()
	b.reg.Push(b.tb, "ocm", comps...)
	logf("pushed %d versions of %s in %s", generatorVersions, comp, time.Since(t0).Round(time.Millisecond))
}

// startGenerator starts `argocd-ocm-plugin generator` on a free loopback
// port with token and waits until it is healthy; it returns its URL and a
// function that stops it.
func (b *bench) startGenerator(ctx context.Context, token string) (url string, stop func()) {
	tokenFile := filepath.Join(b.dir("generator"), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		fatalf("%v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.CommandContext(ctx, b.bins.Plugin, "generator", "--listen", addr, "--token-file", tokenFile, "--list-ttl=0")
	cmd.Env = append(slices.Clone(b.baseEnv), "ARGOCD_OCM_CACHE_DIR="+b.dir("generator", "cache"), "ARGOCD_OCM_PLAIN_HTTP="+b.reg.Host)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		fatalf("generator: %v", err)
	}
	stop = func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }
	url = "http://" + addr
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			fatalf("generator did not start: %s", stderr.String())
		}
	}
	return url, stop
}

// postGenerator sends one getparams request to the generator at url and
// checks that it lists every version; it returns the request's wall time
// and the registry requests it caused.
func (b *bench) postGenerator(ctx context.Context, url, token string, body []byte) (time.Duration, int) {
	b.reg.Reset()
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/v1/getparams.execute", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fatalf("generator: %v", err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != 200 || bytes.Count(out, []byte(`"version":`)) != generatorVersions {
		fatalf("generator: %d %.300s", resp.StatusCode, out)
	}
	return d, len(b.settle())
}
