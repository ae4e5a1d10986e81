package argocd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	repoclient "github.com/argoproj/argo-cd/v3/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v3/reposerver/repository"
	"github.com/argoproj/argo-cd/v3/util/app/discovery"
	"github.com/argoproj/argo-cd/v3/util/cmp"
	"github.com/argoproj/argo-cd/v3/util/git"
	utilio "github.com/argoproj/argo-cd/v3/util/io"
	grpc_retry "github.com/grpc-ecosystem/go-grpc-middleware/retry"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The sidecar's own plugin service (`argocd-ocm-plugin serve
// --plugin-socket`), checked against the oracle: what Argo CD's repo-server
// code ends up with when it calls the plugin through the service (the
// objects, the parameter announcement, the error it shows) is what it ends
// up with through Argo CD's argocd-cmp-server running plugin.yaml
// (startCMPServer, which commands the render server TestMain starts). The
// repo-server side is Argo CD's own: repository.GenerateManifests and
// Service.GenerateManifest / GetAppDetails, which find the plugin with
// discovery.DetectConfigManagementPlugin in ARGOCD_PLUGINSOCKFILEPATH and
// stream the repository with util/cmp.

// pluginSidecar is `argocd-ocm-plugin serve --plugin-socket`, the binary
// TestMain built, in a process of its own.
type pluginSidecar struct {
	sockDir string      // what ARGOCD_PLUGINSOCKFILEPATH names for the repo-server
	tmpDir  string      // the sidecar's TMPDIR, where it unpacks repository streams
	log     *syncBuffer // its stderr: a line per command it ran
}

func startPluginSidecar(t *testing.T) *pluginSidecar {
	t.Helper()
	tmp, err := os.MkdirTemp("", "ps") // short: a socket's path holds at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) }) // last: after the sidecar ended
	sc := &pluginSidecar{sockDir: filepath.Join(tmp, "s"), tmpDir: filepath.Join(tmp, "t"), log: &syncBuffer{}}
	socket := filepath.Join(sc.sockDir, pluginName+".sock")
	if len(socket) > 107 {
		t.Fatalf("socket path %s is %d bytes, longer than sun_path holds", socket, len(socket))
	}
	for _, d := range []string{sc.sockDir, sc.tmpDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The sidecar's environment: no render server of TestMain's, a cache
	// and a temporary directory of its own (so that its stream directory is
	// its own too), one worker.
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); {
		case k == "ARGOCD_OCM_SERVER_SOCKET", k == "ARGOCD_OCM_CACHE_DIR", k == "ARGOCD_OCM_WORKERS", k == "TMPDIR",
			strings.HasPrefix(k, "ARGOCD_LOG_"):
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "TMPDIR="+sc.tmpDir, "ARGOCD_OCM_CACHE_DIR="+filepath.Join(tmp, "cache"), "ARGOCD_OCM_WORKERS=1")
	cmd := exec.Command(filepath.Join(binDir, "argocd-ocm-plugin"), "serve",
		"--socket", filepath.Join(tmp, "r", "render.sock"), "--plugin-socket", socket)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, sc.log, sc.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Closed when the sidecar has ended (waitForSocket may take the
	// closing), with its status in waitErr.
	exited := make(chan error)
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			if waitErr != nil {
				t.Errorf("sidecar after SIGTERM: %v\n%s", waitErr, sc.log)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("sidecar still ran 20 s after SIGTERM\n%s", sc.log)
		}
		if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("plugin socket left behind: %v", err)
		}
		// Every stream's directory is emptied once its request ended, and the
		// sidecar's directory of streams is gone once it stopped.
		if left, err := filepath.Glob(filepath.Join(sc.tmpDir, "argocd-ocm-plugin-streams*")); err != nil || len(left) > 0 {
			t.Errorf("the streams' work directory left in TMPDIR: %v %v", left, err)
		}
	})
	waitForSocket(t, socket, exited, sc.log)
	return sc
}

// served is how many commands the sidecar's render server ran.
func (sc *pluginSidecar) served() int { return strings.Count(sc.log.String(), "command done") }

