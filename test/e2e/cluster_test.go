package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Fixed ports: the network namespace is the run's own.
const (
	etcdAddr         = "127.0.0.1:2379"
	redisAddr        = "127.0.0.1:6379"
	apiserverURL     = "https://127.0.0.1:6443"
	repoServerAddr   = "127.0.0.1:8081" // the repo-server Service: a proxy to the replicas (fleet_infra_test.go)
	repoServer1Addr  = "127.0.0.1:8091" // the first replica's repo-server
	repoMetrics      = "127.0.0.1:8084"
	controllerAddr   = "127.0.0.1:8082" // the controller's metrics (it binds 0.0.0.0:8082)
	sidecarMetrics   = "127.0.0.1:9464"
	generatorAddr    = "127.0.0.1:8090" // argocd-ocm-plugin generator (scenario f)
	commitServerAddr = "127.0.0.1:8087" // argocd-commit-server (scenario g)
	argocdNamespace  = "argocd"
	pluginName       = "argocd-ocm-plugin" // spec.source.plugin.name: the sidecar's socket is <pluginName>.sock
)

var appGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// cluster is one Argo CD with its API server, and the plugin's sidecar.
type cluster struct {
	dir    string
	procs  []*proc
	token  string
	cfg    *rest.Config
	dyn    dynamic.Interface
	gitURL string
	faker  *faker

	etcd, redis, apiserver, sidecar, repoServer, controller *proc
	startup                                                 map[string]time.Duration

	registry *proc        // the CNCF distribution registry (fleet_infra_test.go)
	service  *repoService // the repo-server Service: connections spread over the replicas
	replicas []*replica   // repo-server replicas, each with its sidecar; the first is sidecar and repoServer
}

func newCluster() (*cluster, error) {
	dir, err := os.MkdirTemp("", "e2e") // short: unix socket paths
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, startup: map[string]time.Duration{}}
	for _, d := range []string{"home", "plugins", "policy", "sidecar-tmp", "repo-tmp", "controller-tmp", "cache", "docker", "redis", "certs", "registry"} {
		if err := os.MkdirAll(path(dir, d), 0o755); err != nil {
			return c, err
		}
	}
	return c, nil
}

// baseEnv is what every process gets: no host ARGOCD_/KUBE settings.
func (c *cluster) baseEnv(tmp string) []string {
	return []string{
		"PATH=" + pluginBin + ":" + e2eBin + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + path(c.dir, "home"),
		"TMPDIR=" + path(c.dir, tmp),
		"LANG=C.UTF-8",
	}
}

func (c *cluster) up() error {
	t0 := time.Now()
	if err := c.gitRepo(); err != nil {
		return fmt.Errorf("git repository: %w", err)
	}
	c.startup["git repository"] = time.Since(t0)

	t1 := time.Now()
	var err error
	c.etcd, err = c.start("etcd", c.baseEnv("home"), "etcd", "--name", "e2e", "--data-dir", path(c.dir, "etcd"),
		"--listen-client-urls", "http://"+etcdAddr, "--advertise-client-urls", "http://"+etcdAddr,
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "e2e=http://127.0.0.1:2380", "--log-level", "warn")
	if err != nil {
		return err
	}
	c.redis, err = c.start("redis", c.baseEnv("home"), "redis-server", "--bind", "127.0.0.1", "--port", "6379",
		"--save", "", "--appendonly", "no", "--dir", path(c.dir, "redis"))
	if err != nil {
		return err
	}
	if err := c.startRegistry(); err != nil {
		return err
	}
	if err := c.startSidecar(); err != nil {
		return err
	}
	if err := c.startAPIServer(); err != nil {
		return err
	}
	if err := c.etcd.waitFor("health", 30*time.Second, httpOK("http://"+etcdAddr+"/health")); err != nil {
		return err
	}
	if err := c.apiserver.waitFor("/readyz", 90*time.Second, c.apiReady); err != nil {
		return err
	}
	c.startup["kube-apiserver ready"] = time.Since(t1)
	if c.dyn, err = dynamic.NewForConfig(c.cfg); err != nil {
		return err
	}
	c.faker = newFaker(c.dyn)
	if err := c.bootstrap(); err != nil {
		return fmt.Errorf("Argo CD's CRDs and settings: %w", err)
	}
	c.startup["Argo CD CRDs and settings"] = time.Since(t1)
	if err := c.redis.waitFor("a listener", 30*time.Second, dials("tcp", redisAddr)); err != nil {
		return err
	}
	if err := c.startArgoCD(); err != nil {
		return err
	}
	if err := c.sidecar.waitFor("the plugin socket", 30*time.Second, dials("unix", c.cmpSocket())); err != nil {
		return err
	}
	c.startup["everything ready"] = time.Since(t1)
	return nil
}

