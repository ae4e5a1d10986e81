package argocd

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/applicationset/controllers/template"
	"github.com/argoproj/argo-cd/v3/applicationset/generators"
	"github.com/argoproj/argo-cd/v3/applicationset/services/plugin"
	"github.com/argoproj/argo-cd/v3/applicationset/utils"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	log "github.com/sirupsen/logrus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"
)

// generatorName names every object of manifests/generator.
const generatorName = "argocd-ocm-generator"

// usesPluginGenerator reports whether an ApplicationSet asks a plugin
// generator (directly or in a matrix); TestGeneratorExamples expands those
// against the real generator.
func usesPluginGenerator(as *v1alpha1.ApplicationSet) bool {
	for _, g := range as.Spec.Generators {
		if g.Plugin != nil {
			return true
		}
		if g.Matrix != nil {
			for _, n := range g.Matrix.Generators {
				if n.Plugin != nil {
					return true
				}
			}
		}
	}
	return false
}

// generatorProcess is `argocd-ocm-plugin generator` (the binary TestMain
// built), serving a CTF directory.
type generatorProcess struct {
	url, token string
	stderr     *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func startGenerator(t *testing.T, ctfRoot string, args ...string) *generatorProcess {
	t.Helper()
	return startGeneratorEnv(t, nil, ctfRoot, args...)
}

// startGeneratorEnv starts the generator with env added to the test's.
func startGeneratorEnv(t *testing.T, env []string, ctfRoot string, args ...string) *generatorProcess {
	t.Helper()
	bin, err := exec.LookPath("argocd-ocm-plugin")
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	g := &generatorProcess{token: hex.EncodeToString(raw), stderr: &lockedBuffer{}}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(g.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, append([]string{"generator", "--listen", addr, "--token-file", tokenFile, "--ctf-dir", ctfRoot}, args...)...)
	cmd.Stderr = g.stderr
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if strings.Contains(g.stderr.String(), g.token) {
			t.Errorf("the generator logged its token:\n%s", g.stderr.String())
		}
	})
	g.url = "http://" + addr
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err := http.Get(g.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the generator did not come up: %v\n%s", err, g.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ctfWriter adds component versions to a CTF directory as the OCM CLI lays
// them out: a descriptor blob, a config naming it, an OCI manifest, and an
// entry of artifact-index.json (replaced atomically, as a new file).
type ctfWriter struct{ dir string }

func (w ctfWriter) blob(t *testing.T, b []byte) map[string]any {
	t.Helper()
	sum := sha256.Sum256(b)
	d := "sha256:" + hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(w.dir, "blobs", "sha256."+hex.EncodeToString(sum[:])), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"digest": d, "size": len(b)}
}

func (w ctfWriter) add(t *testing.T, component, version string) string {
	t.Helper()
	desc := fmt.Sprintf(`meta:
  schemaVersion: v2
component:
  name: %s
  version: %s
  provider: example.com
  repositoryContexts: []
  sources: []
  componentReferences: []
  resources:
    - name: chart
      version: %s
      type: helmChart
      relation: external
      access:
        type: ociArtifact
        imageReference: ghcr.io/example-org/charts/podinfo:%s
`, component, version, version, version)
	layer := w.blob(t, []byte(desc))
	layer["mediaType"] = "application/vnd.ocm.software.component-descriptor.v2+yaml"
	cfgJSON, _ := json.Marshal(map[string]any{"componentDescriptorLayer": layer})
	cfg := w.blob(t, cfgJSON)
	cfg["mediaType"] = "application/vnd.ocm.software.component.config.v1+json"
	manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": cfg, "layers": []any{layer}})
	md := w.blob(t, manifest)["digest"].(string)

	var idx struct {
		SchemaVersion int              `json:"schemaVersion"`
		Artifacts     []map[string]any `json:"artifacts"`
	}
	p := filepath.Join(w.dir, "artifact-index.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	idx.Artifacts = append(idx.Artifacts, map[string]any{"repository": "component-descriptors/" + component,
		"tag": strings.ReplaceAll(version, "+", ".build-"), "digest": md, "mediaType": "application/vnd.oci.image.manifest.v1+json"})
	b, _ = json.Marshal(idx)
	if err := os.WriteFile(p+".new", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	return md
}

