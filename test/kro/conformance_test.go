package kro

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// What the suite runs, from the environment (make kro-conformance sets it):
// KRO_CONFORMANCE_BIN holds kube-apiserver and kro-controller, AOP is the
// plugin's binary, KRO_DIR kro's module (its CRDs and examples), REPO_ROOT
// the repository (OCM's examples, a component to render against).
var (
	binDir   = os.Getenv("KRO_CONFORMANCE_BIN")
	aop      = os.Getenv("AOP")
	kroDir   = os.Getenv("KRO_DIR")
	repoRoot = os.Getenv("REPO_ROOT")
)

const (
	etcdAddr  = "127.0.0.1:2379"
	apiserver = "https://127.0.0.1:6443"
	namespace = "conformance"
	// The component the RGD files render against: it ships an RGD of its
	// own, which a definition file replaces.
	ctfPath   = "testdata/ocm-examples/helm-simple/ctf"
	component = "ocm.software/ocm-k8s-toolkit/examples/helm-simple"
)

// kroCase is an RGD and an instance of it whose objects need no cluster
// state (no status of another object, no uid).
type kroCase struct {
	name, rgd, instance string
	// rewrite replaces text of the RGD for both kro and the plugin: what
	// only a cluster knows (schema.metadata.uid) becomes what a render
	// knows, so that the rest of the RGD is compared.
	rewrite map[string]string
}

func cases() []kroCase {
	ex := func(p string) string { return filepath.Join(kroDir, "examples", p) }
	return []kroCase{
		{name: "functions", rgd: "testdata/functions.yaml", instance: "testdata/functions-instance.yaml"},
		{name: "graph", rgd: "testdata/graph.yaml", instance: "testdata/graph-instance.yaml"},
		{name: "types", rgd: "testdata/types.yaml", instance: "testdata/types-instance.yaml"},
		{name: "kro webapp", rgd: ex("kubernetes/webapp/rg.yaml"), instance: ex("kubernetes/webapp/instance.yaml")},
		{name: "kro job-example", rgd: ex("kubernetes/job-example/rgd.yaml"), instance: ex("kubernetes/job-example/instance.yaml")},
		{name: "kro cel-functions", rgd: ex("kubernetes/cel-functions/rg.yaml"), instance: ex("kubernetes/cel-functions/instance.yaml"),
			// The API server assigns the uid: seeded with the name instead.
			rewrite: map[string]string{"schema.metadata.uid": "schema.metadata.name"}},
		{name: "kro additionalPrinterColumns", rgd: ex("kubernetes/additionalPrinterColumns/rg.yaml"), instance: ex("kubernetes/additionalPrinterColumns/instance.yaml")},
		{name: "kro core-dns", rgd: ex("kubernetes/core-dns/core-dns.yaml"), instance: ex("kubernetes/core-dns/coredns-instance.yaml"),
			// Its default cluster IP, in the test cluster's service range.
			rewrite: map[string]string{"10.100.123.45": "10.96.123.45"}},
		{name: "kro dogsvscats vote-app", rgd: ex("kubernetes/dogsvscats/vote-app/rg.yaml"), instance: ex("kubernetes/dogsvscats/vote-app/instance.yaml")},
		{name: "kro dogsvscats result-app", rgd: ex("kubernetes/dogsvscats/result-app/rg.yaml"), instance: ex("kubernetes/dogsvscats/result-app/instance.yaml")},
		{name: "kro dogsvscats worker-app", rgd: ex("kubernetes/dogsvscats/worker-app/rg.yaml"), instance: ex("kubernetes/dogsvscats/worker-app/instance.yaml")},
		{name: "kro saas tenant-environment", rgd: ex("kubernetes/saas-multi-tenant/tenant-environment-rgd.yaml"), instance: "testdata/tenant-environment-instance.yaml"},
		{name: "kro saas tenant-application", rgd: ex("kubernetes/saas-multi-tenant/tenant-application-rgd.yaml"), instance: "testdata/tenant-application-instance.yaml"},
		// kro's ACK examples that create CustomResourceDefinitions (thousands of lines of schema).
		{name: "kro ack iam-crd-group", rgd: ex("aws/ack-controller/crds/iam-crd-group.yaml"), instance: "testdata/iam-crd-group-instance.yaml"},
		{name: "kro ack s3-crd-group", rgd: ex("aws/ack-controller/crds/s3-crd-group.yaml"), instance: "testdata/s3-crd-group-instance.yaml"},
		{name: "kro ack ec2-crd-group", rgd: ex("aws/ack-controller/crds/ec2-crd-group.yaml"), instance: "testdata/ec2-crd-group-instance.yaml"},
		{name: "ocm chained-rgds app", rgd: filepath.Join(repoRoot, "testdata/ocm-examples/chained-rgds/rgd-podinfo.yaml"), instance: "testdata/podinfo-instance.yaml"},
	}
}