// gitRepo commits the Application directories the scenarios use into a
// bare repository, read by the repo-server as file://.
func (c *cluster) gitRepo() error {
	work, bare := path(c.dir, "git", "work"), path(c.dir, "git", "repo.git")
	steps := [][]string{
		{"mkdir", "-p", path(work, "testdata"), path(work, "distro", "shop"), path(work, "hostile"), path(work, "fleet")},
		{"cp", "-r", path(repoRoot, "testdata", "demo"), path(work, "testdata", "demo")},
		{"cp", path(repoRoot, "testdata", "distro", "idp-bundle.tgz"), path(work, "distro", "shop")},
		{"cp", "-r", path(fixtures, "hostile"), path(work, "hostile", "hostile")},
		{"cp", "-r", path(fixtures, "ctf"), path(work, "hostile", "ctf")},
		// A component version signed keyless (Sigstore/v1alpha1), with
		// the trusted root it verifies with.
		{"cp", "-r", path(repoRoot, "testdata", "sigstore"), path(work, "keyless")},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v: %s", s, err, out)
		}
	}
	if err := os.WriteFile(path(work, "distro", "shop", "definition.yaml"), []byte(hookDefinition), 0o644); err != nil {
		return err
	}
	// The fleet's Applications name a registry: their directory holds nothing the plugin reads.
	if err := os.WriteFile(path(work, "fleet", "README.md"), []byte("The fleet scenarios' Applications (test/e2e/fleet_test.go).\n"), 0o644); err != nil {
		return err
	}
	git := func(dir string, args ...string) error {
		cmd := exec.Command("git", append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir, cmd.Env = dir, c.baseEnv("home")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
		return nil
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "e2e"}} {
		if err := git(work, args...); err != nil {
			return err
		}
	}
	if err := git(c.dir, "clone", "-q", "--bare", work, bare); err != nil {
		return err
	}
	c.gitURL = "file://" + bare
	return nil
}

// hookDefinition (as test/argocd/hooks_test.go): the catalog chart in wave
// 2, its custom resource in wave 3, a PostSync Job deleted when it
// succeeded; the chart's own pre-install Job is PreSync (wave -5,
// before-hook-creation).
const hookDefinition = `apiVersion: deploy.argocd-ocm-plugin.io/v1alpha1
kind: ComponentDeployment
metadata: {name: e2e}
spec:
  renders:
    - name: catalog
      resource: {name: chart}
      syncWave: 2
      ordering:
        - target: {kind: Product}
          syncWave: 3
  jobs:
    - name: smoke
      render: catalog
      image: {resource: {name: api-image}}
      args: [smoke]
      hook: {type: PostSync, deletePolicy: HookSucceeded}
`

// Keyless signatures (scenario j): the fixture's signer, and the identity
// the impostor project's rule requires instead.
const (
	keylessIdentity  = "https://github.com/example-org/platform/.github/workflows/release.yml@refs/heads/main"
	keylessImpostor  = "https://github.com/example-org/platform/.github/workflows/impostor.yml@refs/heads/main"
	keylessIssuerURL = "https://token.actions.githubusercontent.com"
)

