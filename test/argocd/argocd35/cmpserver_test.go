package argocdline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/cmpserver"
	"github.com/argoproj/argo-cd/v3/cmpserver/apiclient"
	"github.com/argoproj/argo-cd/v3/cmpserver/plugin"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/cmp"
	grpc_retry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	log "github.com/sirupsen/logrus"
	"google.golang.org/grpc/status"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

var (
	repoRoot  string
	pluginCfg *plugin.PluginConfig
	renderLog syncBuffer // the render server's stderr: a line per command
)

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

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	log.SetLevel(log.WarnLevel)
	repoRoot, _ = filepath.Abs("../../..")
	tmp, err := os.MkdirTemp("", "cmp3") // short: unix socket paths are limited
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	build := exec.Command("go", "build", "-trimpath", "-o", bin+string(filepath.Separator), "./cmd/argocd-ocm-plugin", "./cmd/argocd-ocm-client")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("building the plugin: %v\n%s", err, out))
	}
	for k, v := range map[string]string{
		"PATH":                      bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"ARGOCD_PLUGINSOCKFILEPATH": filepath.Join(tmp, "s"),
		"ARGOCD_CMP_WORKDIR":        filepath.Join(tmp, "w"),
		"ARGOCD_OCM_CACHE_DIR":      filepath.Join(tmp, "cache"),
	} {
		os.Setenv(k, v)
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "ARGOCD_ENV_") || strings.HasPrefix(k, "ARGOCD_APP_") || strings.HasPrefix(k, "KUBE_") {
			os.Unsetenv(k)
		}
	}
	if err := os.MkdirAll(os.Getenv("ARGOCD_PLUGINSOCKFILEPATH"), 0o700); err != nil {
		return fail(err)
	}
	// The sidecar's entrypoint, the render server: generate goes through it.
	socket := filepath.Join(tmp, "r", "render.sock")
	render := exec.Command(filepath.Join(bin, "argocd-ocm-plugin"), "serve", "--socket", socket)
	render.Stderr = &renderLog
	if err := render.Start(); err != nil {
		return fail(err)
	}
	defer func() { _ = render.Process.Signal(syscall.SIGTERM); _ = render.Wait() }()
	for i := 0; ; i++ {
		if c, err := net.Dial("unix", socket); err == nil {
			c.Close()
			break
		}
		if i == 1000 {
			return fail(fmt.Errorf("render server did not listen on %s: %s", socket, renderLog.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	os.Setenv("ARGOCD_OCM_SERVER_SOCKET", socket)
	if pluginCfg, err = plugin.ReadPluginConfig(filepath.Join(repoRoot, "manifests", "install")); err != nil {
		return fail(err)
	}
	srv, err := cmpserver.NewServer(plugin.CMPServerInitConstants{PluginConfig: *pluginCfg})
	if err != nil {
		return fail(err)
	}
	gs, err := srv.CreateGRPC()
	if err != nil {
		return fail(err)
	}
	l, err := net.Listen("unix", pluginCfg.Address())
	if err != nil {
		return fail(err)
	}
	go func() { _ = gs.Serve(l) }()
	defer gs.Stop()
	return m.Run()
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "argocd v3 contract tests:", err)
	return 1
}

func checkout(t *testing.T) (root, app string) {
	t.Helper()
	root = t.TempDir()
	app = filepath.Join(root, "apps", "demo")
	src := filepath.Join(repoRoot, "testdata", "demo", "ctf")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(app, "ctf", rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(app, "ctf", rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return root, app
}

func params(t *testing.T, kv ...string) []string {
	var ps v1alpha1.ApplicationSourcePluginParameters
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		ps = append(ps, v1alpha1.ApplicationSourcePluginParameter{Name: kv[i], String_: &v})
	}
	env, err := ps.Environ()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func client(t *testing.T) (apiclient.ConfigManagementPluginServiceClient, context.Context) {
	t.Helper()
	closer, c, err := apiclient.NewConfigManagementPluginClientSet(pluginCfg.Address()).NewConfigManagementPluginClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c, ctx
}

func generate(t *testing.T, root, app string, env []string) ([]string, error) {
	c, ctx := client(t)
	st, err := c.GenerateManifest(ctx, grpc_retry.Disable())
	if err != nil {
		t.Fatal(err)
	}
	if err := cmp.SendRepoStream(st.Context(), app, root, st, env, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := st.CloseAndRecv()
	if err != nil {
		return nil, err
	}
	return resp.Manifests, nil
}

func kinds(t *testing.T, ms []string) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(m), &o); err != nil {
			t.Fatalf("not JSON: %v", err)
		}
		out[o.Kind+"/"+o.Metadata.Name] = true
	}
	return out
}

func TestV3Generate(t *testing.T) {
	root, app := checkout(t)
	before := strings.Count(renderLog.String(), "command done")
	// v3 passes env entries with empty values: an empty one counts as unset.
	env := append([]string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop", "ARGOCD_APP_PROJECT_NAME=default",
		"ARGOCD_ENV_RESOURCE=", "ARGOCD_ENV_VALUES=", "ARGOCD_ENV_VERSION="},
		params(t, "repository", "ctf", "component", "example.com/demo/podinfo", "version", "1.0.0")...)
	ms, err := generate(t, root, app, env)
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(t, ms)
	for _, want := range []string{"Deployment/shop-podinfo", "Service/shop-podinfo", "ConfigMap/shop-podinfo"} {
		if !got[want] {
			t.Errorf("no %s in %v", want, got)
		}
	}
	// The line reaches renderLog through the server's stderr pipe, possibly
	// after the answer: waited for, up to 10 s.
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(renderLog.String(), "command done") < before+1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Count(renderLog.String(), "command done") != before+1 {
		t.Errorf("generate did not go through the render server; its log:\n%s", renderLog.String())
	}
}

func TestV3GenerateFailure(t *testing.T) {
	root, app := checkout(t)
	ms, err := generate(t, root, app, append([]string{"ARGOCD_APP_NAME=shop"},
		params(t, "repository", "ctf", "component", "example.com/demo/podinfo", "version", "9.9.9")...))
	if err == nil || len(ms) != 0 {
		t.Fatalf("err %v, %d manifests", err, len(ms))
	}
	msg := status.Convert(err).Message()
	if !strings.Contains(msg, "argocd-ocm-plugin: application shop: component example.com/demo/podinfo:9.9.9:") {
		t.Errorf("error %q lacks the plugin's line", msg)
	}
}

func TestV3ParametersAnnouncement(t *testing.T) {
	root, app := checkout(t)
	c, ctx := client(t)
	st, err := c.GetParametersAnnouncement(ctx, grpc_retry.Disable())
	if err != nil {
		t.Fatal(err)
	}
	env := append([]string{"ARGOCD_APP_NAME=shop"}, params(t, "repository", "ctf", "component", "example.com/demo/podinfo", "version", "1.0.0")...)
	if err := cmp.SendRepoStream(st.Context(), app, root, st, env, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := st.CloseAndRecv()
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]string{}
	for _, a := range resp.ParameterAnnouncements {
		if _, ok := first[a.Name]; !ok {
			first[a.Name] = a.String_
		}
	}
	if first["resource"] != "chart" || first["resolved-version"] != "1.0.0" {
		t.Errorf("announced defaults %v", first)
	}
}

// The install Component builds on Argo CD v3's stock install.yaml too, and the
// sidecar finds the volumes it mounts and serves its socket where that
// release's repo-server looks for it.
func TestV3InstallComponent(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/argoproj/argo-cd/v3").Output()
	if err != nil {
		t.Fatal(err)
	}
	stock, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "manifests", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "install.yaml"), stock, 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(dir, filepath.Join(repoRoot, "manifests", "install"))
	k := fmt.Sprintf("resources:\n  - install.yaml\ncomponents:\n  - %s\n", rel)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Resources() {
		if r.GetKind() != "Deployment" || r.GetName() != "argocd-repo-server" {
			continue
		}
		b, _ := r.MarshalJSON()
		var d appsv1.Deployment
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		vols := map[string]bool{}
		for _, v := range d.Spec.Template.Spec.Volumes {
			vols[v.Name] = true
		}
		// The repo-server's plugin socket directory: its mount of the
		// plugins volume, Argo CD's default (the stock install does not
		// move it with ARGOCD_PLUGINSOCKFILEPATH).
		var sockDir string
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != "argocd-repo-server" {
				continue
			}
			for _, vm := range c.VolumeMounts {
				if vm.Name == "plugins" {
					sockDir = vm.MountPath
				}
			}
			for _, e := range c.Env {
				if e.Name == "ARGOCD_PLUGINSOCKFILEPATH" {
					t.Errorf("the repo-server sets %s", e.Name)
				}
			}
		}
		if sockDir != "/home/argocd/cmp-server/plugins" {
			t.Errorf("the repo-server mounts the plugins volume at %q, not at Argo CD's plugin socket directory", sockDir)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != "argocd-ocm-plugin" {
				continue
			}
			for _, vm := range c.VolumeMounts {
				if !vols[vm.Name] {
					t.Errorf("sidecar mounts %q, which v3's repo-server does not have", vm.Name)
				}
			}
			// serve --plugin-socket <the repo-server's socket directory>/<plugin name>.sock
			want := []string{"/usr/local/bin/argocd-ocm-plugin", "serve", "--plugin-socket", sockDir + "/argocd-ocm-plugin.sock"} // the plugin name Applications use
			if strings.Join(c.Command, " ") != strings.Join(want, " ") {
				t.Errorf("sidecar runs %v, want %v", c.Command, want)
			}
			return
		}
		t.Fatal("no sidecar in argocd-repo-server")
	}
	t.Fatal("no argocd-repo-server Deployment")
}