// route is where the repo-server finds the plugin: the socket directory of
// argocd-cmp-server (the oracle) or of the sidecar's service.
type route struct {
	name    string
	sockDir string
}

func routes(sc *pluginSidecar) [2]route {
	return [2]route{{"argocd-cmp-server", filepath.Dir(pluginCfg.Address())}, {"plugin service", sc.sockDir}}
}

// use points the repo-server code of this process at r's socket directory
// (common.GetPluginSockFilePath reads the variable on every call).
func (r route) use(t *testing.T) { t.Setenv("ARGOCD_PLUGINSOCKFILEPATH", r.sockDir) }

// call runs f, which has the plugin run commands, through r, and checks
// that they ran where r says: in the sidecar for the service only (a
// comparison of argocd-cmp-server with itself would prove nothing).
func (r route) call(t *testing.T, sc *pluginSidecar, f func()) {
	t.Helper()
	r.use(t)
	before := sc.served()
	f()
	n := sc.served() - before
	if r.sockDir == sc.sockDir {
		// The log line reaches the test's buffer through the sidecar's
		// stderr pipe, possibly after the answer.
		n = waitForCount(func() int { return sc.served() - before }, 1)
	}
	if (n > 0) != (r.sockDir == sc.sockDir) {
		t.Fatalf("through %s the sidecar ran %d commands", r.name, n)
	}
}

const testRevision = "0123456789abcdef0123456789abcdef01234567"

// checkoutRequest is the repo-server's request for an Application of the
// plugin at path in a checkout.
func checkoutRequest(app, namespace, path string, plugin v1alpha1.ApplicationSourcePlugin) *repoclient.ManifestRequest {
	const url = "https://git.example.com/platform.git"
	plugin.Name = pluginName
	return &repoclient.ManifestRequest{
		Repo:              &v1alpha1.Repository{Repo: url},
		Revision:          testRevision,
		AppName:           app,
		Namespace:         namespace,
		ApplicationSource: &v1alpha1.ApplicationSource{RepoURL: url, Path: path, TargetRevision: "main", Plugin: &plugin},
		AppLabelKey:       "app.kubernetes.io/instance",
		TrackingMethod:    string(v1alpha1.TrackingMethodAnnotation),
		KubeVersion:       "1.31.0",
		ApiVersions:       []string{"v1", "apps/v1", "policy/v1"},
		ProjectName:       "default",
	}
}

// repoServerGenerate runs the repo-server's GenerateManifests for the
// Application at appPath in the checkout root through r: the plugin
// environment built from the request (ARGOCD_APP_*, ARGOCD_ENV_*, PARAM_*,
// KUBE_*), the plugin found by name, the checkout streamed, the manifests
// split into objects and labelled for tracking.
func repoServerGenerate(t *testing.T, r route, root, appPath string, q *repoclient.ManifestRequest) ([]string, error) {
	t.Helper()
	r.use(t)
	resp, err := repository.GenerateManifests(testContext(t), appPath, root, testRevision, q, false, &git.NoopCredsStore{},
		resource.MustParse("100Mi"), utilio.NewRandomizedTempPaths(t.TempDir()))
	if err != nil {
		return nil, err
	}
	if resp.SourceType != string(v1alpha1.ApplicationSourceTypePlugin) {
		t.Errorf("%s: source type %q", r.name, resp.SourceType)
	}
	return resp.Manifests, nil
}

// canonical is a list of objects as JSON with sorted keys, sorted: two
// lists are the same objects when their canonical forms are equal (the
// order of objects means nothing to Argo CD, which sorts them by sync wave
// and kind).
func canonical(t *testing.T, ms []string) []string {
	t.Helper()
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		var v any
		if err := json.Unmarshal([]byte(m), &v); err != nil {
			t.Fatalf("manifest is not JSON: %v\n%s", err, m)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

func sameObjects(t *testing.T, oracle, got []string) {
	t.Helper()
	a, b := canonical(t, oracle), canonical(t, got)
	if len(a) == 0 {
		t.Fatal("argocd-cmp-server's route rendered no objects: nothing to compare")
	}
	if slices.Equal(a, b) {
		return
	}
	t.Errorf("the plugin service gave %d objects, argocd-cmp-server %d", len(b), len(a))
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			t.Errorf("first difference:\nargocd-cmp-server: %s\nplugin service:    %s", x, y)
			return
		}
	}
}

