// Command profrender renders one component version the way the plugin's
// generate command does (a registry source with the blob cache, the
// pipeline, YAML on stdout) in a fresh process, under the CPU profiler and
// optionally with a heap profile at the end: what one generation costs,
// lazy initialisation included, which in-process loops amortise away.
//
//	go build -o bin/profrender ./bench/profrender
//	profrender -repository DIR|HOST/PATH -component C -version V [-path P] \
//	    -cpuprofile cpu.pprof [-memprofile heap.pprof] [-plain-http HOST] [-n 1] [-server] [-json] > out.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

func main() {
	var req argocdocm.Request
	var cpu, mem, plain string
	n := flag.Int("n", 1, "renders (each with a new registry client, as a generate process)")
	asServer := flag.Bool("server", false, "keep what the render server keeps between renders (decoded CRDs, unpacked CTF archives)")
	jsonOut := flag.Bool("json", false, "encode as generate does (JSON documents), not as render (YAML)")
	flag.StringVar(&req.Repository, "repository", "", "CTF path or registry")
	flag.StringVar(&req.Component, "component", "", "component")
	flag.StringVar(&req.Version, "version", "", "version")
	flag.StringVar(&req.Path, "path", "", "entry path in a directory resource")
	flag.StringVar(&req.ReleaseName, "release-name", "bench", "release name")
	flag.StringVar(&req.Namespace, "namespace", "bench", "namespace")
	flag.StringVar(&cpu, "cpuprofile", "", "CPU profile file")
	flag.StringVar(&mem, "memprofile", "", "heap profile file (in-use and allocated, at the end)")
	flag.StringVar(&plain, "plain-http", "", "registry host allowed over plain HTTP")
	flag.Parse()
	req.Application = "bench"
	if cpu != "" {
		f, err := os.Create(cpu)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	var out *manifests.Stream // what generate writes (commands.go renderAndPrint)
	var plainHTTP []argocdocm.EngineOption
	if plain != "" {
		plainHTTP = append(plainHTTP, argocdocm.WithPlainHTTP(plain))
	}
	// -server: one engine that shares what a render-server worker keeps;
	// else an engine per render, as a generate process has.
	newEngine := func() *argocdocm.Engine {
		opts := plainHTTP
		if *asServer {
			opts = append(opts, argocdocm.WithSharing(0))
		}
		return argocdocm.NewEngine(opts...)
	}
	engine := newEngine()
	for i := 0; i < *n; i++ {
		if !*asServer && i > 0 {
			engine = newEngine()
		}
		r, err := engine.Renderer(argocdocm.Generation{Logger: slog.Default(), Notes: os.Stderr})
		check(err)
		res, err := r.Render(context.Background(), req)
		check(err)
		out, err = manifests.EncodeStream(res.Objects, *jsonOut)
		check(err)
	}
	if mem != "" {
		runtime.GC()
		f, err := os.Create(mem)
		check(err)
		check(pprof.Lookup("allocs").WriteTo(f, 0))
		f.Close()
	}
	_, err := out.WriteTo(os.Stdout)
	check(err)
}

func check(err error) {
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "profrender:", err)
		os.Exit(1)
	}
}