func TestMain(m *testing.M) {
	if binDir == "" || aop == "" || kroDir == "" || repoRoot == "" {
		fmt.Println("!!!!!!!! kro conformance SKIPPED: KRO_CONFORMANCE_BIN, AOP, KRO_DIR and REPO_ROOT are not all set; run `make kro-conformance` (root) !!!!!!!!")
		os.Exit(0)
	}
	// Fixed loopback ports: the run gets network and PID namespaces of its
	// own (root), so that nothing else on the machine is reached or clashes.
	if os.Getenv("KRO_NETNS") == "" {
		args := append([]string{"--net", "--pid", "--fork", "--mount-proc", "--kill-child", "--", os.Args[0]}, os.Args[1:]...)
		cmd := exec.Command("unshare", args...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), "KRO_NETNS=1")
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				os.Exit(ee.ExitCode())
			}
			fmt.Println("kro conformance: unshare (needs root):", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		fmt.Printf("kro conformance: ip link set lo up: %v: %s\n", err, out)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestConformance: for every case, the objects kro's controller creates
// equal the plugin's render of the same RGD and instance spec.
func TestConformance(t *testing.T) {
	c := startCluster(t)
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) { c.check(t, tc) })
	}
}

type cluster struct {
	dir    string
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	disco  discovery.CachedDiscoveryInterface
}