// pluginLine is the plugin's error line in what Argo CD shows.
func pluginLine(msg string) string {
	i := strings.Index(msg, "argocd-ocm-plugin: ")
	if i < 0 {
		return ""
	}
	line, _, _ := strings.Cut(msg[i:], "\n")
	return strings.TrimSpace(line)
}

// checkServiceError checks the error Argo CD shows for a generation the
// plugin service failed: a gRPC status (code) carrying exactly one plugin
// line, naming the Application, and no path of the sidecar's.
func checkServiceError(t *testing.T, sc *pluginSidecar, err error, code codes.Code, app string) string {
	t.Helper()
	if err == nil {
		t.Fatal("the plugin service's route did not fail")
	}
	msg := err.Error()
	t.Logf("Argo CD shows: %s", msg)
	if st, ok := status.FromError(err); !ok || st.Code() != code {
		t.Errorf("status %v (a gRPC status: %v), want %v", st.Code(), ok, code)
	}
	if n := strings.Count(msg, "argocd-ocm-plugin: "); n != 1 {
		t.Errorf("%d plugin lines, want one: %q", n, msg)
	}
	if line := pluginLine(msg); !strings.HasPrefix(line, "argocd-ocm-plugin: application "+app+": ") {
		t.Errorf("plugin line %q does not name the Application %s", line, app)
	}
	for _, p := range []string{sc.tmpDir, filepath.Dir(sc.tmpDir), "argocd-ocm-plugin-streams", os.TempDir() + string(filepath.Separator)} {
		if strings.Contains(msg, p) {
			t.Errorf("the error names the path %s: %q", p, msg)
		}
	}
	return pluginLine(msg)
}

func strs(name string, values ...string) v1alpha1.ApplicationSourcePluginParameter {
	return v1alpha1.ApplicationSourcePluginParameter{Name: name, OptionalArray: &v1alpha1.OptionalArray{Array: values}}
}

// Argo CD finds the service by the plugin's name, as it finds
// argocd-cmp-server's socket: the same plugin configuration (no discovery, no
// git credentials), the same answer to a repository match, and neither is
// picked for an Application that names no plugin.
func TestPluginServiceDiscovery(t *testing.T) {
	sc := startPluginSidecar(t)
	root, app := gitCheckout(t)
	env := []string{"ARGOCD_APP_NAME=shop"}
	type answers struct {
		DiscoveryConfigured, ProvideGitCreds bool // CheckPluginConfiguration
		Supported, DiscoveryEnabled          bool // MatchRepository
	}
	var got [2]answers
	for i, r := range routes(sc) {
		r.use(t)
		conn, client, err := discovery.DetectConfigManagementPlugin(testContext(t), app, root, pluginName, env, nil)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		cfg, err := client.CheckPluginConfiguration(testContext(t), &emptypb.Empty{})
		if err != nil {
			t.Fatalf("%s: CheckPluginConfiguration: %v", r.name, err)
		}
		st, err := client.MatchRepository(testContext(t), grpc_retry.Disable())
		if err != nil {
			t.Fatal(err)
		}
		if err := cmp.SendRepoStream(st.Context(), app, root, st, env, nil); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		match, err := st.CloseAndRecv()
		if err != nil {
			t.Fatalf("%s: MatchRepository: %v", r.name, err)
		}
		utilio.Close(conn)
		got[i] = answers{cfg.IsDiscoveryConfigured, cfg.ProvideGitCreds, match.IsSupported, match.IsDiscoveryEnabled}
		t.Logf("%s: %+v", r.name, got[i])

		// Without a plugin name the repo-server asks every socket whether
		// it supports the repository: a plugin without discovery never does.
		if _, _, err := discovery.DetectConfigManagementPlugin(testContext(t), app, root, "", env, nil); err == nil ||
			!strings.Contains(err.Error(), "could not find plugin supporting the given repository") {
			t.Errorf("%s: an Application naming no plugin: %v, want no plugin found", r.name, err)
		}
	}
	if got[0] != got[1] {
		t.Errorf("argocd-cmp-server answers %+v, the plugin service %+v", got[0], got[1])
	}
	if got[1].DiscoveryConfigured || got[1].ProvideGitCreds {
		t.Errorf("the plugin service configures discovery or asks for git credentials: %+v", got[1])
	}
}