// argoCluster is the Kubernetes side of the ApplicationSet controller: the
// generator's ConfigMap (manifests/generator, with the test's baseUrl) and
// Secret, two cluster secrets, the default project.
type argoCluster struct {
	gens   map[string]generators.Generator
	client client.Client
}

func newArgoCluster(t *testing.T, g *generatorProcess) *argoCluster {
	t.Helper()
	var cm corev1.ConfigMap
	readYAML(t, "manifests/generator/configmap.yaml", &cm)
	if cm.Data["token"] != "$"+generatorName+":token" || cm.Data["baseUrl"] == "" || cm.Data["requestTimeout"] == "" {
		t.Fatalf("manifests/generator ConfigMap %v", cm.Data)
	}
	cm.Namespace = "argocd"
	cm.Data["baseUrl"] = g.url // the Service's address in a cluster
	var secret corev1.Secret
	readYAML(t, "manifests/generator/secret.yaml", &secret)
	if secret.Name != generatorName || len(secret.Data)+len(secret.StringData) != 0 {
		t.Fatalf("the Secret placeholder must hold no token: %+v", secret)
	}
	secret.Namespace = "argocd"
	secret.Data = map[string][]byte{"token": []byte(g.token + "\n")} // as `kubectl create secret` may leave it
	objs := []runtime.Object{&cm, &secret, &v1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "argocd"}}}
	for _, c := range []struct{ name, server, replicas, version string }{{"dev", "https://dev.example.com:6443", "1", ">=1.1.0"}, {"prod-eu", "https://prod-eu.example.com:6443", "3", "1.0.0"}} {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + c.name, Namespace: "argocd", Annotations: map[string]string{"example.org/podinfo-version": c.version}, Labels: map[string]string{
				"argocd.argoproj.io/secret-type": "cluster", "example.org/podinfo": "true", "example.org/replicas": c.replicas}},
			Data: map[string][]byte{"name": []byte(c.name), "server": []byte(c.server), "config": []byte("{}")},
		}
		objs = append(objs, s)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// Argo CD 3 reads the cluster secrets through the controller's client.
	c := fake.NewClientBuilder().WithScheme(scheme).WithRuntimeObjects(objs...).Build()
	gens := map[string]generators.Generator{
		"Plugin":   generators.NewPluginGenerator(c, "argocd"),
		"Clusters": generators.NewClusterGenerator(c, "argocd"),
	}
	gens["Matrix"] = generators.NewMatrixGenerator(map[string]generators.Generator{"Plugin": gens["Plugin"], "Clusters": gens["Clusters"]})
	return &argoCluster{gens: gens, client: c}
}

func (a *argoCluster) expand(t *testing.T, as *v1alpha1.ApplicationSet) ([]v1alpha1.Application, error) {
	t.Helper()
	apps, _, err := template.GenerateApplications(log.NewEntry(log.StandardLogger()), *as, a.gens, &utils.Render{}, a.client)
	sort.Slice(apps, func(i, j int) bool { return apps[i].Name < apps[j].Name })
	return apps, err
}

// appPluginParams is an Application's spec.source.plugin.parameters as name → string.
func appPluginParams(t *testing.T, app v1alpha1.Application) map[string]string {
	t.Helper()
	out := map[string]string{}
	if app.Spec.Source == nil || app.Spec.Source.Plugin == nil {
		t.Fatalf("%s: no plugin source", app.Name)
	}
	for _, p := range app.Spec.Source.Plugin.Parameters {
		if p.String_ != nil {
			out[p.Name] = *p.String_
		}
	}
	return out
}