// keylessPolicy is the sidecar policy of the run: the projects of scenario j
// require the keyless signature "release" (the right signer, or another
// one); every other project keeps what the run needs: the Application's
// local archives and the run's loopback registry over plain HTTP (with a
// policy, the sidecar refuses ARGOCD_OCM_PLAIN_HTTP: the policy says it).
func keylessPolicy() string {
	root := path(repoRoot, "testdata", "sigstore", "trusted_root.json")
	rule := func(project, identity string) string {
		return fmt.Sprintf(`- name: %s
  projects: [%s]
  signatures:
  - name: release
    trustedRoot: %s
    certificateIdentity: %s
    certificateOIDCIssuer: %s
`, project, project, root, identity, keylessIssuerURL)
	}
	return "apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\nrules:\n" +
		rule("keyless-release", keylessIdentity) + rule("keyless-impostor", keylessImpostor) +
		fmt.Sprintf("default:\n  localArchives: true\n  repositories: [{host: %q}]\n  plainHTTP: [%q]\n", registryAddr, registryAddr)
}

func (c *cluster) cmpSocket() string { return path(c.dir, "plugins", pluginName+".sock") }

// startSidecar runs the sidecar as manifests/install's container does
// (sidecarCommand: `argocd-ocm-plugin serve --plugin-socket
// <plugins>/argocd-ocm-plugin.sock` and the container's environment), in the
// run's directories; its metrics are on (ARGOCD_OCM_METRICS_ADDR, loopback)
// and its policy trusts the run's loopback registry (keylessPolicy).
func (c *cluster) startSidecar() error {
	pol := path(c.dir, "policy", "policy.yaml")
	if err := os.WriteFile(pol, []byte(keylessPolicy()), 0o644); err != nil {
		return err
	}
	args, env, err := c.sidecarCommand("")
	if err != nil {
		return err
	}
	env = append(env, "ARGOCD_OCM_POLICY="+pol, "ARGOCD_OCM_METRICS_ADDR="+sidecarMetrics)
	t := time.Now()
	c.sidecar, err = c.start("sidecar", env, args...)
	if err != nil {
		return err
	}
	go func() {
		if c.sidecar.waitFor("socket", 30*time.Second, dials("unix", c.cmpSocket())) == nil {
			c.startup["sidecar ready (own start)"] = time.Since(t)
		}
	}()
	return nil
}