// The examples of cmpserver_test.go, generated by the repo-server's
// GenerateManifests through each route: the same objects, and for a
// failure the same plugin line.
func TestPluginServiceGenerateMatchesCMPServer(t *testing.T) {
	sc := startPluginSidecar(t)
	root, app := gitCheckout(t)
	env := func(kv ...string) v1alpha1.Env {
		var e v1alpha1.Env
		for i := 0; i < len(kv); i += 2 {
			e = append(e, &v1alpha1.EnvEntry{Name: kv[i], Value: kv[i+1]})
		}
		return e
	}
	type tc struct {
		name     string
		app      string
		plugin   v1alpha1.ApplicationSourcePlugin
		replicas any      // of Deployment/<app>-podinfo; nil: no such check
		kinds    []string // objects that must be among them
		fails    []string // what the plugin line mentions; nil: succeeds
	}
	for _, c := range []tc{
		{name: "parameters", app: "shop", plugin: v1alpha1.ApplicationSourcePlugin{Parameters: v1alpha1.ApplicationSourcePluginParameters{
			str("repository", "ctf"), str("component", podinfo), str("version", "1.0.0"), str("values", "replicaCount: 3\n")}},
			replicas: float64(3), kinds: []string{"Deployment/shop-podinfo", "Service/shop-podinfo", "ConfigMap/shop-podinfo"}},
		{name: "env", app: "shop", plugin: v1alpha1.ApplicationSourcePlugin{Env: env("REPOSITORY", "ctf", "COMPONENT", podinfo,
			"VERSION", "1.0.0", "VALUES", "replicaCount: 4\nui: {message: hello $ARGOCD_APP_NAME}")},
			replicas: float64(4), kinds: []string{"Deployment/shop-podinfo"}},
		{name: "precedence and value files", app: "shop", plugin: v1alpha1.ApplicationSourcePlugin{
			Env:        env("REPOSITORY", "does-not-exist", "COMPONENT", podinfo, "VERSION", "9.9.9"),
			Parameters: v1alpha1.ApplicationSourcePluginParameters{str("repository", "ctf"), str("version", "1.0.0"), strs("value-files", "values-prod.yaml")}},
			replicas: float64(5)},
		{name: "kustomization", app: "extras", plugin: v1alpha1.ApplicationSourcePlugin{Env: env("REPOSITORY", "ctf", "COMPONENT", podinfoExtras, "VERSION", "1.0.0")}},
		{name: "unknown version", app: "shop", plugin: v1alpha1.ApplicationSourcePlugin{Parameters: v1alpha1.ApplicationSourcePluginParameters{
			str("repository", "ctf"), str("component", podinfo), str("version", "9.9.9")}},
			fails: []string{"component example.com/demo/podinfo:9.9.9:", "available: 1.0.0"}},
		{name: "render failure", app: "shop", plugin: v1alpha1.ApplicationSourcePlugin{Parameters: v1alpha1.ApplicationSourcePluginParameters{
			str("repository", "ctf"), str("component", "example.com/demo/catalog"), str("version", "2.3.0"), str("values", "image: {tag: 7}")}},
			fails: []string{"component example.com/demo/catalog:2.3.0: resource chart:"}},
		{name: "missing inputs", app: "shop", fails: []string{"missing repository, component, version"}},
		{name: "unknown resource", app: "shop", plugin: v1alpha1.ApplicationSourcePlugin{Env: env("REPOSITORY", "ctf", "COMPONENT", podinfo,
			"VERSION", "1.0.0", "RESOURCE", "nope")}, fails: []string{"component example.com/demo/podinfo:1.0.0:", "nope"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ms [2][]string
			var errs [2]error
			for i, r := range routes(sc) {
				r.call(t, sc, func() {
					ms[i], errs[i] = repoServerGenerate(t, r, root, app, checkoutRequest(c.app, "shop-ns", "apps/demo", *c.plugin.DeepCopy()))
				})
			}
			if c.fails != nil {
				if errs[0] == nil {
					t.Fatalf("argocd-cmp-server's route did not fail: %d manifests", len(ms[0]))
				}
				line := checkServiceError(t, sc, errs[1], codes.Unknown, c.app)
				if want := pluginLine(errs[0].Error()); line != want {
					t.Errorf("plugin line through the service %q, through argocd-cmp-server %q", line, want)
				}
				for _, m := range c.fails {
					if !strings.Contains(line, m) {
						t.Errorf("plugin line %q lacks %q", line, m)
					}
				}
				if ms[1] != nil {
					t.Errorf("manifests with an error: %d", len(ms[1]))
				}
				return
			}
			for i, err := range errs {
				if err != nil {
					t.Fatalf("%s: %v", routes(sc)[i].name, err)
				}
			}
			sameObjects(t, ms[0], ms[1])
			objs := decodeManifests(t, ms[1])
			wantObjects(t, objs, c.kinds...)
			if c.replicas != nil {
				if r := replicas(objs["Deployment/"+c.app+"-podinfo"]); r != c.replicas {
					t.Errorf("replicas %v, want %v", r, c.replicas)
				}
			}
		})
	}
}