// exampleApplicationSets reads manifests/examples/applicationset-generator.yaml
// with its registry replaced by the test's CTF.
func exampleApplicationSets(t *testing.T, repository string) map[string]*v1alpha1.ApplicationSet {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "manifests", "examples", "applicationset-generator.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*v1alpha1.ApplicationSet{}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		doc = strings.ReplaceAll(doc, "repository: ghcr.io/example-org/ocm", "repository: "+repository)
		var as v1alpha1.ApplicationSet
		if err := yaml.UnmarshalStrict([]byte(doc), &as); err != nil {
			t.Fatal(err)
		}
		if !usesPluginGenerator(&as) {
			t.Errorf("%s: no plugin generator", as.Name)
		}
		out[as.Name] = &as
	}
	return out
}

// Argo CD's ApplicationSet code (plugin and clusters generators, matrix,
// template rendering) against the real generator: the examples become
// pinned Applications, and a version added between two polls appears on
// the second.
func TestGeneratorExamples(t *testing.T) {
	root := t.TempDir()
	ctf := filepath.Join(root, "demo")
	copyDir(t, filepath.Join(repoRoot, "testdata", "demo", "ctf"), ctf)
	g := startGenerator(t, root, "--list-ttl=300ms")
	argo := newArgoCluster(t, g)
	sets := exampleApplicationSets(t, "./demo")
	if len(sets) != 3 {
		t.Fatalf("%d example ApplicationSets", len(sets))
	}

	t.Run("matrix with clusters", func(t *testing.T) {
		apps, err := argo.expand(t, sets["podinfo-everywhere"])
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, app := range apps {
			p := appPluginParams(t, app)
			got = append(got, fmt.Sprintf("%s@%s=%s:%s", app.Name, app.Spec.Destination.Server, p["component"], p["version"]))
			if !strings.HasPrefix(app.Annotations["argocd-ocm-plugin.io/digest"], "sha256:") {
				t.Errorf("%s: digest annotation %v", app.Name, app.Annotations)
			}
			if p["repository"] != "./demo" {
				t.Errorf("%s: repository %q", app.Name, p["repository"])
			}
			checkPluginApplication(t, app.Name, &app)
		}
		want := "podinfo-dev@https://dev.example.com:6443=example.com/demo/podinfo:1.0.0 " +
			"podinfo-prod-eu@https://prod-eu.example.com:6443=example.com/demo/podinfo:1.0.0"
		if strings.Join(got, " ") != want {
			t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
		}
		if v := appPluginParams(t, apps[1])["values"]; !strings.Contains(v, "replicaCount: 3") {
			t.Errorf("per-cluster values: %q", v)
		}
	})

	// The plugin's input may use the clusters generator's parameters: a
	// version constraint per cluster.
	t.Run("matrix with a per-cluster constraint", func(t *testing.T) {
		as := sets["podinfo-everywhere"].DeepCopy()
		in := as.Spec.Generators[0].Matrix.Generators[1].Plugin.Input.Parameters
		in["version"] = apiextensionsv1.JSON{Raw: []byte(`"{{ index .metadata.annotations \"example.org/podinfo-version\" }}"`)}
		apps, err := argo.expand(t, as)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, app := range apps {
			got = append(got, app.Name+"="+appPluginParams(t, app)["version"])
		}
		if want := "podinfo-dev=1.1.0+build.7 podinfo-prod-eu=1.0.0"; strings.Join(got, " ") != want {
			t.Errorf("got %s, want %s", strings.Join(got, " "), want)
		}
	})

	t.Run("platform references", func(t *testing.T) {
		apps, err := argo.expand(t, sets["demo-platform"])
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, app := range apps {
			p := appPluginParams(t, app)
			got = append(got, fmt.Sprintf("%s/%s=%s:%s", app.Name, app.Spec.Destination.Namespace, p["component"], p["version"]))
		}
		want := "platform-extras/extras=example.com/demo/podinfo-extras:1.0.0 platform-podinfo/podinfo=example.com/demo/podinfo:1.0.0"
		if strings.Join(got, " ") != want {
			t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
		}
	})

	t.Run("previews follow pushed versions", func(t *testing.T) {
		names := func() []string {
			apps, err := argo.expand(t, sets["podinfo-previews"])
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, app := range apps {
				out = append(out, app.Name+"="+appPluginParams(t, app)["version"]+"@"+app.Spec.Destination.Namespace)
			}
			return out
		}
		first := strings.Join(names(), " ")
		if want := "preview-podinfo-1-0-0=1.0.0@preview-1-0-0 preview-podinfo-1-1-0-build-7=1.1.0+build.7@preview-1-1-0-build-7"; first != want {
			t.Fatalf("first poll:\n got %s\nwant %s", first, want)
		}
		digest := ctfWriter{ctf}.add(t, "example.com/demo/podinfo", "1.2.0-rc.1")
		ctfWriter{ctf}.add(t, "example.com/demo/podinfo", "1.2.0")
		time.Sleep(400 * time.Millisecond) // the generator's list TTL
		second := strings.Join(names(), " ")
		if want := "preview-podinfo-1-1-0-build-7=1.1.0+build.7@preview-1-1-0-build-7 preview-podinfo-1-2-0=1.2.0@preview-1-2-0 preview-podinfo-1-2-0-rc-1=1.2.0-rc.1@preview-1-2-0-rc-1"; second != want {
			t.Errorf("second poll:\n got %s\nwant %s", second, want)
		}
		apps, _ := argo.expand(t, sets["podinfo-previews"])
		for _, app := range apps {
			if appPluginParams(t, app)["version"] == "1.2.0-rc.1" && app.Annotations["argocd-ocm-plugin.io/digest"] != digest {
				t.Errorf("pushed version's digest %q, want %s", app.Annotations["argocd-ocm-plugin.io/digest"], digest)
			}
		}
	})
}

