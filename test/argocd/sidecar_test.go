package argocd

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/cmpserver/apiclient"
	"github.com/argoproj/argo-cd/v3/util/cmp"
	grpc_retry "github.com/grpc-ecosystem/go-grpc-middleware/retry"
)

// The sidecar as its container runs it: `argocd-ocm-plugin serve --
// argocd-cmp-server` (manifests/install), with Argo CD's real
// argocd-cmp-server binary, not its code in-process. Two things only a real
// binary shows: argocd-cmp-server sets ARGOCD_LOG_FORMAT and
// ARGOCD_LOG_LEVEL in its own environment at start-up, which the commands it
// runs inherit (the render server must still serve them), and it ends only
// on a second SIGTERM (the sidecar must still end on one).
func TestSidecarEntrypointWithRealCMPServer(t *testing.T) {
	tmp, err := os.MkdirTemp("", "side") // short: unix socket paths
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	cmpBin := filepath.Join(tmp, "argocd-cmp-server")
	start := time.Now()
	if out, err := exec.Command("go", "build", "-trimpath", "-o", cmpBin, "./cmd/argocd-cmp-server").CombinedOutput(); err != nil {
		t.Fatalf("building argocd-cmp-server: %v\n%s", err, out)
	}
	t.Logf("argocd-cmp-server built in %s", time.Since(start).Round(time.Second))
	config := filepath.Join(tmp, "config")
	if b, err := os.ReadFile(filepath.Join(repoRoot, "manifests", "install", "plugin.yaml")); err != nil {
		t.Fatal(err)
	} else {
		writeFile(t, filepath.Join(config, "plugin.yaml"), string(b))
	}

	// The sidecar's environment: its own socket directories and cache,
	// and no render server socket from outside (serve sets its own).
	sockDir, renderSock := filepath.Join(tmp, "s"), filepath.Join(tmp, "r", "render.sock")
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "ARGOCD_OCM_SERVER_SOCKET" && !strings.HasPrefix(k, "ARGOCD_LOG_") {
			env = append(env, kv)
		}
	}
	env = append(env, "ARGOCD_PLUGINSOCKFILEPATH="+sockDir, "ARGOCD_CMP_WORKDIR="+filepath.Join(tmp, "w"),
		"ARGOCD_OCM_CACHE_DIR="+filepath.Join(tmp, "cache"), "ARGOCD_OCM_WORKERS=1")
	var sidecarLog syncBuffer
	sidecar := exec.Command(filepath.Join(binDir, "argocd-ocm-plugin"), "serve", "--socket", renderSock, "--",
		cmpBin, "--config-dir-path", config, "--loglevel", "warn")
	sidecar.Env, sidecar.Stdout, sidecar.Stderr = env, &sidecarLog, &sidecarLog
	if err := sidecar.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sidecar.Wait() }()
	defer func() { _ = sidecar.Process.Kill() }()

	cmpSock := filepath.Join(sockDir, filepath.Base(pluginCfg.Address()))
	waitForSocket(t, cmpSock, exited, &sidecarLog)

	// A generation through the real cmp-server, as the repo-server asks.
	root, app := gitCheckout(t)
	_, client, err := apiclient.NewConfigManagementPluginClientSet(cmpSock).NewConfigManagementPluginClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := client.GenerateManifest(ctx, grpc_retry.Disable())
	if err != nil {
		t.Fatal(err)
	}
	envs := append([]string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop-ns"},
		pluginParams(t, str("repository", "ctf"), str("component", podinfo), str("version", "1.0.0"))...)
	if err := cmp.SendRepoStream(st.Context(), app, root, st, envs, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := st.CloseAndRecv()
	if err != nil {
		t.Fatalf("generate: %v\nsidecar log:\n%s", err, sidecarLog.String())
	}
	wantObjects(t, decodeManifests(t, resp.Manifests), "Deployment/shop-podinfo")
	log := sidecarLog.String()
	if n := strings.Count(log, "command done"); n != 1 || strings.Contains(log, "request refused") {
		t.Errorf("the render server served %d generations (want 1) and the log says:\n%s", n, log)
	}

	// One SIGTERM, as the kubelet sends it: the sidecar ends within a few
	// seconds, with status 0, and argocd-cmp-server's socket is gone.
	sent := time.Now()
	if err := sidecar.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		took := time.Since(sent)
		t.Logf("sidecar ended %s after SIGTERM", took.Round(time.Millisecond))
		if err != nil {
			t.Errorf("sidecar after SIGTERM: %v, want status 0\n%s", err, sidecarLog.String())
		}
		if took > 5*time.Second {
			t.Errorf("sidecar took %s to end after SIGTERM", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("sidecar still runs 20 s after SIGTERM\n%s", sidecarLog.String())
	}
	if _, err := os.Lstat(cmpSock); !os.IsNotExist(err) {
		t.Errorf("argocd-cmp-server's socket left behind: %v", err)
	}
}

func waitForSocket(t *testing.T, path string, exited <-chan error, log fmt.Stringer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("sidecar exited before listening: %v\n%s", err, log)
		default:
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("nobody listens on %s after 30 s\n%s", path, log)
}
