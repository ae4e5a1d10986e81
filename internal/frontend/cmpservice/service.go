package cmpservice

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// Runner runs one command of the plugin (generate, parameters) for a
// request: the render server (server.Server.Run).
type Runner interface {
	Run(ctx context.Context, req *server.Request) *server.Result
}

// Service answers ConfigManagementPluginService for the plugin. Its fields
// are read by Serve.
type Service struct {
	// Runner runs the commands. Required.
	Runner Runner
	// WorkDir is where Serve makes its directory of streams being unpacked,
	// one directory per stream, emptied when its request ends and kept
	// for later streams (up to Receivers of them); Serve removes its own
	// when it returns. Default: os.TempDir().
	WorkDir string
	// Limits bound each repository stream.
	Limits Limits
	// Receivers bounds the streams unpacked at once; the others wait
	// (within their deadline) before they read their stream. Default 16.
	Receivers int
	// Log receives a line per stream refused. Default: discard.
	Log *slog.Logger

	recv chan struct{}
	dirs streamDirs // under Serve's directory in WorkDir
}

// MaxMessageSize bounds one message received: the repo-server sends its
// tgz in chunks of ARGOCD_CMP_CHUNK_SIZE bytes (default 1 KiB).
const MaxMessageSize = 16 << 20

// Serve answers on l until ctx ends, then stops gracefully: running
// generations finish.
func (s *Service) Serve(ctx context.Context, l net.Listener) error {
	if s.Runner == nil {
		return fmt.Errorf("cmpservice: no runner")
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	if s.Receivers <= 0 {
		s.Receivers = 16
	}
	s.recv = make(chan struct{}, s.Receivers)
	s.Limits = s.Limits.withDefaults()
	if s.WorkDir == "" {
		s.WorkDir = os.TempDir()
	}
	// A directory of this server's own: another server sharing WorkDir
	// keeps its streams.
	if err := os.MkdirAll(s.WorkDir, 0o700); err != nil {
		return fmt.Errorf("cmpservice: work directory: %w", err)
	}
	work, err := os.MkdirTemp(s.WorkDir, "argocd-ocm-plugin-streams-")
	if err != nil {
		return fmt.Errorf("cmpservice: work directory: %w", err)
	}
	s.dirs = streamDirs{parent: work, max: s.Receivers}
	defer func() {
		s.dirs.wait()
		os.RemoveAll(work)
	}()
	g := grpc.NewServer(grpc.ForceServerCodec(codec{}), grpc.MaxRecvMsgSize(MaxMessageSize),
		grpc.ChainUnaryInterceptor(s.recoverUnary), grpc.ChainStreamInterceptor(s.recoverStream))
	g.RegisterService(&serviceDesc, s)
	stop := context.AfterFunc(ctx, func() {
		// Running generations finish (they have their deadline); a stream
		// nobody ends is cut after the drain timeout.
		t := time.AfterFunc(drainTimeout, g.Stop)
		g.GracefulStop()
		t.Stop()
	})
	defer stop()
	err = g.Serve(l)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// drainTimeout bounds how long Serve waits for running requests once its
// context ends, as the render server's drain does.
const drainTimeout = 10 * time.Second

// recoverUnary and recoverStream turn a panic into the request's error: the
// service shares its process with every other tenant's generation.
func (s *Service) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer s.recovered(info.FullMethod, &err)
	return h(ctx, req)
}

func (s *Service) recoverStream(srv any, st grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer s.recovered(info.FullMethod, &err)
	return h(srv, st)
}

func (s *Service) recovered(method string, err *error) {
	if p := recover(); p != nil {
		s.Log.Error("panic in the plugin service", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		*err = status.Error(codes.Internal, "argocd-ocm-plugin: internal error (plugin service)")
	}
}

// pluginService is what serviceDesc's HandlerType names.
type pluginService interface {
	generate(grpc.ServerStream) error
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "plugin.ConfigManagementPluginService",
	HandlerType: (*pluginService)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "CheckPluginConfiguration",
		Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			if err := dec(&empty{}); err != nil {
				return nil, err
			}
			// No discovery: the plugin runs for Applications that name it.
			// No git credentials: it reads nothing from git.
			return &pluginConfigResponse{}, nil
		},
	}},
	Streams: []grpc.StreamDesc{
		{StreamName: "GenerateManifest", ClientStreams: true, Handler: func(srv any, st grpc.ServerStream) error {
			return srv.(*Service).generate(st)
		}},
		{StreamName: "MatchRepository", ClientStreams: true, Handler: func(srv any, st grpc.ServerStream) error {
			return srv.(*Service).matchRepository(st)
		}},
		{StreamName: "GetParametersAnnouncement", ClientStreams: true, Handler: func(srv any, st grpc.ServerStream) error {
			return srv.(*Service).parameters(st)
		}},
	},
	Metadata: "cmpserver/plugin/plugin.proto",
}

