package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/server"
)

// The test binary is not the plugin: workers are the test binary running
// TestCLIHelperProcess as serve-worker.
func init() {
	workerArgv = func() ([]string, []string, error) {
		return []string{os.Args[0], "-test.run=^TestCLIHelperProcess$"}, []string{cliHelperEnv + "=" + workerCommand}, nil
	}
}

// startServer serves requestHandler in-process on a fresh socket.
func startServer(t *testing.T) (socket, fingerprint string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "srv") // short: sun_path is ~108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket = filepath.Join(dir, "r.sock")
	l, err := server.Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	fingerprint = "test"
	srv := &server.Server{Handler: requestHandler(newProcess()), Fingerprint: fingerprint}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return socket, fingerprint
}

func viaServer(t *testing.T, socket, fingerprint, dir string, args []string, env map[string]string) *server.Result {
	t.Helper()
	req := &server.Request{Protocol: server.ProtocolVersion, Args: args, Dir: dir, Fingerprint: fingerprint}
	for k, v := range env {
		req.Env = append(req.Env, k+"="+v)
	}
	res, err := server.Do(context.Background(), socket, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// appDir is an Application's directory as argocd-cmp-server unpacks it: a CTF,
// a values file, a platform config and a deployment definition, all named
// relative to it.
func appDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, demoRepo, filepath.Join(dir, "ctf"))
	writeTestFile(t, filepath.Join(dir, "values", "prod.yaml"), "replicaCount: 4\n")
	return dir
}

// The server's result equals that of a generate process run in the
// Application's directory, for successes and failures alike, and relative
// names resolve against the request's directory, not the server's.
func TestServerMatchesProcess(t *testing.T) {
	socket, fp := startServer(t)
	dir := appDir(t)
	base := map[string]string{"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_NAMESPACE": "shop-ns", "ARGOCD_ENV_REPOSITORY": "ctf",
		"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"}
	with := func(kv ...string) map[string]string { return overlay(base, kv...) }
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		ok   bool
	}{
		{"generate", []string{"generate"}, base, true},
		{"value file", []string{"generate"}, with("ARGOCD_ENV_VALUE_FILES", "values/prod.yaml"), true},
		{"constraint", []string{"generate"}, with("ARGOCD_ENV_VERSION", "~1.0"), true},
		{"parameters", []string{"parameters"}, base, true},
		{"missing value file", []string{"generate"}, with("ARGOCD_ENV_VALUE_FILES", "values/none.yaml"), false},
		{"escaping value file", []string{"generate"}, with("ARGOCD_ENV_VALUE_FILES", "../values/prod.yaml"), false},
		{"unknown version", []string{"generate"}, with("ARGOCD_ENV_VERSION", "9.9.9"), false},
		{"kustomization", []string{"generate"}, with("ARGOCD_ENV_COMPONENT", "example.com/demo/podinfo-extras"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			t.Chdir(dir)
			code := run(tc.args, &stdout, &stderr, env(tc.env))
			t.Chdir(t.TempDir()) // the server must not depend on the working directory
			res := viaServer(t, socket, fp, dir, tc.args, tc.env)
			if (code == 0) != tc.ok {
				t.Fatalf("process: exit %d: %s", code, stderr.String())
			}
			if res.Exit != code || !bytes.Equal(res.Stdout, stdout.Bytes()) || string(res.Stderr) != stderr.String() {
				t.Fatalf("server and process differ:\nserver exit %d, stderr %q, %d bytes\nprocess exit %d, stderr %q, %d bytes",
					res.Exit, res.Stderr, len(res.Stdout), code, stderr.String(), stdout.Len())
			}
			if !tc.ok && len(res.Stdout) != 0 {
				t.Fatalf("failure with stdout: %q", res.Stdout)
			}
		})
	}
}

