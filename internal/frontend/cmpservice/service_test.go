package cmpservice

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// recorder is a Runner that keeps what it was asked and what it found in
// the request's directory.
type recorder struct {
	mu    sync.Mutex
	reqs  []*server.Request
	files []string
	res   *server.Result
}

func (r *recorder) Run(_ context.Context, req *server.Request) *server.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	_ = filepath.WalkDir(req.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(req.Dir, p)
			r.files = append(r.files, rel)
		}
		return nil
	})
	return r.res
}

// startService serves r; settle waits until every stream directory
// released has been emptied.
func startService(t testing.TB, r Runner) (c *Client, work string, settle func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "cmps") // short: sun_path is ~108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "p.sock")
	l, err := server.Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	work = filepath.Join(dir, "streams")
	svc := &Service{Runner: r, WorkDir: work}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Serve(ctx, l) }()
	c, err = Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return c, work, svc.dirs.wait
}

// A generation gets the Application's files and its request-scoped
// variables, never a sidecar setting from the stream; its directory is
// emptied once the answer is sent; the manifests come back as the command
// printed them.
func TestGenerateHandsTheApplicationToTheRunner(t *testing.T) {
	r := &recorder{res: &server.Result{Stdout: []byte("---\n{\"a\":1}\n---\n{\"b\":2}\n")}}
	c, work, settle := startService(t, r)
	app := t.TempDir()
	if err := os.WriteFile(filepath.Join(app, "values.yaml"), []byte("x: 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"ARGOCD_APP_NAME=shop", "ARGOCD_ENV_COMPONENT=c", "PARAM_X=1", "KUBE_VERSION=1.33", "ARGOCD_OCM_CACHE_DIR=/etc", "DOCKER_CONFIG=/tmp/x", "PATH=/x"}
	ms, err := c.Generate(context.Background(), app, env)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ms, []string{`{"a":1}`, `{"b":2}`}) {
		t.Fatalf("manifests %q", ms)
	}
	req := r.reqs[0]
	if !slices.Equal(req.Args, []string{"generate"}) || !slices.Equal(r.files, []string{"values.yaml"}) {
		t.Fatalf("args %q, files %q", req.Args, r.files)
	}
	if want := []string{"ARGOCD_APP_NAME=shop", "ARGOCD_ENV_COMPONENT=c", "PARAM_X=1", "KUBE_VERSION=1.33"}; !slices.Equal(req.Env, want) {
		t.Fatalf("env %q, want %q", req.Env, want)
	}
	settle()
	if left, _ := filepath.Glob(filepath.Join(work, "*", "app-*", "*")); len(left) != 0 {
		t.Fatalf("stream files left behind: %v", left)
	}
}

// Stream directories are reused, and a stream sees its own files only:
// nothing another one unpacked (files, directories, links) is left.
func TestStreamDirectoriesReusedEmpty(t *testing.T) {
	r := &recorder{res: &server.Result{}}
	c, work, settle := startService(t, r)
	first := t.TempDir()
	if err := os.MkdirAll(filepath.Join(first, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"values.yaml": "x: 1", "sub/deep/secret.yaml": "token: a"} {
		if err := os.WriteFile(filepath.Join(first, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub", filepath.Join(first, "link")); err != nil {
		t.Fatal(err)
	}
	second := t.TempDir()
	if err := os.WriteFile(filepath.Join(second, "other.yaml"), []byte("y: 2"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{first, second} {
		if _, err := c.Generate(context.Background(), dir, []string{"ARGOCD_APP_NAME=shop"}); err != nil {
			t.Fatal(err)
		}
		settle() // the first's directory is back for the second
	}
	if r.reqs[0].Dir != r.reqs[1].Dir {
		t.Fatalf("the second stream got a new directory %s, not the first's %s", r.reqs[1].Dir, r.reqs[0].Dir)
	}
	if want := []string{"link", "sub/deep/secret.yaml", "values.yaml", "other.yaml"}; !slices.Equal(r.files, want) {
		t.Fatalf("files seen %q, want %q", r.files, want)
	}
	if dirs, _ := filepath.Glob(filepath.Join(work, "*", "app-*")); len(dirs) != 1 {
		t.Fatalf("stream directories %v, want one kept", dirs)
	}
}

// A failed command is the gRPC error Argo CD shows: the plugin's one line;
// a command that prints nothing gives no manifests (not an empty one).
func TestGenerateFailureAndEmptyOutput(t *testing.T) {
	r := &recorder{res: &server.Result{Exit: 1, Stderr: []byte("argocd-ocm-plugin: application shop: invalid input: bad\n")}}
	c, _, _ := startService(t, r)
	app := t.TempDir()
	_, err := c.Generate(context.Background(), app, []string{"ARGOCD_APP_NAME=shop"})
	if s := status.Convert(err); s.Code() != codes.Unknown || s.Message() != "argocd-ocm-plugin: application shop: invalid input: bad" {
		t.Fatalf("error %v", err)
	}
	r.res = &server.Result{Stdout: []byte("\n")}
	ms, err := c.Generate(context.Background(), app, nil)
	if err != nil || len(ms) != 0 {
		t.Fatalf("manifests %q, %v", ms, err)
	}
}

// A refused stream names the Application and the limit, in one line
// without the sidecar's paths, the command never runs, and what it
// unpacked is removed.
func TestRefusedStreamNeverRuns(t *testing.T) {
	r := &recorder{res: &server.Result{}}
	c, work, settle := startService(t, r)
	app := t.TempDir()
	for i := range 3 {
		d := filepath.Join(app, strings.Repeat("d/", 70), string(rune('a'+i)))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Generate(context.Background(), app, []string{"ARGOCD_APP_NAME=shop"})
	msg := status.Convert(err).Message()
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(msg, "application shop: limit exceeded") ||
		strings.Contains(msg, work) || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
		t.Fatalf("error %v", err)
	}
	if len(r.reqs) != 0 {
		t.Fatal("the command ran")
	}
	settle()
	if left, _ := filepath.Glob(filepath.Join(work, "*", "app-*", "*")); len(left) != 0 {
		t.Fatalf("what the refused stream unpacked is left: %v", left)
	}
}

// The answers argocd-cmp-server gives for plugin.yaml: no discovery, no git
// credentials; a repository is never claimed.
func TestDiscoveryAnswers(t *testing.T) {
	c, _, _ := startService(t, &recorder{})
	var cfg pluginConfigResponse
	if err := c.conn.Invoke(context.Background(), "/plugin.ConfigManagementPluginService/CheckPluginConfiguration", &empty{}, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg != (pluginConfigResponse{}) {
		t.Fatalf("%+v", cfg)
	}
	var match repositoryResponse
	if err := c.stream(context.Background(), "MatchRepository", t.TempDir(), nil, &match); err != nil {
		t.Fatal(err)
	}
	if match != (repositoryResponse{}) {
		t.Fatalf("%+v", match)
	}
	err := c.conn.Invoke(context.Background(), "/plugin.ConfigManagementPluginService/Unknown", &empty{}, &empty{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown method: %v", err)
	}
}

// The announcement goes back as repository.ParameterAnnouncement messages:
// every field, maps included, survives the encoding.
func TestParametersAnnouncement(t *testing.T) {
	out := `[{"name":"component","title":"Component","tooltip":"t","required":true,"itemType":"string","collectionType":"string","string":"c"},` +
		`{"name":"values","collectionType":"map","map":{"b":"2","a":"","":"x"}},{"name":"files","collectionType":"array","array":["x","","y"]}]`
	c, _, _ := startService(t, &recorder{res: &server.Result{Stdout: []byte(out)}})
	got, err := c.ParametersJSON(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"component","title":"Component","tooltip":"t","required":true,"itemType":"string","collectionType":"string","string":"c"},` +
		`{"name":"values","collectionType":"map","map":{"":"x","a":"","b":"2"}},{"name":"files","collectionType":"array","array":["x","","y"]}]`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// panicky is a Runner that panics: the service answers with an error and
// keeps serving.
type panicky struct{}

func (panicky) Run(context.Context, *server.Request) *server.Result { panic("boom") }

func TestPanicIsTheRequestsError(t *testing.T) {
	c, _, _ := startService(t, panicky{})
	for range 2 {
		_, err := c.Generate(context.Background(), t.TempDir(), nil)
		if status.Code(err) != codes.Internal || strings.Contains(err.Error(), "boom") {
			t.Fatalf("error %v", err)
		}
	}
}

// The documents are split as argocd-cmp-server splits them, without
// parsing: at "---" lines only, trimmed, empty ones dropped.
func TestDocuments(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want []string
	}{
		{"", nil},
		{"\n---\n", nil},
		{"---\n{\"a\":1}\n---\n{\"b\":\"---\"}\n", []string{`{"a":1}`, `{"b":"---"}`}},
		{"a: 1\n---\n---\nb: |\n  ---\n  x\n--- \r\nc: 3", []string{"a: 1", "b: |\n  ---\n  x", "c: 3"}},
		{"---x: 1\n----\n", []string{"---x: 1\n----"}},
	} {
		if got := documents([]byte(tc.out)); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.out, got, tc.want)
		}
	}
}