func startCluster(t *testing.T) *cluster {
	dir := t.TempDir()
	token := "conformance-token"
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "sa.key")
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)}), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, dir, "etcd", "etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", "http://"+etcdAddr,
		"--advertise-client-urls", "http://"+etcdAddr, "--listen-peer-urls", "http://127.0.0.1:2380", "--log-level", "warn")
	start(t, dir, "kube-apiserver", filepath.Join(binDir, "kube-apiserver"), "--etcd-servers=http://"+etcdAddr,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=6443", "--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"), "--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+key,
		"--service-account-signing-key-file="+key, "--service-cluster-ip-range=10.96.0.0/16",
		"--endpoint-reconciler-type=none", "--disable-admission-plugins=ServiceAccount")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]\n"+
		"users: [{name: u, user: {token: %q}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", apiserver, token)
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "kube-apiserver /readyz", 120*time.Second, func() bool {
		cl := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		req, _ := http.NewRequest(http.MethodGet, apiserver+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := cl.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	cfg := &rest.Config{Host: apiserver, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200}
	c := &cluster{dir: dir}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.disco = memory.NewMemCacheClient(dc)
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(c.disco)
	crds, _ := filepath.Glob(filepath.Join(kroDir, "helm", "crds", "*.yaml"))
	for _, f := range crds {
		c.applyFile(t, f, "")
	}
	c.apply(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": namespace}}, "")
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig)
	startEnv(t, dir, env, "kro-controller", filepath.Join(binDir, "kro-controller"), "--metrics-bind-address=127.0.0.1:0",
		"--health-probe-bind-address=127.0.0.1:0", "--dynamic-controller-default-resync-period=5")
	return c
}

func (c *cluster) check(t *testing.T, tc kroCase) {
	if len(tc.rewrite) > 0 {
		b, err := os.ReadFile(tc.rgd)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for from, to := range tc.rewrite {
			text = strings.ReplaceAll(text, from, to)
		}
		tc.rgd = filepath.Join(t.TempDir(), "rgd.yaml")
		if err := os.WriteFile(tc.rgd, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rgd := readYAML(t, tc.rgd)
	inst := readYAML(t, tc.instance)
	want := c.render(t, tc, rgd, inst)
	c.activate(t, rgd)
	ns, _ := inst["metadata"].(map[string]any)["namespace"].(string)
	if ns == "" {
		ns = namespace
		inst["metadata"].(map[string]any)["namespace"] = ns
	}
	c.apply(t, inst, ns)
	for _, w := range want {
		got := c.waitObject(t, w, ns)
		if diff := compare(w, got.Object); diff != "" {
			t.Errorf("%s %s: kro and the plugin differ:\n%s", w["kind"], name2(w), diff)
		}
	}
	t.Logf("%s: %d objects equal to kro's", tc.name, len(want))
}

// activate applies an RGD and waits until kro serves its kind; it returns
// the RGD's name.
func (c *cluster) activate(t *testing.T, rgd map[string]any) string {
	c.apply(t, rgd, "")
	name := rgd["metadata"].(map[string]any)["name"].(string)
	rgdGVR := schema.GroupVersionResource{Group: "kro.run", Version: "v1alpha1", Resource: "resourcegraphdefinitions"}
	last := ""
	waitFor(t, "RGD "+name+" Active", 120*time.Second, func() bool {
		u, err := c.dyn.Resource(rgdGVR).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		if msg := readyMessage(u.Object); state != "Active" && msg != "" && msg != last {
			t.Logf("RGD %s: %s", name, msg)
			last = msg
		}
		return state == "Active"
	})
	c.disco.Invalidate()
	return name
}

// render runs the plugin on the RGD file for the instance: the
// Application is named after the instance, in its namespace.
func (c *cluster) render(t *testing.T, tc kroCase, rgd, inst map[string]any) []map[string]any {
	meta := inst["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	if ns == "" {
		ns = namespace
	}
	args := []string{"render", "--repository", filepath.Join(repoRoot, ctfPath), "--component", component, "--version", "1.0.0",
		"--definition", tc.rgd, "--namespace", ns, "--release-name", meta["name"].(string)}
	sch, _ := dig(rgd, "spec", "schema").(map[string]any)
	spec, _ := inst["spec"].(map[string]any)
	types, _ := sch["types"].(map[string]any)
	fields, _ := sch["spec"].(map[string]any)
	for _, p := range params("", spec, fields, types) {
		args = append(args, "--param", p)
	}
	cmd := exec.Command(aop, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("plugin: %v: %s", err, stderr.String())
	}
	var objs []map[string]any
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	if len(objs) == 0 {
		t.Fatal("the plugin rendered nothing")
	}
	return objs
}

// params turns an instance spec into the plugin's parameters: dotted
// names down to the schema's leaves (a custom type is its fields), each
// leaf's value as YAML.
func params(prefix string, spec, fields, types map[string]any) []string {
	var out []string
	for k, v := range spec {
		name := strings.TrimPrefix(prefix+"."+k, ".")
		sub, _ := fields[k].(map[string]any)
		if s, ok := fields[k].(string); ok {
			typ := strings.TrimSpace(strings.Split(s, "|")[0])
			sub, _ = types[typ].(map[string]any)
		}
		if m, ok := v.(map[string]any); ok && sub != nil {
			out = append(out, params(name, m, sub, types)...)
			continue
		}
		if s, ok := v.(string); ok {
			out = append(out, name+"="+s)
			continue
		}
		b, _ := json.Marshal(v)
		out = append(out, name+"="+string(b))
	}
	slices.Sort(out)
	return out
}

// compare is what differs between the plugin's object and kro's, on the
// fields the plugin's object has (kro's carries what the API server and
// kro add: uid, managedFields, kro's labels, defaults), except the plugin's
// sync-wave annotation; ConfigMap data must match whole.
func compare(want, got map[string]any) string {
	want = clone(want)
	if a, ok := dig(want, "metadata", "annotations").(map[string]any); ok {
		delete(a, "argocd.argoproj.io/sync-wave")
		if len(a) == 0 {
			delete(want["metadata"].(map[string]any), "annotations")
		}
	}
	if want["kind"] == "ConfigMap" && !reflect.DeepEqual(norm(want["data"]), norm(got["data"])) {
		return fmt.Sprintf("data: plugin %s\n      kro %s", js(want["data"]), js(got["data"]))
	}
	var diffs []string
	project("", norm(want), norm(got), &diffs)
	return strings.Join(diffs, "\n")
}

func project(path string, want, got any, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: plugin %s, kro %s", path, js(want), js(got)))
			return
		}
		for k, v := range w {
			project(path+"."+k, v, g[k], diffs)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: plugin %s, kro %s", path, js(want), js(got)))
			return
		}
		for i := range w {
			project(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], diffs)
		}
	default:
		if !reflect.DeepEqual(want, got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: plugin %s, kro %s", path, js(want), js(got)))
		}
	}
}

