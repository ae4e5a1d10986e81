package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

var cl *cluster

func conflictOrGone(err error) bool { return apierrors.IsConflict(err) || apierrors.IsNotFound(err) }

type param struct{ name, value string }

// exampleApp is manifests/examples/application-offline.yaml with its
// repoURL pointed at the run's git repository, renamed, sent to another
// namespace and, when params is not nil, with other parameters.
func exampleApp(t *testing.T, name, namespace, path string, params []param) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(repoRoot + "/manifests/examples/application-offline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetName(name)
	must(t, unstructured.SetNestedField(u.Object, cl.gitURL, "spec", "source", "repoURL"))
	must(t, unstructured.SetNestedField(u.Object, namespace, "spec", "destination", "namespace"))
	if path != "" {
		must(t, unstructured.SetNestedField(u.Object, path, "spec", "source", "path"))
	}
	if params != nil {
		must(t, unstructured.SetNestedSlice(u.Object, paramList(params), "spec", "source", "plugin", "parameters"))
	}
	return u
}

func paramList(params []param) []any {
	var out []any
	for _, p := range params {
		out = append(out, map[string]any{"name": p.name, "string": p.value})
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func createApp(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cl.dyn.Resource(appGVR).Namespace(argocdNamespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Application %s: %v", u.GetName(), err)
	}
}

func getApp(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u, err := cl.dyn.Resource(appGVR).Namespace(argocdNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Application %s: %v", name, err)
	}
	return u
}

func patchApp(t *testing.T, name string, patch map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, _ := json.Marshal(patch)
	if _, err := cl.dyn.Resource(appGVR).Namespace(argocdNamespace).Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching Application %s: %v", name, err)
	}
}

func setParams(t *testing.T, name string, params []param) {
	t.Helper()
	patchApp(t, name, map[string]any{"spec": map[string]any{"source": map[string]any{"plugin": map[string]any{"parameters": paramList(params)}}}})
}

func str(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

// appConditions are the Application's status.conditions as type: message.
func appConditions(u *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		msg, _ := m["message"].(string)
		out[typ] = msg
	}
	return out
}

func summary(u *unstructured.Unstructured) string {
	return fmt.Sprintf("sync=%s health=%s operation=%s (%s) conditions=%v",
		str(u, "status", "sync", "status"), str(u, "status", "health", "status"),
		str(u, "status", "operationState", "phase"), str(u, "status", "operationState", "message"), appConditions(u))
}

// syncedHealthy: the last operation succeeded, the live state is the
// rendered one and healthy, and no condition is an error.
func syncedHealthy(u *unstructured.Unstructured) bool {
	for typ := range appConditions(u) {
		if strings.HasSuffix(typ, "Error") {
			return false
		}
	}
	return str(u, "status", "sync", "status") == "Synced" && str(u, "status", "health", "status") == "Healthy" &&
		str(u, "status", "operationState", "phase") == "Succeeded"
}

// waitApp polls the Application until cond holds; it fails the test at
// the deadline with the Application's state and the logs' last lines.
func waitApp(t *testing.T, name, what string, timeout time.Duration, cond func(*unstructured.Unstructured) bool) (time.Duration, *unstructured.Unstructured) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var last *unstructured.Unstructured
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		u, err := cl.dyn.Resource(appGVR).Namespace(argocdNamespace).Get(ctx, name, metav1.GetOptions{})
		cancel()
		if err == nil {
			last = u
			if cond(u) {
				return time.Since(start), u
			}
		}
		if time.Now().After(deadline) {
			state := "(never read)"
			if last != nil {
				state = summary(last)
			}
			t.Fatalf("Application %s: not %s after %s: %s\n%s", name, what, timeout, state, cl.tails())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *cluster) tails() string {
	var b strings.Builder
	for _, p := range []*proc{c.controller, c.repoServer, c.sidecar} {
		if p != nil {
			b.WriteString(p.tail(12) + "\n")
		}
	}
	for _, e := range c.faker.errors() {
		b.WriteString("status faker: " + e + "\n")
	}
	return b.String()
}

// live reads an object; nil when it does not exist.
func live(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := cl.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func listNames(t *testing.T, gvr schema.GroupVersionResource, ns string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := cl.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetName())
	}
	return out
}

// --- the render server's view (scenario i) ---

// served is what the sidecar's log says about generations: those the
// render server answered ("command done" for generate, with their ms) and
// refusals (the render server's budget, a repository stream past its limits).
type served struct {
	answered, refused int
	ms, okMs          []int
	failedApps        map[string]int
}

var (
	msRe  = regexp.MustCompile(`\bms=(\d+)`)
	appRe = regexp.MustCompile(`\bapplication=(\S+)`)
)

func (c *cluster) served() served {
	s := served{failedApps: map[string]int{}}
	f, err := os.Open(c.sidecar.logPath)
	if err != nil {
		return s
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "command done") && strings.Contains(line, "command=generate"):
			s.answered++
			if m := msRe.FindStringSubmatch(line); m != nil {
				n, _ := strconv.Atoi(m[1])
				s.ms = append(s.ms, n)
			}
			if strings.Contains(line, "outcome=ok") && len(s.ms) > 0 {
				s.okMs = append(s.okMs, s.ms[len(s.ms)-1])
			} else if m := appRe.FindStringSubmatch(line); m != nil {
				s.failedApps[m[1]]++
			}
		case strings.Contains(line, "request refused"), strings.Contains(line, "repository stream refused"):
			s.refused++
		}
	}
	return s
}

// metrics reads the render server's Prometheus metrics.
func (c *cluster) metrics() (map[string]float64, error) { return readMetrics(sidecarMetrics) }

// readMetrics reads the Prometheus metrics served at addr.
func readMetrics(addr string) (map[string]float64, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out, nil
}

// renderServerComm is argocd-ocm-plugin as /proc/PID/stat names it (15
// bytes at most).
const renderServerComm = "argocd-ocm-plug"

// assertAllServed: the repo-server's generations were answered by the
// render server itself, none refused, and the sidecar runs nothing but the
// render server and its warm workers (at most ARGOCD_OCM_WORKERS): no
// argocd-cmp-server, no process per generation. It returns what the log
// says and the render workers started so far.
func assertAllServed(t *testing.T) (served, float64) {
	t.Helper()
	s := cl.served()
	m, err := cl.metrics()
	if err != nil {
		t.Errorf("render server metrics: %v", err)
	}
	refusedMetric := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "argocd_ocm_requests_refused_total") {
			refusedMetric += v
		}
	}
	if s.answered == 0 || s.refused != 0 || refusedMetric != 0 {
		t.Errorf("the render server answered %d generations, refused %d (metric: %v)\n%s",
			s.answered, s.refused, refusedMetric, cl.sidecar.tail(30))
	}
	var tree []string
	procs, children := procTable()
	walkTree(cl.sidecar.cmd.Process.Pid, procs, children, func(id int, e procEntry) {
		if e.fields[0] == "Z" { // a killed worker not yet waited for
			return
		}
		tree = append(tree, fmt.Sprintf("%s[%d]", e.comm, id))
		if e.comm != renderServerComm {
			t.Errorf("the sidecar runs %s (pid %d): only the render server and its workers should", e.comm, id)
		}
	})
	if len(tree) == 0 || len(tree) > 1+4 {
		t.Errorf("the sidecar's processes %v: want the render server and at most 4 workers (ARGOCD_OCM_WORKERS)", tree)
	}
	starts := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "argocd_ocm_worker_starts_total") {
			starts += v
		}
	}
	return s, starts
}