// Argo CD's plugin service client: what the controller sends and reads,
// and what it makes of failures (the message of the JSON error body).
func TestGeneratorServiceClient(t *testing.T) {
	root := t.TempDir()
	copyDir(t, filepath.Join(repoRoot, "testdata", "demo", "ctf"), filepath.Join(root, "demo"))
	g := startGenerator(t, root)
	params := func(kv map[string]any) v1alpha1.PluginParameters {
		out := v1alpha1.PluginParameters{}
		for k, v := range kv {
			b, _ := json.Marshal(v)
			out[k] = apiextensionsv1.JSON{Raw: b}
		}
		return out
	}
	svc, err := plugin.NewPluginService("shop", g.url, g.token, 30)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := svc.List(t.Context(), params(map[string]any{"repository": "./demo", "component": "example.com/demo/*", "labels": true}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range resp.Output.Parameters {
		got = append(got, fmt.Sprintf("%v=%v:%v", p["name"], p["component"], p["version"]))
	}
	want := "catalog=example.com/demo/catalog:2.3.0 platform=example.com/demo/platform:1.0.0 podinfo=example.com/demo/podinfo:1.1.0+build.7 podinfo-extras=example.com/demo/podinfo-extras:1.0.0"
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}

	for _, tc := range []struct {
		name   string
		token  string
		params map[string]any
		want   string
	}{
		{"wrong token", "wrong-" + g.token, map[string]any{"repository": "./demo", "component": "a/b"}, "status code 403: wrong or missing bearer token"},
		{"unknown parameter", g.token, map[string]any{"repository": "./demo", "component": "a/b", "colour": "red"}, `status code 400: invalid input: unknown parameter "colour"`},
		{"wrong type", g.token, map[string]any{"repository": "./demo", "component": "example.com/demo/podinfo", "latest": "2"}, "status code 400: invalid input: parameter latest: want a whole number"},
		{"bad constraint", g.token, map[string]any{"repository": "./demo", "component": "example.com/demo/podinfo", "version": ">=1.0 <<2"}, "status code 400"},
		{"unknown component", g.token, map[string]any{"repository": "./demo", "component": "example.com/demo/nope"}, "status code 400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := plugin.NewPluginService("shop", g.url, tc.token, 30)
			if err != nil {
				t.Fatal(err)
			}
			_, err = svc.List(t.Context(), params(tc.params))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// manifests/generator, as manifests/argocd installs it and as the Helm
// values repeat it: the pieces fit each other and stock Argo CD.
func TestGeneratorManifests(t *testing.T) {
	m := kustomize(t, inMemoryTree(t), "/m/argocd")
	objs := map[string]map[string]any{}
	var appsetLabels map[string]string
	for _, r := range m.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetKind() == "Deployment" && r.GetName() == "argocd-applicationset-controller" {
			var d appsv1.Deployment
			json.Unmarshal(b, &d)
			appsetLabels = d.Spec.Template.Labels
		}
		if r.GetName() != generatorName {
			continue
		}
		var o map[string]any
		json.Unmarshal(b, &o)
		objs[r.GetKind()] = o
		if r.GetNamespace() != "argocd" || r.GetLabels()["app.kubernetes.io/part-of"] != "argocd" {
			t.Errorf("%s: namespace %q, labels %v", r.GetKind(), r.GetNamespace(), r.GetLabels())
		}
	}
	for _, k := range []string{"ConfigMap", "Secret", "Deployment", "Service", "NetworkPolicy"} {
		if objs[k] == nil {
			t.Fatalf("no %s %s in manifests/argocd", k, generatorName)
		}
	}
	decode := func(kind string, into any) {
		b, _ := json.Marshal(objs[kind])
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatal(err)
		}
	}
	var d appsv1.Deployment
	var svc corev1.Service
	var np networkingv1.NetworkPolicy
	var cm corev1.ConfigMap
	decode("Deployment", &d)
	decode("Service", &svc)
	decode("NetworkPolicy", &np)
	decode("ConfigMap", &cm)
	pod := d.Spec.Template
	c := container(t, pod.Spec.Containers, "generator")
	if !strings.HasPrefix(c.Image, "ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin:") || len(c.Command) < 2 || c.Command[1] != "generator" {
		t.Errorf("container %s %v", c.Image, c.Command)
	}
	// The token file is in the Secret's volume, mounted whole (a subPath
	// mount never sees a rotated Secret).
	var tokenFile string
	for _, a := range c.Command {
		if v, ok := strings.CutPrefix(a, "--token-file="); ok {
			tokenFile = v
		}
	}
	tokenMounted := false
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name == vm.Name && v.Secret != nil && v.Secret.SecretName == generatorName && vm.SubPath == "" && filepath.Dir(tokenFile) == vm.MountPath {
				tokenMounted = true
			}
		}
	}
	if !tokenMounted {
		t.Errorf("--token-file=%s is not in a whole mount of Secret %s", tokenFile, generatorName)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("security context %+v", sc)
	}
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Error("the generator needs no Kubernetes API token")
	}
	// Service → pods; ConfigMap baseUrl → Service; NetworkPolicy → pods,
	// from the stock ApplicationSet controller only.
	matches := func(sel, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if !matches(svc.Spec.Selector, pod.Labels) || !matches(d.Spec.Selector.MatchLabels, pod.Labels) {
		t.Errorf("selectors %v %v do not select the pod %v", svc.Spec.Selector, d.Spec.Selector.MatchLabels, pod.Labels)
	}
	if want := fmt.Sprintf("http://%s:%d", svc.Name, svc.Spec.Ports[0].Port); cm.Data["baseUrl"] != want {
		t.Errorf("baseUrl %q, want %q", cm.Data["baseUrl"], want)
	}
	if !matches(np.Spec.PodSelector.MatchLabels, pod.Labels) || len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 ||
		!matches(np.Spec.Ingress[0].From[0].PodSelector.MatchLabels, appsetLabels) {
		t.Errorf("NetworkPolicy %+v does not admit exactly the ApplicationSet controller (%v)", np.Spec, appsetLabels)
	}

	// The Helm values hold the same objects.
	var values struct {
		ExtraObjects []map[string]any `json:"extraObjects"`
	}
	readYAML(t, "manifests/helm/values.yaml", &values)
	helm := map[string]any{}
	for _, o := range values.ExtraObjects {
		helm[o["kind"].(string)] = o
	}
	for kind, o := range objs {
		o = toJSONValue(t, o).(map[string]any)
		delete(o["metadata"].(map[string]any), "namespace") // the release's
		if !reflect.DeepEqual(o, toJSONValue(t, helm[kind])) {
			a, _ := yaml.Marshal(o)
			b, _ := yaml.Marshal(helm[kind])
			t.Errorf("Helm extraObjects %s differs from manifests/generator:\n--- kustomize\n%s--- helm\n%s", kind, a, b)
		}
	}
	if len(helm) != len(objs) {
		t.Errorf("Helm extraObjects: %d kinds, manifests/generator %d", len(helm), len(objs))
	}
}