// run receives a stream, runs command in the Application's directory and
// returns the command's result; err is the stream's own failure.
func (s *Service) run(st grpc.ServerStream, command string) (res *server.Result, app string, err error) {
	ctx := st.Context()
	select {
	case s.recv <- struct{}{}:
	case <-ctx.Done():
		return nil, "", status.FromContextError(ctx.Err()).Err()
	}
	dir, err := s.dirs.get()
	if err != nil {
		<-s.recv
		return nil, "", status.Errorf(codes.Internal, "argocd-ocm-plugin: render failed: no work directory for the repository stream")
	}
	// Emptied once the request has ended (its context is cancelled then):
	// the repo-server does not wait for it.
	defer s.dirs.release(dir, ctx.Done())
	md, appDir, err := receive(ctx, func(m *streamRequest) error { return st.RecvMsg(m) }, dir, s.Limits)
	<-s.recv
	if md != nil {
		app = appName(md.Env)
	}
	if err != nil {
		s.Log.Warn("repository stream refused", "application", app, "cause", err.Error())
		// No message names dir; the replacement keeps it so should one
		// (an error of the operating system) ever do.
		return nil, app, status.Error(codes.InvalidArgument, prefix(app)+strings.ReplaceAll(err.Error(), dir, ""))
	}
	req := &server.Request{Protocol: server.ProtocolVersion, Args: []string{command}, Dir: appDir}
	for _, e := range md.Env {
		// What argocd-cmp-server would set for the command; the rest of a
		// command's environment is the sidecar's.
		if server.RequestScoped(e.Name) {
			req.Env = append(req.Env, e.Name+"="+e.Value)
		}
	}
	return s.Runner.Run(ctx, req), app, nil
}

// prefix begins a message of the service: the plugin, and the Application
// when the stream named it.
func prefix(app string) string {
	if app == "" {
		return "argocd-ocm-plugin: "
	}
	return "argocd-ocm-plugin: application " + app + ": "
}

// appName is the Application's name (the metadata's appName is its
// directory's).
func appName(env []envEntry) string {
	for _, e := range env {
		if e.Name == "ARGOCD_APP_NAME" {
			return e.Value
		}
	}
	return ""
}

// failure is a command's error line as the repo-server shows it.
func failure(command, app string, res *server.Result) error {
	msg := strings.TrimSpace(string(res.Stderr))
	if msg == "" {
		msg = fmt.Sprintf("%s%s: exit status %d", prefix(app), command, res.Exit)
	}
	return status.Error(codes.Unknown, msg)
}

func (s *Service) generate(st grpc.ServerStream) error {
	res, app, err := s.run(st, "generate")
	if err != nil {
		return err
	}
	if res.Exit != 0 {
		return failure("generate", app, res)
	}
	return st.SendMsg(&manifestResponse{Manifests: documents(res.Stdout)})
}

// documents splits a generate command's output into its documents, as
// argocd-cmp-server splits it (kube.SplitYAMLToString), without parsing
// them: generate prints one JSON object per document, each after a "---"
// line, and a JSON text cannot hold a line "---". The repo-server reads each
// string with kube.SplitYAML, which takes a text starting with "{" as JSON,
// its fast path. Empty documents are dropped, as there.
func documents(out []byte) []string {
	// One copy of the output: the documents are slices of it.
	text := string(out)
	var docs []string
	start := 0 // of the current document
	flush := func(end int) {
		if d := strings.TrimSpace(text[start:end]); d != "" {
			docs = append(docs, d)
		}
	}
	for i := 0; i < len(text); {
		line, next := text[i:], len(text)
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line, next = line[:j], i+j+1
		}
		if strings.TrimRight(line, " \r") == "---" {
			flush(i)
			start = next
		}
		i = next
	}
	flush(len(text))
	return docs
}

func (s *Service) parameters(st grpc.ServerStream) error {
	res, app, err := s.run(st, "parameters")
	if err != nil {
		return err
	}
	if res.Exit != 0 {
		return failure("parameters", app, res)
	}
	var list []announcement
	if err := json.Unmarshal(res.Stdout, &list); err != nil {
		return status.Errorf(codes.Internal, "%sparameters: %v: %v", prefix(app), errdef.ErrInvalidInput, err)
	}
	return st.SendMsg(&parametersResponse{Announcements: list})
}

// matchRepository answers discovery, which the plugin does not configure
// (CheckPluginConfiguration says so, and the repo-server then never asks):
// the stream is read to its end, bounded, and dropped.
func (s *Service) matchRepository(st grpc.ServerStream) error {
	var n int64
	for {
		var m streamRequest
		if err := st.RecvMsg(&m); err != nil {
			break
		}
		if n += int64(len(m.Chunk)); n > s.Limits.StreamBytes {
			return status.Error(codes.InvalidArgument, "argocd-ocm-plugin: the repository stream is too large")
		}
	}
	return st.SendMsg(&repositoryResponse{})
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
