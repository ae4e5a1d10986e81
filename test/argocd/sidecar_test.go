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

	"github.com/argoproj/argo-cd/gitops-engine/v3/pkg/utils/kube"
	"github.com/argoproj/argo-cd/v3/cmpserver/apiclient"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/util/cmp"
	grpc_retry "github.com/grpc-ecosystem/go-grpc-middleware/retry"
)

// The sidecar as the install runs it: the container's command and
// environment from the kustomize build of manifests/install, with the
// directories Kubernetes would mount (the plugins volume shared with the
// repo-server, /tmp, the cache) replaced by the test's own. The repo-server's
// own client (Argo CD's cmpserver/apiclient and util/cmp) reaches it on the
// socket the repo-server dials for Applications naming the plugin; no
// argocd-cmp-server runs, and no process starts per generation.
func TestSidecarAsInstalled(t *testing.T) {
	tmp, err := os.MkdirTemp("", "side") // short: unix socket paths
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	d := repoServerDeployment(t, kustomize(t, inMemoryTree(t), "/m/argocd"))
	side := container(t, d.Spec.Template.Spec.Containers, sidecarName)

	// Container paths to the test's: the image's binaries, each mount.
	local := map[string]string{"/usr/local/bin": binDir}
	for _, m := range side.VolumeMounts {
		dir := filepath.Join(tmp, m.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		local[m.MountPath] = dir
	}
	localPath := func(p string) string {
		for mount, dir := range local {
			if p == mount || strings.HasPrefix(p, mount+"/") {
				return dir + p[len(mount):]
			}
		}
		return p
	}
	if local[common.DefaultPluginSockFilePath] == "" || local["/tmp"] == "" {
		t.Fatalf("the sidecar mounts %v: no plugin socket directory or no /tmp", local)
	}
	var args []string
	for _, a := range side.Command {
		args = append(args, localPath(a))
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + local["/tmp"],
		// serve's own socket, /tmp/argocd-ocm-plugin/render.sock in the
		// container, is in the /tmp volume.
		"ARGOCD_OCM_SERVER_SOCKET=" + filepath.Join(local["/tmp"], "argocd-ocm-plugin", "render.sock")}
	for _, e := range side.Env {
		env = append(env, e.Name+"="+localPath(e.Value))
	}
	var sidecarLog syncBuffer
	sidecar := exec.Command(args[0], args[1:]...)
	sidecar.Env, sidecar.Stdout, sidecar.Stderr = env, &sidecarLog, &sidecarLog
	if err := sidecar.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sidecar.Wait() }()
	defer func() { _ = sidecar.Process.Kill() }()

	sock := filepath.Join(local[common.DefaultPluginSockFilePath], pluginName+".sock")
	waitForSocket(t, sock, exited, &sidecarLog)
	generateOnce(t, sock, &sidecarLog)
	// The Application's directory was unpacked under /tmp and nothing of it
	// is left: its stream directory is emptied, once the answer is sent,
	// for a later stream.
	work, err := filepath.Glob(filepath.Join(local["/tmp"], "argocd-ocm-plugin-streams-*"))
	if err != nil || len(work) != 1 {
		t.Errorf("the sidecar's streams directory in /tmp: %v %v", work, err)
	} else if left := emptiedSoon(filepath.Join(work[0], "*", "*")); len(left) != 0 {
		t.Errorf("the streams' work directory in /tmp: files left %v", left)
	}
	if strings.Contains(sidecarLog.String(), "argocd-cmp-server") {
		t.Errorf("the installed sidecar mentions argocd-cmp-server:\n%s", sidecarLog.String())
	}
	stopOnSIGTERM(t, sidecar, exited, sock, &sidecarLog)
}

// The alternative sidecar command (docs/argocd.md, not installed):
// `argocd-ocm-plugin serve -- argocd-cmp-server` with the image's
// plugin.yaml, with Argo CD's real argocd-cmp-server binary, not its code
// in-process. Two things only a real binary shows: argocd-cmp-server sets
// ARGOCD_LOG_FORMAT and ARGOCD_LOG_LEVEL in its own environment at
// start-up, which the commands it runs inherit (the render server must still
// serve them), and it ends only on a second SIGTERM (the sidecar must still
// end on one).
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
	generateOnce(t, cmpSock, &sidecarLog)
	stopOnSIGTERM(t, sidecar, exited, cmpSock, &sidecarLog)
}

// generateOnce asks the plugin on sock for one generation as the
// repo-server asks, and checks that the render server answered it.
func generateOnce(t *testing.T, sock string, sidecarLog *syncBuffer) {
	t.Helper()
	root, app := gitCheckout(t)
	closer, client, err := apiclient.NewConfigManagementPluginClientSet(sock).NewConfigManagementPluginClient()
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
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
	// As the repo-server reads them (runConfigManagementPluginSidecars):
	// each string split as YAML.
	objs := map[string]object{}
	for _, m := range resp.Manifests {
		us, err := kube.SplitYAML([]byte(m))
		if err != nil {
			t.Fatalf("the repo-server cannot split the manifests: %v", err)
		}
		for _, u := range us {
			objs[u.GetKind()+"/"+u.GetName()] = object{}
		}
	}
	wantObjects(t, objs, "Deployment/shop-podinfo", "Service/shop-podinfo", "ConfigMap/shop-podinfo")
	// The render server logs the generation before it answers, but the line
	// reaches sidecarLog through the sidecar's stderr pipe, possibly after
	// the answer.
	n := waitForCount(func() int { return strings.Count(sidecarLog.String(), "command done") }, 1)
	if log := sidecarLog.String(); n != 1 || strings.Contains(log, "request refused") {
		t.Errorf("the render server served %d generations (want 1) and the log says:\n%s", n, log)
	}
}

// stopOnSIGTERM sends one SIGTERM, as the kubelet does: the sidecar ends
// within a few seconds, with status 0, and the plugin socket is gone.
func stopOnSIGTERM(t *testing.T, sidecar *exec.Cmd, exited <-chan error, sock string, sidecarLog *syncBuffer) {
	t.Helper()
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
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the plugin socket left behind: %v", err)
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

// emptiedSoon is what pattern matches once nothing does, or after 10 s.
func emptiedSoon(pattern string) []string {
	eventually(func() bool { left, err := filepath.Glob(pattern); return err == nil && len(left) == 0 })
	left, err := filepath.Glob(pattern)
	if err != nil {
		return []string{err.Error()}
	}
	return left
}

// waitForCount returns count() once it is at least want, or after 10 s.
func waitForCount(count func() int, want int) int {
	eventually(func() bool { return count() >= want })
	return count()
}

// eventually returns once cond holds, or after 10 s: for what the sidecar
// does after it answered (its log line through a pipe, a directory emptied).
func eventually(cond func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !cond() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}