// registryHelper is internal/frontend/generator's TestHelperRegistry: a CNCF
// distribution registry with basic auth, in a process of its own (this
// module cannot import it), that pushes versions when told.
type registryHelper struct {
	repo, host, password string
	in                   io.WriteCloser
	out                  *bufio.Scanner
}

func startRegistry(t *testing.T) *registryHelper {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "generator.test")
	build := productTest("test", "-c", "-o", bin, "./internal/frontend/generator")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the registry helper: %v\n%s", err, out)
	}
	raw := make([]byte, 16)
	rand.Read(raw)
	h := &registryHelper{password: hex.EncodeToString(raw)}
	cmd := exec.Command(bin, "-test.run", "^TestHelperRegistry$")
	cmd.Env = append(os.Environ(), "ARGOCD_OCM_TEST_REGISTRY_PASSWORD="+h.password)
	var err error
	if h.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.in.Close(); cmd.Wait() })
	h.out = bufio.NewScanner(stdout)
	line := h.read(t)
	repo, ok := strings.CutPrefix(line, "registry ")
	if !ok {
		t.Fatalf("registry helper: %q\n%s", line, stderr.String())
	}
	h.repo = repo
	h.host = strings.Split(strings.TrimPrefix(repo, "http://"), "/")[0]
	return h
}