// The Application directory is a subdirectory of a bigger repository (the
// repo-server streams the whole checkout): links inside the directory are
// followed, what lies outside it is never read, through either route; a
// stream the service refuses is one error line naming the Application.
func TestPluginServiceApplicationInSubdirectory(t *testing.T) {
	sc := startPluginSidecar(t)
	root := t.TempDir()
	const secret = "s3cr3t-outside-the-application"
	writeFile(t, filepath.Join(root, "README.md"), "a platform repository\n")
	writeFile(t, filepath.Join(root, "team", "secret.yaml"), "replicaCount: 42\ntoken: "+secret+"\n")
	// The directory is not named after the Application: errors must name
	// the Application (ARGOCD_APP_NAME), not the directory.
	app := filepath.Join(root, "team", "apps", "web")
	copyDir(t, filepath.Join(repoRoot, "testdata", "demo", "ctf"), filepath.Join(app, "ctf"))
	writeFile(t, filepath.Join(app, "values-prod.yaml"), "replicaCount: 5\n")
	for link, target := range map[string]string{
		"ctf-link":         "ctf",                                      // a directory
		"values-link.yaml": "values-prod.yaml",                         // a file beside it
		"conf/values.yaml": "../values-prod.yaml",                      // up, and still inside
		"leak.yaml":        "../../secret.yaml",                        // inside the repository, outside the Application
		"abs.yaml":         filepath.Join(root, "team", "secret.yaml"), // absolute
		"root.yaml":        "/values-prod.yaml",                        // absolute: Argo CD takes it from the link's directory
	} {
		p := filepath.Join(app, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	request := func(params ...v1alpha1.ApplicationSourcePluginParameter) *repoclient.ManifestRequest {
		return checkoutRequest("shop", "shop", "team/apps/web", v1alpha1.ApplicationSourcePlugin{
			Parameters: append(v1alpha1.ApplicationSourcePluginParameters{str("component", podinfo), str("version", "1.0.0")}, params...)})
	}
	generate := func(t *testing.T, params ...v1alpha1.ApplicationSourcePluginParameter) (ms [2][]string, errs [2]error) {
		for i, r := range routes(sc) {
			ms[i], errs[i] = repoServerGenerate(t, r, root, app, request(params...))
		}
		return ms, errs
	}
	generateChecked := func(t *testing.T, params ...v1alpha1.ApplicationSourcePluginParameter) (ms [2][]string, errs [2]error) {
		for i, r := range routes(sc) {
			r.call(t, sc, func() { ms[i], errs[i] = repoServerGenerate(t, r, root, app, request(params...)) })
		}
		return ms, errs
	}

	for _, c := range []struct {
		name   string
		params []v1alpha1.ApplicationSourcePluginParameter
	}{
		{"linked repository", []v1alpha1.ApplicationSourcePluginParameter{str("repository", "ctf-link"), strs("value-files", "values-prod.yaml")}},
		{"linked value file", []v1alpha1.ApplicationSourcePluginParameter{str("repository", "ctf"), strs("value-files", "values-link.yaml")}},
		{"link in a subdirectory", []v1alpha1.ApplicationSourcePluginParameter{str("repository", "ctf"), strs("value-files", "conf/values.yaml")}},
		{"absolute link", []v1alpha1.ApplicationSourcePluginParameter{str("repository", "ctf"), strs("value-files", "root.yaml")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, errs := generateChecked(t, c.params...)
			for i, err := range errs {
				if err != nil {
					t.Fatalf("%s: %v", routes(sc)[i].name, err)
				}
			}
			sameObjects(t, ms[0], ms[1])
			if r := replicas(decodeManifests(t, ms[1])["Deployment/shop-podinfo"]); r != float64(5) {
				t.Errorf("replicas %v, want 5 from values-prod.yaml", r)
			}
		})
	}

	// Outside the Application's directory: argocd-cmp-server unpacks the
	// whole repository and the plugin refuses what leaves the Application's
	// directory; the service unpacks that directory only, with links leaving
	// it pointing nowhere, and the plugin says the same. Neither shows
	// anything of the file.
	for _, c := range []struct{ name, file string }{
		{"parent directory", "../../secret.yaml"},
		{"link out of the directory", "leak.yaml"},
		{"absolute link out of the directory", "abs.yaml"},
		{"absolute name", "/etc/passwd"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, errs := generateChecked(t, str("repository", "ctf"), strs("value-files", c.file))
			if errs[0] == nil {
				t.Errorf("argocd-cmp-server's route read %s: %d manifests", c.file, len(ms[0]))
			}
			line := checkServiceError(t, sc, errs[1], codes.Unknown, "shop")
			if oracle := pluginLine(fmt.Sprint(errs[0])); line != oracle {
				t.Errorf("plugin line through the service %q, through argocd-cmp-server %q", line, oracle)
			}
			for i, err := range errs {
				if msg := fmt.Sprint(err); strings.Contains(msg, secret) || strings.Contains(msg, "replicaCount: 42") || strings.Contains(msg, "root:x:0") {
					t.Errorf("%s shows the file's content: %s", routes(sc)[i].name, msg)
				}
			}
		})
	}

	// A stream the service refuses (deeper than its Limits): Argo CD shows
	// one line naming the Application, and no path of the sidecar's.
	t.Run("refused stream", func(t *testing.T) {
		deep := filepath.Join(append([]string{app, "deep"}, slices.Repeat([]string{"d"}, 70)...)...)
		writeFile(t, filepath.Join(deep, "x.yaml"), "x: 1\n")
		t.Cleanup(func() { os.RemoveAll(filepath.Join(app, "deep")) })
		_, errs := generate(t, str("repository", "ctf"))
		if errs[0] != nil {
			t.Fatalf("argocd-cmp-server's route: %v", errs[0])
		}
		line := checkServiceError(t, sc, errs[1], codes.InvalidArgument, "shop")
		if !strings.Contains(line, "nested deeper than") {
			t.Errorf("plugin line %q does not say why", line)
		}
	})
}

// The parameters panel: Argo CD's GetAppDetails for the example Application
// announces the same parameters, in the same order, through either route,
// and shows the same plugin line when the announcement fails.
func TestPluginServiceParametersMatchCMPServer(t *testing.T) {
	sc := startPluginSidecar(t)
	s := newRepoService(t)
	base := loadApplication(t, "manifests/examples/application-offline.yaml")
	set := func(name, value string) func(*v1alpha1.ApplicationSourcePlugin) {
		return func(p *v1alpha1.ApplicationSourcePlugin) {
			for i := range p.Parameters {
				if p.Parameters[i].Name == name {
					p.Parameters[i].String_ = &value
				}
			}
		}
	}
	for _, c := range []struct {
		name  string
		edit  func(*v1alpha1.ApplicationSourcePlugin)
		check func(t *testing.T, as []*repoclient.ParameterAnnouncement)
		fails string
	}{
		{name: "example", edit: func(*v1alpha1.ApplicationSourcePlugin) {}, check: func(t *testing.T, as []*repoclient.ParameterAnnouncement) {
			if a := announced(as, "resolved-version"); a == nil || a.String_ != "1.0.0" {
				t.Errorf("resolved-version %+v, want 1.0.0", a)
			}
		}},
		{name: "range", edit: set("version", "~1.0"), check: func(t *testing.T, as []*repoclient.ParameterAnnouncement) {
			if a := announced(as, "version"); a == nil || !strings.Contains(a.Tooltip, `"~1.0" resolves to 1.0.0`) {
				t.Errorf("version %+v", a)
			}
		}},
		{name: "no component yet", edit: func(p *v1alpha1.ApplicationSourcePlugin) { p.Parameters = nil },
			check: func(t *testing.T, as []*repoclient.ParameterAnnouncement) {
				if a := announced(as, "resolved-version"); a != nil {
					t.Errorf("resolved-version announced without a component: %+v", a)
				}
			}},
		{name: "unknown version", edit: set("version", "3.0.0"), fails: "argocd-ocm-plugin: application demo: component example.com/demo/podinfo:3.0.0:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := base.DeepCopy()
			c.edit(app.Spec.Source.Plugin)
			req := manifestRequest(t, app)
			var got [2][]*repoclient.ParameterAnnouncement
			var errs [2]error
			for i, r := range routes(sc) {
				var resp *repoclient.RepoAppDetailsResponse
				r.call(t, sc, func() {
					resp, errs[i] = s.GetAppDetails(testContext(t), &repoclient.RepoServerAppDetailsQuery{
						Repo: req.Repo, Source: req.ApplicationSource, AppName: app.Name, NoCache: true})
				})
				if errs[i] == nil {
					if resp.Type != string(v1alpha1.ApplicationSourceTypePlugin) || resp.Plugin == nil {
						t.Fatalf("%s: details %+v", r.name, resp)
					}
					got[i] = resp.Plugin.ParametersAnnouncement
				}
			}
			if c.fails != "" {
				if errs[0] == nil {
					t.Fatal("argocd-cmp-server's route did not fail")
				}
				line := checkServiceError(t, sc, errs[1], codes.Unknown, app.Name)
				if want := pluginLine(errs[0].Error()); line != want || !strings.HasPrefix(line, c.fails) {
					t.Errorf("plugin line through the service %q, through argocd-cmp-server %q, want %q…", line, want, c.fails)
				}
				return
			}
			for i, err := range errs {
				if err != nil {
					t.Fatalf("%s: %v", routes(sc)[i].name, err)
				}
			}
			a, err := json.Marshal(got[0])
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(got[1])
			if err != nil {
				t.Fatal(err)
			}
			if len(got[0]) == 0 || string(a) != string(b) {
				t.Errorf("announcements differ:\nargocd-cmp-server: %s\nplugin service:    %s", a, b)
			}
			c.check(t, got[1])
		})
	}
}

func announced(as []*repoclient.ParameterAnnouncement, name string) *repoclient.ParameterAnnouncement {
	for _, a := range as {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// The example Applications through the repo-server's Service (a git
// checkout of a local repository, as in reposerver_test.go): the same
// objects through either route, the platform's child Applications included.
func TestPluginServiceRepoServerExamples(t *testing.T) {
	sc := startPluginSidecar(t)
	s := newRepoService(t)
	for _, file := range []string{"application-offline.yaml", "app-of-apps/apps/podinfo.yaml", "app-of-apps/apps/catalog.yaml",
		"app-of-apps/apps/podinfo-extras.yaml", "app-of-apps/platform.yaml"} {
		t.Run(file, func(t *testing.T) {
			app := loadApplication(t, "manifests/examples/"+file)
			var ms [2][]string
			for i, r := range routes(sc) {
				var resp *repoclient.ManifestResponse
				var err error
				r.call(t, sc, func() { resp, err = s.GenerateManifest(testContext(t), manifestRequest(t, app)) })
				if err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
				ms[i] = resp.Manifests
			}
			sameObjects(t, ms[0], ms[1])
		})
	}
}
