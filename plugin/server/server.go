package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Handler runs one command: it writes the command's stdout and stderr and
// returns its exit code. ctx ends when the client goes away.
type Handler func(ctx context.Context, req *Request, stdout, stderr io.Writer) int

// Server answers requests on a unix socket. Its fields are read by Serve.
type Server struct {
	// Handler runs the commands. Required.
	Handler Handler
	// Parallelism bounds the commands running at once; the others wait in
	// line (within their own deadline). Default: 2 × GOMAXPROCS, which keeps
	// both cores busy while one render waits for a registry.
	Parallelism int
	// Fingerprint is the server's environment fingerprint. Default:
	// Fingerprint(os.Environ()).
	Fingerprint string
	// Log receives one line per refused request or recovered panic. Default: discard.
	Log *slog.Logger
	// DrainTimeout bounds how long Serve waits for running commands after ctx
	// ends. Default 10 s.
	DrainTimeout time.Duration
	// ReleaseMemoryAfter is how long the server must have been idle before it
	// returns freed heap to the operating system (debug.FreeOSMemory): the
	// Go runtime otherwise keeps the peak of a large render (a 100 MiB tree)
	// for minutes, counted against the sidecar's memory limit. Default 3 s;
	// negative: never.
	ReleaseMemoryAfter time.Duration

	sem      chan struct{}
	inflight sync.WaitGroup
	draining chan struct{}
	connMu   sync.Mutex
	conns    map[net.Conn]struct{}

	idleMu  sync.Mutex
	running int
	idle    *time.Timer
	// releases counts FreeOSMemory calls (tests).
	releases atomic.Int64
}

// Listen creates the socket at path: its directory is created with mode 0700
// when missing, a stale socket (nobody listening) is replaced, anything else
// at path is an error, and the socket gets mode 0600.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another server is listening", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Serve answers connections on l until ctx ends, then stops accepting,
// refuses queued requests, waits up to DrainTimeout for running ones and
// closes l.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	if s.Handler == nil {
		return errors.New("server: no handler")
	}
	p := s.Parallelism
	if p <= 0 {
		p = 2 * runtime.GOMAXPROCS(0)
	}
	s.sem = make(chan struct{}, p)
	s.draining = make(chan struct{})
	s.conns = map[net.Conn]struct{}{}
	if s.Fingerprint == "" {
		s.Fingerprint = Fingerprint(os.Environ())
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	if s.ReleaseMemoryAfter == 0 {
		s.ReleaseMemoryAfter = 3 * time.Second
	}
	stop := context.AfterFunc(ctx, func() {
		close(s.draining)
		l.Close()
	})
	defer stop()

	var tempDelay time.Duration
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return s.drain()
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// EMFILE and the like: back off as net/http does.
				tempDelay = min(max(2*tempDelay, 5*time.Millisecond), time.Second)
				time.Sleep(tempDelay)
				continue
			}
			return err
		}
		tempDelay = 0
		s.inflight.Add(1)
		go func() {
			defer s.inflight.Done()
			s.serveConn(ctx, conn)
		}()
	}
}

func (s *Server) drain() error {
	d := s.DrainTimeout
	if d <= 0 {
		d = 10 * time.Second
	}
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(d):
		s.connMu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.connMu.Unlock()
		return fmt.Errorf("server: %d s drain timeout: running commands cut off", int(d/time.Second))
	}
}

func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	s.connMu.Lock()
	s.conns[conn] = struct{}{}
	s.connMu.Unlock()
	defer func() {
		s.connMu.Lock()
		delete(s.conns, conn)
		s.connMu.Unlock()
		conn.Close()
	}()
	if err := checkPeer(conn); err != nil {
		s.Log.Warn("connection refused", "cause", err.Error())
		return
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(conn, 64<<10)
	req, err := readRequest(br)
	if err != nil {
		s.Log.Warn("bad request", "cause", err.Error())
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	refuse := func(why string) {
		s.Log.Warn("request refused", "cause", why)
		_ = writeResult(conn, header{Refused: why}, nil, nil)
	}
	switch {
	case req.Protocol != ProtocolVersion:
		refuse(fmt.Sprintf("protocol %d, server speaks %d", req.Protocol, ProtocolVersion))
		return
	case req.Fingerprint != s.Fingerprint:
		refuse("the client's environment differs from the server's")
		return
	}

	// The client closes the connection when it is killed (Argo CD's
	// deadline): that cancels the command. It sends nothing after the request,
	// so any read returning means it is gone. Shutting the server down does
	// not cancel running commands: they drain.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	go func() {
		var b [1]byte
		_, _ = br.Read(b[:])
		cancel()
	}()

	select {
	case s.sem <- struct{}{}:
	case <-s.draining:
		refuse("server shutting down")
		return
	case <-rctx.Done():
		return
	}
	defer func() { <-s.sem }()
	s.busy()
	defer s.done()

	var stdout, stderr bytes.Buffer
	code := s.run(rctx, req, &stdout, &stderr)
	if rctx.Err() != nil {
		return // the client is gone
	}
	if err := writeResult(conn, header{Exit: code}, stdout.Bytes(), stderr.Bytes()); err != nil {
		s.Log.Warn("result not delivered", "cause", err.Error())
	}
}

// busy and done count running commands; the last one to finish arms the
// idle timer that returns memory to the system.
func (s *Server) busy() {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	s.running++
	if s.idle != nil {
		s.idle.Stop()
	}
}

func (s *Server) done() {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	s.running--
	if s.running > 0 || s.ReleaseMemoryAfter < 0 {
		return
	}
	if s.idle == nil {
		s.idle = time.AfterFunc(s.ReleaseMemoryAfter, s.releaseIfIdle)
		return
	}
	s.idle.Reset(s.ReleaseMemoryAfter)
}

func (s *Server) releaseIfIdle() {
	s.idleMu.Lock()
	idle := s.running == 0
	s.idleMu.Unlock()
	if idle {
		debug.FreeOSMemory()
		s.releases.Add(1)
	}
}

// run calls the handler; a panic becomes a failed command, never a dead
// server (and never partial stdout).
func (s *Server) run(ctx context.Context, req *Request, stdout, stderr *bytes.Buffer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			s.Log.Error("panic in command", "args", strings.Join(req.Args, " "), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			stdout.Reset()
			stderr.Reset()
			app := req.Getenv(func(string) string { return "" })("ARGOCD_APP_NAME")
			fmt.Fprintf(stderr, "argocd-ocm-plugin: application %s: internal error (render server): %v\n", app, p)
			code = 1
		}
	}()
	return s.Handler(ctx, req, stdout, stderr)
}