func (c *cluster) startAPIServer() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	tok := make([]byte, 24)
	_, _ = rand.Read(tok)
	c.token = base64.RawURLEncoding.EncodeToString(tok)
	for name, data := range map[string][]byte{
		"sa.key": keyPEM, "sa.pub": pubPEM,
		"tokens.csv": []byte(c.token + ",e2e-admin,e2e-admin,system:masters\n"),
	} {
		if err := os.WriteFile(path(c.dir, "certs", name), data, 0o600); err != nil {
			return err
		}
	}
	c.apiserver, err = c.start("kube-apiserver", c.baseEnv("home"), path(e2eBin, "kube-apiserver"),
		"--etcd-servers=http://"+etcdAddr,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=6443",
		"--cert-dir="+path(c.dir, "certs"),
		"--token-auth-file="+path(c.dir, "certs", "tokens.csv"),
		"--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+path(c.dir, "certs", "sa.pub"),
		"--service-account-signing-key-file="+path(c.dir, "certs", "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--endpoint-reconciler-type=none",
		"--disable-admission-plugins=ServiceAccount",
	)
	if err != nil {
		return err
	}
	c.cfg = &rest.Config{Host: apiserverURL, BearerToken: c.token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200,
		WarningHandler: rest.NoWarnings{}} // Argo CD's finalizer name draws a warning per Application
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: e2e, user: {token: %q}}]
contexts: [{name: e2e, context: {cluster: e2e, user: e2e, namespace: %s}}]
current-context: e2e
`, apiserverURL, c.token, argocdNamespace)
	return os.WriteFile(path(c.dir, "kubeconfig"), []byte(kubeconfig), 0o600)
}

func (c *cluster) apiReady() bool {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, _ := http.NewRequest(http.MethodGet, apiserverURL+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// bootstrap applies Argo CD's CRDs (server-side, as they are too large for a
// client-side apply) and the settings argocd-server or the install
// manifests would create, then waits until the API server serves the CRDs.
func (c *cluster) bootstrap() error {
	files, err := filepath.Glob(path(argoDir, "manifests", "crds", "*-crd.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s: %v", argoDir, err)
	}
	var docs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		docs = append(docs, string(b))
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	labels := "labels: {app.kubernetes.io/part-of: argocd}"
	docs = append(docs,
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: argocd}",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd, "+labels+"}",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-rbac-cm, namespace: argocd, "+labels+"}",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cmd-params-cm, namespace: argocd, "+labels+"}",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-ssh-known-hosts-cm, namespace: argocd, "+labels+"}",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-tls-certs-cm, namespace: argocd, "+labels+"}",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-gpg-keys-cm, namespace: argocd, "+labels+"}",
		"apiVersion: v1\nkind: Secret\nmetadata: {name: argocd-secret, namespace: argocd, "+labels+"}\ndata: {server.secretkey: "+base64.StdEncoding.EncodeToString(secret)+"}",
	)
	// Each request has a deadline of its own. One 60 s deadline used to
	// cover every apply and every wait: a server-side apply of
	// applicationset-crd.yaml (1.5 MB) takes seconds on a loaded machine,
	// and the last wait (applicationsets) got what was left of it.
	var slowest time.Duration
	for _, d := range docs {
		t := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
		err := c.apply(ctx, d)
		cancel()
		if err != nil {
			return fmt.Errorf("%w (after %s)", err, time.Since(t).Round(time.Millisecond))
		}
		slowest = max(slowest, time.Since(t))
	}
	c.startup["slowest CRD or settings apply"] = slowest
	// A CRD is established by two writes of the API server's own
	// controllers (names accepted, then established), each a write of the
	// whole CRD as the apply was: the wait scales with what the slowest
	// apply took on this machine now, from a floor for an idle one.
	within := min(max(establishFloor, 10*slowest), establishCap)
	for _, name := range []string{"applications.argoproj.io", "appprojects.argoproj.io", "applicationsets.argoproj.io"} {
		if err := c.waitEstablished(name, within, slowest); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
	defer cancel()
	return c.apply(ctx, `apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: argocd}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]`)
}

const (
	applyTimeout   = 3 * time.Minute  // one apply request: a stuck API server, not a slow one
	establishFloor = 30 * time.Second // a CRD's establishment on an idle machine takes well under a second
	establishCap   = 10 * time.Minute
)

// waitEstablished waits until the CRD name is Established, for at most
// within. It watches the CRD instead of polling it: a GET of Argo CD's
// ApplicationSet CRD moves over a megabyte through the API server and the
// decoder, work that ten polls a second added to the loaded API server that
// is to establish it. The error names the CRD's last conditions, the time
// the slowest apply took, and the end of the API server's log.
func (c *cluster) waitEstablished(name string, within, slowestApply time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	crds := c.dyn.Resource(crdGVR)
	last := "not found"
	for ctx.Err() == nil {
		u, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() == nil {
				last = err.Error()
				sleep(ctx, time.Second)
			}
			continue
		}
		if condition(u, "Established") == "True" {
			return nil
		}
		last = conditions(u)
		w, err := crds.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: u.GetResourceVersion()})
		if err != nil {
			if ctx.Err() == nil {
				last = err.Error()
				sleep(ctx, time.Second)
			}
			continue
		}
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type == watch.Deleted {
				break // an error (an expired version): get it again
			}
			if condition(u, "Established") == "True" {
				w.Stop()
				return nil
			}
			last = conditions(u)
		}
		w.Stop() // ended by the deadline or the server: get it again
	}
	if c.apiserver.exited() {
		return fmt.Errorf("CRD %s not established: kube-apiserver exited (%v)\n%s", name, c.apiserver.err, c.apiserver.tail(40))
	}
	return fmt.Errorf("CRD %s not established within %s (10 times the slowest apply, %s, at least %s); its conditions: %s\n%s",
		name, within, slowestApply.Round(time.Millisecond), establishFloor, last, c.apiserver.tail(40))
}

// conditions is a status.conditions list as "Type=Status (Reason: Message)".
func conditions(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v (%v: %v)", m["type"], m["status"], m["reason"], m["message"]))
	}
	if len(out) == 0 {
		return "none yet"
	}
	return strings.Join(out, ", ")
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// apply server-side applies one YAML document.
func (c *cluster) apply(ctx context.Context, doc string) error {
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	res := strings.ToLower(gvk.Kind) + "s"
	if gvk.Kind == "CustomResourceDefinition" {
		res = "customresourcedefinitions"
	}
	gvr := gvk.GroupVersion().WithResource(res)
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = c.dyn.Resource(gvr)
	if ns := u.GetNamespace(); ns != "" {
		ri = c.dyn.Resource(gvr).Namespace(ns)
	}
	force := true
	if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "e2e", Force: &force}); err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, u.GetName(), err)
	}
	return nil
}

// installedRepoServerEnv is what manifests/install sets in
// argocd-cmd-params-cm for the repo-server: an Application annotated with
// argocd.argoproj.io/manifest-generate-paths streams only those paths to
// the plugin, not its whole repository.
var installedRepoServerEnv = []string{"ARGOCD_REPO_SERVER_PLUGIN_USE_MANIFEST_GENERATE_PATHS=true"}

// startArgoCD starts Argo CD's repo-server and application-controller, out
// of cluster: ARGOCD_FAKE_IN_CLUSTER makes https://kubernetes.default.svc the
// kubeconfig's API server.
func (c *cluster) startArgoCD() error {
	t := time.Now()
	var err error
	c.repoServer, err = c.start("repo-server", append(append(c.baseEnv("repo-tmp"),
		"ARGOCD_PLUGINSOCKFILEPATH="+path(c.dir, "plugins"),
		"ARGOCD_GPG_ENABLED=false",
		"KUBECONFIG="+path(c.dir, "kubeconfig"),
	), installedRepoServerEnv...), path(e2eBin, "argocd-repo-server"), "--disable-tls", "--client-ca-path", "",
		"--redis", redisAddr, "--port", "8091", "--metrics-port", "8084", "--address", "127.0.0.1")
	if err != nil {
		return err
	}
	c.replicas = []*replica{{n: 1, sidecar: c.sidecar, repoServer: c.repoServer, addr: repoServer1Addr, metrics: sidecarMetrics, cache: path(c.dir, "cache")}}
	if c.service, err = newRepoService(repoServerAddr, repoServer1Addr); err != nil {
		return err
	}
	c.controller, err = c.start("application-controller", append(c.baseEnv("controller-tmp"),
		"KUBECONFIG="+path(c.dir, "kubeconfig"),
		"ARGOCD_FAKE_IN_CLUSTER=true",
	), path(e2eBin, "argocd-application-controller"), "--repo-server", repoServerAddr, "--repo-server-plaintext",
		"--redis", redisAddr, "--metrics-port", "8082", "--namespace", argocdNamespace,
		"--hydrator-enabled", "--commit-server", commitServerAddr)
	if err != nil {
		return err
	}
	if err := c.repoServer.waitFor("a gRPC listener", 60*time.Second, dials("tcp", repoServer1Addr)); err != nil {
		return err
	}
	c.startup["repo-server ready (own start)"] = time.Since(t)
	if err := c.controller.waitFor("metrics", 60*time.Second, httpOK("http://"+controllerAddr+"/metrics")); err != nil {
		return err
	}
	c.startup["application-controller ready (own start)"] = time.Since(t)
	return nil
}

// down stops everything: the sidecar with one SIGTERM (as the kubelet does;
// it must end within seconds), the rest with SIGTERM then SIGKILL.
func (c *cluster) down() []string {
	var notes []string
	if c.faker != nil {
		c.faker.stop()
	}
	if c.sidecar != nil {
		took, clean := c.sidecar.stop(10 * time.Second)
		notes = append(notes, fmt.Sprintf("sidecar ended %s after one SIGTERM (clean: %v, status: %v)", took.Round(time.Millisecond), clean, c.sidecar.err))
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(5 * time.Second)
	}
	if c.service != nil {
		c.service.close()
	}
	if !keepLogs {
		os.RemoveAll(c.dir)
	} else {
		notes = append(notes, "logs kept in "+path(c.dir, "logs"))
	}
	return notes
}

// memory reports each component's resident memory, process tree included.
func (c *cluster) memory() []string {
	var out []string
	for _, p := range c.procs {
		if p.exited() {
			continue
		}
		total, parts := memoryOfTree(p.cmd.Process.Pid)
		out = append(out, fmt.Sprintf("%-24s %4d MiB  (%s)", p.name, total>>20, strings.Join(parts, ", ")))
	}
	return out
}

func poll(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// condition is the status of a status.conditions entry of the given type.
func condition(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
