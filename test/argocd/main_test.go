package argocd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/cmpserver"
	"github.com/argoproj/argo-cd/v3/cmpserver/plugin"
	log "github.com/sirupsen/logrus"
	"google.golang.org/grpc"
)

// pluginName is what Applications put in spec.source.plugin.name: the
// installed sidecar's socket is <pluginName>.sock, and it is metadata.name of
// manifests/install/plugin.yaml (the alternative command's config).
const pluginName = "argocd-ocm-plugin"

var (
	repoRoot  string               // the product repository (../..)
	binDir    string               // argocd-ocm-plugin and argocd-ocm-client, as make build builds them
	pluginCfg *plugin.PluginConfig // manifests/install/plugin.yaml as Argo CD reads it
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	log.SetLevel(log.WarnLevel)
	root, err := filepath.Abs("../..")
	if err != nil {
		return fail(err)
	}
	repoRoot = root

	tmp, err := os.MkdirTemp("", "cmp") // short: unix socket paths are limited to ~100 bytes
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)

	// The plugin and the thin client, built like `make build`, found on PATH
	// by argocd-cmp-server.
	bin := filepath.Join(tmp, "bin")
	binDir = bin
	start := time.Now()
	// The product builds with the machine's Go (these tests need Go 1.27).
	build := productBuild("build", "-trimpath", "-o", bin+string(filepath.Separator), "./cmd/argocd-ocm-plugin", "./cmd/argocd-ocm-client")
	if out, err := build.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("building the plugin: %v\n%s", err, out))
	}
	fmt.Fprintf(os.Stderr, "argocd contract tests: plugin built in %s\n", time.Since(start).Round(time.Second))

	// Argo CD 3.6's repo-server runs hack/git-verify-wrapper.sh of its
	// release for every revision it checks out (its image has it on PATH).
	argoDir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/argoproj/argo-cd/v3").Output()
	if err != nil {
		return fail(fmt.Errorf("locating Argo CD's module: %v", err))
	}
	wrapper, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(argoDir)), "hack", "git-verify-wrapper.sh"))
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "git-verify-wrapper.sh"), wrapper, 0o755); err != nil {
		return fail(err)
	}

	for k, v := range map[string]string{
		"PATH":                      bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"ARGOCD_PLUGINSOCKFILEPATH": filepath.Join(tmp, "s"),
		"ARGOCD_CMP_WORKDIR":        filepath.Join(tmp, "w"),
		"ARGOCD_OCM_CACHE_DIR":      filepath.Join(tmp, "cache"),
	} {
		os.Setenv(k, v)
	}
	// The sidecar's environment is the plugin's too: keep the host's out.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "ARGOCD_ENV_") || strings.HasPrefix(k, "ARGOCD_APP_") || strings.HasPrefix(k, "KUBE_") {
			os.Unsetenv(k)
		}
	}
	if err := os.MkdirAll(os.Getenv("ARGOCD_PLUGINSOCKFILEPATH"), 0o700); err != nil {
		return fail(err)
	}

	// The sidecar's entrypoint: the render server, with the sidecar's
	// environment; argocd-cmp-server's commands reach it through the socket
	// variable, as `serve -- argocd-cmp-server` arranges in the pod.
	socket := filepath.Join(tmp, "r", "render.sock")
	stopRender, err := startRenderServer(filepath.Join(bin, "argocd-ocm-plugin"), socket)
	if err != nil {
		return fail(err)
	}
	defer stopRender()
	os.Setenv("ARGOCD_OCM_SERVER_SOCKET", socket)

	stop, err := startCMPServer()
	if err != nil {
		return fail(err)
	}
	defer stop()
	return m.Run()
}

// renderLog is the render server's stderr: one line per command it ran.
var renderLog syncBuffer

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startRenderServer runs `argocd-ocm-plugin serve` and waits for its socket.
func startRenderServer(plugin, socket string) (func(), error) {
	cmd := exec.Command(plugin, "serve", "--socket", socket)
	cmd.Stderr = &renderLog
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", socket); err == nil {
			c.Close()
			return stop, nil
		}
	}
	stop()
	return nil, fmt.Errorf("render server did not listen on %s: %s", socket, renderLog.String())
}

// startCMPServer runs Argo CD's argocd-cmp-server in-process with the
// project's plugin.yaml, listening where the repo-server looks for it.
func startCMPServer() (func(), error) {
	cfg, err := plugin.ReadPluginConfig(filepath.Join(repoRoot, "manifests", "install"))
	if err != nil {
		return nil, err
	}
	pluginCfg = cfg
	srv, err := cmpserver.NewServer(plugin.CMPServerInitConstants{PluginConfig: *cfg})
	if err != nil {
		return nil, err
	}
	gs, err := srv.CreateGRPC() // not Run(): it traps signals and calls log.Fatal
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", cfg.Address())
	if err != nil {
		return nil, err
	}
	go func() { _ = gs.Serve(l) }()
	return func() { stopGRPC(gs) }, nil
}

func stopGRPC(gs *grpc.Server) {
	done := make(chan struct{})
	go func() { gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		gs.Stop()
	}
}

// machineGo is the machine's go command and an environment for it, for the
// go commands these tests run in the product's module. go test runs this
// test binary with Go 1.27.4's GOROOT in the environment and its bin first
// on PATH, so a plain "go" with GOTOOLCHAIN=local is still Go 1.27.4 and
// compiles the whole product again beside make build's and make test's
// packages: both are dropped, and "go" is looked up on what PATH is left.
func machineGo() (goCmd string, env []string) {
	goroot := os.Getenv("GOROOT")
	var path []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GOROOT", "GOTOOLCHAIN":
			continue
		case "PATH":
			for _, dir := range filepath.SplitList(v) {
				if goroot == "" || filepath.Clean(dir) != filepath.Join(goroot, "bin") {
					path = append(path, dir)
				}
			}
			kv = k + "=" + strings.Join(path, string(filepath.ListSeparator))
		}
		env = append(env, kv)
	}
	goCmd = "go"
	for _, dir := range path {
		if fi, err := os.Stat(filepath.Join(dir, "go")); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			goCmd = filepath.Join(dir, "go")
			break
		}
	}
	return goCmd, append(env, "GOTOOLCHAIN=local")
}

// productBuild is a go command of make build's (the machine's Go, no cgo,
// -trimpath) in the product's module.
func productBuild(args ...string) *exec.Cmd {
	goCmd, env := machineGo()
	cmd := exec.Command(goCmd, args...)
	cmd.Dir, cmd.Env = repoRoot, append(env, "CGO_ENABLED=0")
	return cmd
}

// productTest is a go command of make test-unit's in the product's module:
// the machine's Go, cgo as the machine has it and without make
// test-argocd's -trimpath, so that the test packages it builds are those
// make test compiled.
func productTest(args ...string) *exec.Cmd {
	goCmd, env := machineGo()
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "CGO_ENABLED=") })
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			env[i] = "GOFLAGS=" + strings.Join(slices.DeleteFunc(strings.Fields(v), func(f string) bool { return f == "-trimpath" }), " ")
		}
	}
	cmd := exec.Command(goCmd, args...)
	cmd.Dir, cmd.Env = repoRoot, env
	return cmd
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "argocd contract tests:", err)
	return 1
}

// copyDir copies a directory tree (regular files and directories).
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