func (c *cluster) waitObject(t *testing.T, w map[string]any, ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: w}
	gvk := u.GroupVersionKind()
	var got *unstructured.Unstructured
	waitFor(t, fmt.Sprintf("kro's %s %s", gvk.Kind, u.GetName()), 90*time.Second, func() bool {
		m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			c.disco.Invalidate()
			return false
		}
		ri := c.dyn.Resource(m.Resource).Namespace(ns)
		if m.Scope.Name() == meta.RESTScopeNameRoot {
			ri = c.dyn.Resource(m.Resource).Namespace("")
		} else if n := u.GetNamespace(); n != "" {
			ri = c.dyn.Resource(m.Resource).Namespace(n)
		}
		c.rollOut()
		o, err := ri.Get(context.Background(), u.GetName(), metav1.GetOptions{})
		if err != nil {
			return false
		}
		got = o
		return true
	})
	return got
}

// rollOut writes the status a kubelet and the deployment controller would
// give the Deployments (none run here), so that readyWhen
// conditions on them hold and kro goes on to their dependents.
func (c *cluster) rollOut() {
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	list, err := c.dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, d := range list.Items {
		if st, _ := d.Object["status"].(map[string]any); st["conditions"] != nil {
			continue
		}
		r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		now := time.Now().UTC().Format(time.RFC3339)
		d.Object["status"] = map[string]any{"observedGeneration": d.GetGeneration(), "replicas": r, "readyReplicas": r, "availableReplicas": r, "updatedReplicas": r,
			"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastUpdateTime": now, "lastTransitionTime": now}}}
		if _, err := c.dyn.Resource(gvr).Namespace(d.GetNamespace()).UpdateStatus(context.Background(), &d, metav1.UpdateOptions{}); err != nil {
			fmt.Println("kro conformance: rolling out", d.GetName(), err)
		}
	}
}

func (c *cluster) applyFile(t *testing.T, file, ns string) {
	c.apply(t, readYAML(t, file), ns)
}

func (c *cluster) apply(t *testing.T, obj map[string]any, ns string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	var m *meta.RESTMapping
	waitFor(t, "the API of "+gvk.Kind, 60*time.Second, func() bool {
		var err error
		if m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			c.disco.Invalidate()
			return false
		}
		return true
	})
	body, _ := json.Marshal(obj)
	var ri dynamic.ResourceInterface = c.dyn.Resource(m.Resource)
	if m.Scope.Name() != meta.RESTScopeNameRoot {
		if ns == "" {
			ns = u.GetNamespace()
		}
		ri = c.dyn.Resource(m.Resource).Namespace(ns)
	}
	force := true
	if _, err := ri.Patch(context.Background(), u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "conformance", Force: &force}); err != nil {
		t.Fatalf("applying %s %s: %v", gvk.Kind, u.GetName(), err)
	}
}

func start(t *testing.T, dir, name, bin string, args ...string) {
	startEnv(t, dir, os.Environ(), name, bin, args...)
}

func startEnv(t *testing.T, dir string, env []string, name, bin string, args ...string) {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s log (tail):\n%s", name, b)
		}
	})
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// readyMessage is the message of an RGD's Ready condition.
func readyMessage(o map[string]any) string {
	conds, _, _ := unstructured.NestedSlice(o, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" {
			s, _ := m["message"].(string)
			return s
		}
	}
	return ""
}

func readYAML(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func clone(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// norm makes numbers comparable (JSON's float64).
func norm(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func name2(o map[string]any) string {
	n, _ := dig(o, "metadata", "name").(string)
	return n
}
