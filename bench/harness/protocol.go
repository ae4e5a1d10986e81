package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/cmpservice"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// The plugin protocol's own cost (issue 40): what a sidecar request costs
// before anything renders. A plugin service in the harness's process, whose
// runner answers at once with the manifests the sidecar last printed for the
// case, gets the case's request exactly as runService sends it (a connection,
// the Application's directory packed and streamed, unpacked by the service,
// the manifests back). It runs in the case's alternated rounds; its median
// is the part of the sidecar's wall no renderer behind Argo CD's protocol
// skips, which the templates-only floor leaves out. In this process, client
// and service share one runtime: a lower bound of the two processes'
// (repo-server, sidecar) round trip.

// protocolService is the in-process plugin service; answer is what its
// runner returns.
type protocolService struct {
	socket string
	answer atomic.Pointer[[]byte]
}

func (p *protocolService) Run(context.Context, *server.Request) *server.Result {
	out := p.answer.Load()
	if out == nil {
		return &server.Result{Exit: 1, Stderr: []byte("bench: no manifests to answer with yet\n")}
	}
	return &server.Result{Stdout: *out}
}

// startProtocolService serves the in-process plugin service under dir until
// ctx ends.
func startProtocolService(ctx context.Context, dir string) *protocolService {
	p := &protocolService{socket: filepath.Join(dir, "p.sock")}
	l, err := server.Listen(p.socket)
	if err != nil {
		fatalf("protocol service: %v", err)
	}
	svc := &cmpservice.Service{Runner: p, WorkDir: filepath.Join(dir, "streams")}
	go func() {
		if err := svc.Serve(ctx, l); err != nil {
			fmt.Fprintf(os.Stderr, "bench: protocol service: %v\n", err)
		}
	}()
	return p
}

// protocolJob times side's request against p, which answers with the
// manifests side printed last (side's after hook records them).
func protocolJob(p *protocolService, side *job) *job {
	prev := side.after
	side.after = func(x sample) {
		out := x.Stdout
		p.answer.Store(&out)
		if prev != nil {
			prev(x)
		}
	}
	spec := side.spec
	j := &job{spec: cmdSpec{Name: "plugin protocol round trip (runner answering at once)"}}
	j.s = &series{Name: j.spec.Name}
	j.fn = func(ctx context.Context) sample {
		t0 := time.Now()
		cl, err := cmpservice.Dial(p.socket)
		var ms []string
		if err == nil {
			ms, err = cl.Generate(ctx, spec.Dir, spec.Env)
			cl.Close()
		}
		wall := time.Since(t0)
		if err != nil || len(ms) == 0 {
			fatalf("protocol round trip: %d manifests, %v", len(ms), err)
		}
		return sample{Wall: wall}
	}
	return j
}

// protocolNote says how much of the sidecar's wall the protocol is.
func protocolNote(side, proto, floor *series) string {
	rest := side.wall() - proto.wall()
	return fmt.Sprintf("plugin protocol round trip (in-process service answering at once with these manifests) %.2f ms; sidecar − round trip = %.2f ms = %.2f × floor",
		proto.wall(), rest, rest/floor.wall())
}
