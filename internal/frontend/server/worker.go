package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// WorkerFD is the file descriptor of a worker's connection to its
// supervisor (the first of exec.Cmd.ExtraFiles).
const WorkerFD = 3

// ServeWorker is a worker process's loop: it announces itself on conn (by
// then the process is past package initialisation), then runs the requests
// the supervisor sends, one at a time, each within its Deadline, until conn
// closes. It acknowledges each job as soon as it has read it, before it runs
// it (header.Accepted), then sends the result. The supervisor enforces
// deadlines and memory limits by killing the process; the context deadline
// lets cooperative code fail first, with an error that names what it was
// doing.
//
// Freed memory is returned to the system after a generation that left the
// worker's memory well above what it keeps (see releaseAfter), so that the
// supervisor's view of the worker's memory (resident pages) stays close to
// what it uses.
func ServeWorker(ctx context.Context, conn io.ReadWriter, h Handler, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Package initialisation leaves garbage (Helm, Kubernetes schemes, JSON
	// schemas): returned before the first generation, a warm worker holds
	// only what it keeps.
	debug.FreeOSMemory()
	var heap runtimeHeap
	kept := heap.read()
	if err := writeHeader(conn, header{Ready: os.Getpid()}); err != nil {
		return err
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	// One writer for every result: 64 KiB of garbage less per generation.
	bw := bufio.NewWriterSize(conn, 64<<10)
	gc := newGCSetting()
	for {
		req, job, err := readJob(br)
		if errors.Is(err, io.EOF) {
			return nil // the supervisor closed the connection: retire
		}
		if err != nil {
			return err
		}
		// Taken: before anything of the generation runs, so that a
		// supervisor whose connection ends without this knows the
		// generation did not run here and may give it to another worker
		// (see Pool.Run).
		if err := writeHeader(conn, header{Accepted: true}); err != nil {
			return err
		}
		setProcs(job.Procs)
		gc.set(job.GC)
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if !req.Deadline.IsZero() {
			rctx, cancel = context.WithDeadline(ctx, req.Deadline)
		}
		var stdout, stderr bytes.Buffer
		code := runHandler(rctx, h, req, &stdout, &stderr, log)
		cancel()
		if err := writeResultBuffered(bw, header{Exit: code}, stdout.Bytes(), stderr.Bytes()); err != nil {
			return err
		}
		stdout, stderr = bytes.Buffer{}, bytes.Buffer{}
		if releaseAfter(heap.read(), kept) {
			debug.FreeOSMemory()
			kept = heap.read()
		}
	}
}

// releaseAfter reports whether a worker whose memory (mapped, not
// returned) is now should return its free memory, kept being that memory
// right after it last did: when it exceeds kept by 64 MiB, or by kept
// itself when that is larger. Returning memory is a full collection, and
// the next generation faults the pages back in: against a fixed bound, a
// worker that keeps more than it (the chart and CRD caches after an
// operator chart) paid both after every generation, ~30 ms of CPU for a
// 5 ms one. Relative to what it keeps, it pays them about as often as the
// collector runs anyway (GOGC=100 lets the heap double), and a large
// generation's garbage still goes back at once.
func releaseAfter(now, kept uint64) bool {
	return now > kept+max(releaseSlack, kept)
}

// releaseSlack is the least growth above what a worker keeps after which
// it returns memory.
const releaseSlack = 64 << 20

// setProcs gives the worker n Ps for the next generation (n ≤ 0: as it
// is). The supervisor decides: all cores for a generation that renders
// alone, so that the parallel parts of a render (CRD decoding beside Helm,
// decoding and encoding manifests) use them; one when the other workers
// keep the cores busy, so that idle Ps and a garbage collector per core do
// not compete with them. Changing it stops the world for a few
// microseconds, between generations.
func setProcs(n int) {
	if n > 0 && n != runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n)
	}
}

// gcSetting switches a worker's GOGC between generations: the
// supervisor's value for one (Pool.GCAlone), else the worker's own.
type gcSetting struct{ own, now int }

func newGCSetting() *gcSetting {
	own := debug.SetGCPercent(100)
	debug.SetGCPercent(own)
	return &gcSetting{own: own, now: own}
}

func (g *gcSetting) set(n int) {
	if n <= 0 {
		n = g.own
	}
	if n != g.now {
		debug.SetGCPercent(n)
		g.now = n
	}
}

// runHandler calls h; a panic becomes a failed command, never a dead
// server (and never partial stdout).
func runHandler(ctx context.Context, h Handler, req *Request, stdout, stderr *bytes.Buffer, log *slog.Logger) (code int) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("panic in command", "args", strings.Join(req.Args, " "), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			stdout.Reset()
			stderr.Reset()
			app := req.Getenv(func(string) string { return "" })("ARGOCD_APP_NAME")
			fmt.Fprintf(stderr, "argocd-ocm-plugin: application %s: internal error (render server): %v\n", app, p)
			code = 1
		}
	}()
	return h(ctx, req, stdout, stderr)
}
