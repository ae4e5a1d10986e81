package argocdline

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/pkg/utils/kube"
	"github.com/argoproj/argo-cd/v3/cmpserver/apiclient"
	"github.com/argoproj/argo-cd/v3/util/cmp"
	grpc_retry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/grpc/status"
)

// The sidecar's plugin service (serve --plugin-socket, what the install
// runs) asked by this line's repo-server client (cmpserver/apiclient and
// util/cmp's stream) and compared with this line's argocd-cmp-server running
// plugin.yaml: the same objects once split as the repo-server splits them,
// the same announcement, the same plugin line in an error. ../
// pluginservice_test.go checks the newest line through the repo-server's
// own functions.

// startPluginService runs the binary TestMain built (on PATH) and returns
// its plugin socket.
func startPluginService(t *testing.T) string {
	t.Helper()
	plugin, err := exec.LookPath("argocd-ocm-plugin")
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "ps") // short: a socket's path holds at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	sock := filepath.Join(tmp, "s", "argocd-ocm-plugin.sock")
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "ARGOCD_OCM_SERVER_SOCKET" && k != "ARGOCD_OCM_CACHE_DIR" && k != "TMPDIR" {
			env = append(env, kv)
		}
	}
	env = append(env, "TMPDIR="+tmp, "ARGOCD_OCM_CACHE_DIR="+filepath.Join(tmp, "cache"), "ARGOCD_OCM_WORKERS=1")
	var log syncBuffer
	cmd := exec.Command(plugin, "serve", "--socket", filepath.Join(tmp, "r", "render.sock"), "--plugin-socket", sock)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when the sidecar has ended, with waitErr
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			if waitErr != nil {
				t.Errorf("sidecar after SIGTERM: %v\n%s", waitErr, log.String())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("sidecar still ran 20 s after SIGTERM\n%s", log.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("sidecar exited: %v\n%s", waitErr, log.String())
		default:
		}
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("nobody listens on %s\n%s", sock, log.String())
		}
	}
}

// ask streams the checkout to the plugin on sock as the repo-server does:
// GenerateManifest (objects: each manifest string split as the repo-server
// splits it, as canonical JSON, sorted) or GetParametersAnnouncement (JSON).
func ask(t *testing.T, sock, method, root, app string, env []string) ([]string, error) {
	t.Helper()
	closer, c, err := apiclient.NewConfigManagementPluginClientSet(sock).NewConfigManagementPluginClient()
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if method == "parameters" {
		st, err := c.GetParametersAnnouncement(ctx, grpc_retry.Disable())
		if err != nil {
			t.Fatal(err)
		}
		if err := cmp.SendRepoStream(ctx, app, root, st, env, nil); err != nil {
			t.Fatal(err)
		}
		resp, err := st.CloseAndRecv()
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(resp.ParameterAnnouncements)
		if err != nil {
			t.Fatal(err)
		}
		return []string{string(b)}, nil
	}
	st, err := c.GenerateManifest(ctx, grpc_retry.Disable())
	if err != nil {
		t.Fatal(err)
	}
	if err := cmp.SendRepoStream(ctx, app, root, st, env, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := st.CloseAndRecv()
	if err != nil {
		return nil, err
	}
	var objs []string
	for _, m := range resp.Manifests {
		us, err := kube.SplitYAML([]byte(m))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			b, err := json.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, string(b))
		}
	}
	slices.Sort(objs)
	return objs, nil
}

func pluginLine(msg string) string {
	if i := strings.Index(msg, "argocd-ocm-plugin: "); i >= 0 {
		line, _, _ := strings.Cut(msg[i:], "\n")
		return strings.TrimSpace(line)
	}
	return ""
}

const podinfo = "example.com/demo/podinfo"

func TestV3PluginServiceMatchesCMPServer(t *testing.T) {
	sock := startPluginService(t)
	root, app := checkout(t)
	base := []string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop-ns", "KUBE_VERSION=1.31.0", "KUBE_API_VERSIONS=v1,apps/v1,policy/v1"}
	for _, c := range []struct {
		name, method string
		env          []string
		fails        bool
	}{
		{"parameters", "generate", params(t, "repository", "ctf", "component", podinfo, "version", "1.0.0", "values", "replicaCount: 3\n"), false},
		{"env", "generate", []string{"ARGOCD_ENV_REPOSITORY=ctf", "ARGOCD_ENV_COMPONENT=" + podinfo, "ARGOCD_ENV_VERSION=1.0.0"}, false},
		{"unknown version", "generate", params(t, "repository", "ctf", "component", podinfo, "version", "9.9.9"), true},
		{"announcement", "parameters", params(t, "repository", "ctf", "component", podinfo, "version", "~1.0"), false},
		{"announcement failure", "parameters", params(t, "repository", "ctf", "component", podinfo, "version", "3.0.0"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := append(slices.Clip(base), c.env...)
			oracle, oerr := ask(t, pluginCfg.Address(), c.method, root, app, env)
			got, err := ask(t, sock, c.method, root, app, env)
			if c.fails {
				if oerr == nil || err == nil {
					t.Fatalf("argocd-cmp-server: %v; plugin service: %v; want both to fail", oerr, err)
				}
				line := pluginLine(status.Convert(err).Message())
				if want := pluginLine(status.Convert(oerr).Message()); line != want || !strings.HasPrefix(line, "argocd-ocm-plugin: application shop: ") {
					t.Errorf("plugin line through the service %q, through argocd-cmp-server %q", line, want)
				}
				return
			}
			if oerr != nil || err != nil {
				t.Fatalf("argocd-cmp-server: %v; plugin service: %v", oerr, err)
			}
			if len(oracle) == 0 || !slices.Equal(oracle, got) {
				t.Errorf("through argocd-cmp-server:\n%s\nthrough the plugin service:\n%s", strings.Join(oracle, "\n"), strings.Join(got, "\n"))
			}
		})
	}
}