func (h *registryHelper) read(t *testing.T) string {
	t.Helper()
	if !h.out.Scan() {
		t.Fatalf("registry helper ended: %v", h.out.Err())
	}
	return h.out.Text()
}

// push pushes a version and returns its descriptor digest.
func (h *registryHelper) push(t *testing.T, component, version string) string {
	t.Helper()
	fmt.Fprintf(h.in, "push %s %s\n", component, version)
	d, ok := strings.CutPrefix(h.read(t), "pushed ")
	if !ok {
		t.Fatalf("push %s:%s failed", component, version)
	}
	return d
}

// credentialEnv is how the sidecar (and so the generator) gets registry
// credentials from its environment.
func (h *registryHelper) credentialEnv(user, password string) []string {
	name := "ARGOCD_OCM_REGISTRY_" + strings.Map(func(r rune) rune {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		return '_'
	}, h.host) + "_"
	// The loopback registry speaks plain HTTP: credentials go there only
	// because the operator lists the host.
	return []string{name + "USERNAME=" + user, name + "PASSWORD=" + password, "ARGOCD_OCM_PLAIN_HTTP=" + h.host}
}

// The same against a real registry with credentials: the examples expand,
// Applications are pinned by digest, a pushed version appears on the next
// poll, and refused credentials are a 502 that names no secret.
func TestGeneratorRegistry(t *testing.T) {
	reg := startRegistry(t)
	g := startGeneratorEnv(t, reg.credentialEnv("robot", reg.password), t.TempDir(), "--list-ttl=300ms")
	argo := newArgoCluster(t, g)
	sets := exampleApplicationSets(t, reg.repo)

	versions := func(name string) string {
		apps, err := argo.expand(t, sets[name])
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, app := range apps {
			out = append(out, app.Name+"="+appPluginParams(t, app)["version"])
		}
		sort.Strings(out) // a set of Applications: the generators' order is no contract
		return strings.Join(out, " ")
	}
	if got, want := versions("podinfo-everywhere"), "podinfo-dev=1.0.1 podinfo-prod-eu=1.0.1"; got != want {
		t.Errorf("matrix: got %s, want %s", got, want)
	}
	if got, want := versions("demo-platform"), "platform-extras=1.0.0 platform-podinfo=1.0.1"; got != want {
		t.Errorf("platform: got %s, want %s", got, want)
	}
	if got, want := versions("podinfo-previews"), "preview-podinfo-1-0-0=1.0.0 preview-podinfo-1-0-1=1.0.1 preview-podinfo-1-1-0-rc-1=1.1.0-rc.1"; got != want {
		t.Errorf("previews: got %s, want %s", got, want)
	}
	digest := reg.push(t, "example.com/demo/podinfo", "1.0.2")
	time.Sleep(400 * time.Millisecond) // the generator's list TTL
	if got, want := versions("podinfo-everywhere"), "podinfo-dev=1.0.2 podinfo-prod-eu=1.0.2"; got != want {
		t.Errorf("matrix after a push: got %s, want %s", got, want)
	}
	apps, err := argo.expand(t, sets["podinfo-everywhere"])
	if err != nil {
		t.Fatal(err)
	}
	if d := apps[0].Annotations["argocd-ocm-plugin.io/digest"]; d != digest {
		t.Errorf("digest annotation %q, want the pushed %s", d, digest)
	}

	// pinnedVersion, through Argo CD's client.
	svc, err := plugin.NewPluginService("pins", g.url, g.token, 30)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := svc.List(t.Context(), v1alpha1.PluginParameters{
		"repository": apiextensionsv1.JSON{Raw: []byte(`"` + reg.repo + `"`)},
		"component":  apiextensionsv1.JSON{Raw: []byte(`"example.com/demo/podinfo"`)},
		"version":    apiextensionsv1.JSON{Raw: []byte(`"1.0.2"`)}})
	if err != nil {
		t.Fatal(err)
	}
	if ps := resp.Output.Parameters; len(ps) != 1 || ps[0]["pinnedVersion"] != "1.0.2@"+digest {
		t.Errorf("parameters %v, want pinnedVersion 1.0.2@%s", ps, digest)
	}

	// Wrong credentials: the registry's refusal, no secret in it.
	bad := startGeneratorEnv(t, reg.credentialEnv("robot", "not-"+reg.password), t.TempDir())
	svc, err = plugin.NewPluginService("pins", bad.url, bad.token, 30)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.List(t.Context(), v1alpha1.PluginParameters{
		"repository": apiextensionsv1.JSON{Raw: []byte(`"` + reg.repo + `"`)},
		"component":  apiextensionsv1.JSON{Raw: []byte(`"example.com/demo/podinfo"`)}})
	if err == nil || !strings.Contains(err.Error(), "status code 502") || !strings.Contains(err.Error(), "unauthorized") || strings.Contains(err.Error(), reg.password) {
		t.Errorf("wrong credentials: %v", err)
	}
	if strings.Contains(bad.stderr.String(), reg.password) {
		t.Errorf("the generator logged the password:\n%s", bad.stderr.String())
	}
}