// Requests never see each other's variables: 24 Applications at once, each
// rendered with its own name and values.
func TestServerIsolatesConcurrentRequests(t *testing.T) {
	socket, fp := startServer(t)
	dir := appDir(t)
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			app := fmt.Sprintf("tenant%02d", i)
			res := viaServer(t, socket, fp, dir, []string{"generate"}, map[string]string{
				"ARGOCD_APP_NAME": app, "ARGOCD_APP_NAMESPACE": "ns-" + app, "ARGOCD_ENV_REPOSITORY": "ctf",
				"ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0",
				"ARGOCD_ENV_VALUES": fmt.Sprintf("replicaCount: %d", 100+i),
			})
			out, err := generatedYAML(res.Stdout)
			switch {
			case res.Exit == 0 && err != nil:
				errs <- fmt.Errorf("%s: %v", app, err)
			case res.Exit != 0:
				errs <- fmt.Errorf("%s: exit %d: %s", app, res.Exit, res.Stderr)
			case !strings.Contains(out, "name: "+app+"-podinfo") || !strings.Contains(out, fmt.Sprintf("replicas: %d\n", 100+i)):
				errs <- fmt.Errorf("%s: output lacks its own name or replicas:\n%s", app, out)
			case strings.Count(out, "tenant") != strings.Count(out, app):
				errs <- fmt.Errorf("%s: output names another Application:\n%s", app, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The server runs generate and parameters only: it is not a remote shell for
// render's flags, verify or itself.
func TestServerRefusesOtherCommands(t *testing.T) {
	socket, fp := startServer(t)
	for _, args := range [][]string{{"render", "--repository", demoRepo}, {"serve"}, {"verify"}, {}} {
		res := viaServer(t, socket, fp, "/", args, map[string]string{"ARGOCD_APP_NAME": "shop"})
		if res.Exit == 0 || len(res.Stdout) != 0 || !strings.Contains(string(res.Stderr), "generate and parameters only") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, res.Exit, res.Stdout, res.Stderr)
		}
	}
	res := viaServer(t, socket, fp, "relative/dir", []string{"generate"}, nil)
	if res.Exit == 0 || !strings.Contains(string(res.Stderr), "not absolute") {
		t.Errorf("relative directory: exit %d, stderr %q", res.Exit, res.Stderr)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// serve -- COMMAND: the command sees the socket and a listening server, its
// exit status is serve's result, and the socket is gone afterwards.
func TestServeSupervisesCommand(t *testing.T) {
	dir, err := os.MkdirTemp("", "sup")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "r.sock")
	var log bytes.Buffer
	err = serve(context.Background(), serveOptions{socket: socket, command: []string{"/bin/sh", "-c", `test "$ARGOCD_OCM_SERVER_SOCKET" = "` + socket + `" && test -S "$ARGOCD_OCM_SERVER_SOCKET" && exit 3`}}, &log, env(nil))
	if err == nil || !strings.Contains(err.Error(), "exited with status 3") {
		t.Fatalf("serve: %v (log: %s)", err, log.String())
	}
	if _, err := os.Lstat(socket); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	if err := serve(context.Background(), serveOptions{socket: socket, command: []string{"/bin/true"}}, &log, env(nil)); err != nil {
		t.Errorf("a command exiting 0: %v", err)
	}
	err = serve(context.Background(), serveOptions{socket: socket, command: []string{"/bin/true"}}, &log, env(map[string]string{"ARGOCD_OCM_TAG_TTL": "soon"}))
	if err == nil || !strings.Contains(err.Error(), "ARGOCD_OCM_TAG_TTL") {
		t.Errorf("a bad ARGOCD_OCM_TAG_TTL: %v", err)
	}
}

// The workers' runtime settings: every core (the pool gives each
// generation its share, not GOMAXPROCS=1 in the environment), GOGC 200 for
// a generation alone (the pool's GCAlone) and GOMEMLIMIT at 80 % of the
// worker's limit, unless the sidecar sets them.
func TestWorkerEnvironment(t *testing.T) {
	envOf := func(t *testing.T) (map[string]string, int) {
		t.Helper()
		s, err := readServeSettings(func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		s.maxMemory = 500 << 20
		p, err := s.pool(nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, kv := range p.Command().Env {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v // the last one wins, as for a process
		}
		return env, p.GCAlone
	}
	t.Run("defaults", func(t *testing.T) {
		t.Setenv("GOGC", "")
		os.Unsetenv("GOGC")
		t.Setenv("GOMEMLIMIT", "")
		os.Unsetenv("GOMEMLIMIT")
		t.Setenv("GOMAXPROCS", "")
		os.Unsetenv("GOMAXPROCS")
		env, gcAlone := envOf(t)
		if v, ok := env["GOMAXPROCS"]; ok {
			t.Errorf("workers start with GOMAXPROCS=%s, want every core", v)
		}
		if v, ok := env["GOGC"]; ok || gcAlone != 200 || env["GOMEMLIMIT"] != "400MiB" {
			t.Errorf("GOGC=%q (set %v), GCAlone %d, GOMEMLIMIT=%q; want none, 200 and 400MiB", v, ok, gcAlone, env["GOMEMLIMIT"])
		}
	})
	t.Run("sidecar's own", func(t *testing.T) {
		t.Setenv("GOGC", "50")
		t.Setenv("GOMAXPROCS", "3")
		env, gcAlone := envOf(t)
		if env["GOGC"] != "50" || env["GOMAXPROCS"] != "3" || gcAlone != 0 {
			t.Errorf("GOGC=%q GOMAXPROCS=%q GCAlone %d, want the sidecar's 50 and 3 and no GCAlone", env["GOGC"], env["GOMAXPROCS"], gcAlone)
		}
	})
}

// The pool is told where the blob cache's lock files are, as the workers'
// open files name them (symbolic links resolved), so that it does not grow
// for a generation that waits for another's fetch; no directory without an
// absolute cache directory.
func TestPoolLockDir(t *testing.T) {
	target := t.TempDir()
	link := filepath.Join(t.TempDir(), "cache")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	resolved, err := filepath.EvalSymlinks(target)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{link, filepath.Join(resolved, "locks")},
		{"relative/cache", ""},
	} {
		t.Setenv("ARGOCD_OCM_CACHE_DIR", tc.dir)
		s, err := readServeSettings(func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.pool(nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.LockDir != tc.want {
			t.Errorf("cache %s: LockDir %q, want %q", tc.dir, p.LockDir, tc.want)
		}
	}
}

// The stop policy: the second SIGTERM waits for running generations, at
// most Grace, is repeated every resendEvery, and SIGKILL follows Kill later.
func TestStopPolicy(t *testing.T) {
	running := 1
	p := stopPolicy{Running: func() int { return running }, Grace: 10 * time.Second, Kill: 5 * time.Second}.withDefaults()
	t0 := time.Unix(1000, 0)
	var s stopState
	if !s.begin(t0) || s.begin(t0.Add(time.Second)) {
		t.Fatal("begin: only the first stop signal begins a stop")
	}
	at := func(d time.Duration) stopStep { return s.next(t0.Add(d), p) }
	if got := at(100 * time.Millisecond); got != stepWait {
		t.Errorf("a generation runs, 0.1 s in: %v, want wait", got)
	}
	if got := at(3 * time.Second); got != stepWait {
		t.Errorf("a generation runs, 3 s in: %v, want wait", got)
	}
	running = 0
	if got := at(3*time.Second + 100*time.Millisecond); got != stepTerm {
		t.Errorf("idle: %v, want SIGTERM", got)
	}
	if got := at(3*time.Second + 200*time.Millisecond); got != stepWait {
		t.Errorf("0.1 s after a SIGTERM: %v, want wait", got)
	}
	if got := at(3*time.Second + 700*time.Millisecond); got != stepTerm {
		t.Errorf("0.6 s after a SIGTERM: %v, want another", got)
	}
	running = 3
	var busy stopState
	busy.begin(t0)
	if got := busy.next(t0.Add(10*time.Second), p); got != stepTerm {
		t.Errorf("busy at the end of the grace: %v, want SIGTERM", got)
	}
	if got := busy.next(t0.Add(15*time.Second), p); got != stepKill {
		t.Errorf("still alive at grace + kill: %v, want SIGKILL", got)
	}
}

// serve -- COMMAND where COMMAND acts like argocd-cmp-server on SIGTERM
// (the first only cleans up, the default action ends it): serve, the
// sidecar's entrypoint, ends within a second of one SIGTERM with status 0,
// and the command saw the first signal.
func TestServeEndsCommandThatIgnoresTheFirstSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir, err := os.MkdirTemp("", "sup")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "r.sock")
	script := `trap 'trap - TERM; echo first-sigterm >&2' TERM; echo started; while :; do sleep 0.05; done`
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIHelperProcess$")
	cmd.Env = append(os.Environ(), cliHelperEnv+"="+strings.Join([]string{"serve", "--socket", socket, "--", "/bin/sh", "-c", script}, "\x1f"),
		"ARGOCD_OCM_WORKERS=1")
	var stderr syncBuf
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "started\n" {
		t.Fatalf("command did not start: %q %v\n%s", line, err, stderr.String())
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		took := time.Since(sent)
		if err != nil {
			t.Errorf("serve after SIGTERM: %v, want status 0\n%s", err, stderr.String())
		}
		if took > 2*time.Second {
			t.Errorf("serve took %s to end after SIGTERM, want under a second or so", took)
		}
		t.Logf("serve ended %s after one SIGTERM", took.Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatalf("serve still runs 15 s after SIGTERM (the command ignored the forwarded signal)\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "first-sigterm") {
		t.Errorf("the command never saw the first SIGTERM:\n%s", stderr.String())
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// The render server runs a request's command line in a tree of the root
// command and that one subcommand (newServedCommand): output, errors and
// exit codes are those of the whole CLI, for help, flags, arguments,
// variables and renders.
func TestServedCommandIsTheCLIs(t *testing.T) {
	repo := inAppDir(t, demoRepo)
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	app := map[string]string{"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_NAMESPACE": "shop",
		"ARGOCD_ENV_REPOSITORY": repo, "ARGOCD_ENV_COMPONENT": "example.com/demo/podinfo", "ARGOCD_ENV_VERSION": "1.0.0"}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(app)
		maps.Copy(m, extra)
		return m
	}
	p := newProcess()
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"generate"}, app},
		{[]string{"generate", "-v"}, with(map[string]string{"ARGOCD_ENV_VERSION": "9.9.9"})},
		{[]string{"generate"}, with(map[string]string{"ARGOCD_ENV_VERSION": "9.9.9"})},
		{[]string{"generate"}, with(map[string]string{"ARGOCD_ENV_UNKNOWN": "x"})},
		{[]string{"generate"}, nil},
		{[]string{"generate", "--help"}, app},
		{[]string{"generate", "-h"}, app},
		{[]string{"generate", "--bogus"}, app},
		{[]string{"generate", "--verbose=maybe"}, app},
		{[]string{"generate", "extra"}, app},
		{[]string{"generate", "help"}, app},
		{[]string{"parameters"}, app},
		{[]string{"parameters"}, nil},
		{[]string{"parameters", "--help"}, app},
		{[]string{"parameters", "--bogus"}, app},
		{[]string{"parameters", "extra"}, app},
	} {
		var environ []string
		for k, v := range tc.env {
			environ = append(environ, k+"="+v)
		}
		var out, errs [2]bytes.Buffer
		var code [2]int
		code[0] = execute(t.Context(), p, tc.args, &out[0], &errs[0], env(tc.env), dir, environ)
		served := newServedCommand(tc.args[0], p, &out[1], &errs[1], env(tc.env), dir, environ)
		code[1] = executeCommand(t.Context(), served, tc.args, &errs[1])
		if code[0] != code[1] || out[0].String() != out[1].String() || dropTimes(errs[0].String()) != dropTimes(errs[1].String()) {
			t.Errorf("%v (%d variables): the CLI exits %d, writes %d bytes and\n%s\nthe served command exits %d, writes %d bytes and\n%s",
				tc.args, len(tc.env), code[0], out[0].Len(), errs[0].String(), code[1], out[1].Len(), errs[1].String())
		}
		if out[0].Len()+errs[0].Len() == 0 {
			t.Errorf("%v: no output to compare", tc.args)
		}
	}
}

// dropTimes removes the times and durations of -v's log lines.
func dropTimes(s string) string {
	return regexp.MustCompile(`\b(time|ms|elapsed|duration)=\S+`).ReplaceAllString(s, "")
}
