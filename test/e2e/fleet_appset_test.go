package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var appSetGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}

var ascOnce struct {
	sync.Once
	p   *proc
	err error
}

// appSetController starts Argo CD's applicationset-controller once for the
// scenarios that need it (f and the fleet's).
func (c *cluster) appSetController(t *testing.T) *proc {
	t.Helper()
	ascOnce.Do(func() {
		ascOnce.p, ascOnce.err = c.start("applicationset-controller", append(c.baseEnv("controller-tmp"),
			"KUBECONFIG="+path(c.dir, "kubeconfig"), "ARGOCD_FAKE_IN_CLUSTER=true"),
			path(e2eBin, "argocd-applicationset-controller"), "--namespace", argocdNamespace,
			"--argocd-repo-server", repoServerAddr, "--repo-server-plaintext", "--enable-leader-election=false",
			"--metrics-addr", "127.0.0.1:8085", "--probe-addr", "127.0.0.1:8086", "--webhook-addr", "127.0.0.1:7000")
		if ascOnce.err == nil {
			ascOnce.err = ascOnce.p.waitFor("its metrics listener", 60*time.Second, dials("tcp", "127.0.0.1:8085"))
		}
	})
	must(t, ascOnce.err)
	return ascOnce.p
}

// webhookGenerator is the plugin generator the registry notifies: its own
// process and ConfigMap (argocd-ocm-generator-webhook), version lists kept
// 10 min, so that only the webhook can make it see a new version early.
var webhookGenerator *proc

func (c *cluster) startWebhookGenerator() error {
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	token := hex.EncodeToString(tok)
	tokenFile, secretFile := path(c.dir, "webhook-generator.token"), path(c.dir, "webhook-generator.secret")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(secretFile, []byte(webhookSecret+"\n"), 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, doc := range []string{
		"apiVersion: v1\nkind: Secret\nmetadata: {name: argocd-ocm-generator-webhook, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}\nstringData: {token: " + token + "}",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-ocm-generator-webhook, namespace: argocd}\ndata: {baseUrl: 'http://" + webhookGeneratorAddr + "', token: '$argocd-ocm-generator-webhook:token', requestTimeout: '30'}",
	} {
		if err := c.apply(ctx, doc); err != nil {
			return err
		}
	}
	var err error
	webhookGenerator, err = c.start("webhook-generator", append(c.baseEnv("home"),
		"ARGOCD_OCM_CACHE_DIR="+path(c.dir, "generator-cache"), "ARGOCD_OCM_PLAIN_HTTP="+registryAddr),
		path(pluginBin, "argocd-ocm-plugin"), "generator", "--listen", webhookGeneratorAddr, "--token-file", tokenFile,
		"--list-ttl", "10m", "--configmap-name", "argocd-ocm-generator-webhook", "--kubeconfig", path(c.dir, "kubeconfig"),
		"--webhook-source", "name="+webhookSource+",kind=distribution,secret-file="+secretFile)
	if err != nil {
		return err
	}
	return webhookGenerator.waitFor("/healthz", 30*time.Second, httpOK("http://"+webhookGeneratorAddr+"/healthz"))
}

// appSetTemplate is the Application template of the fleet's ApplicationSets.
func appSetTemplate(name, label, member, values string) string {
	return `  template:
    metadata:
      name: '` + name + `'
      labels: {e2e-fleet-round: ` + label + `}
      annotations: {argocd-ocm-plugin.io/digest: '{{ .digest }}', argocd.argoproj.io/manifest-generate-paths: .}
    spec:
      project: default
      source:
        repoURL: '` + cl.gitURL + `'
        targetRevision: main
        path: fleet
        plugin:
          name: argocd-ocm-plugin
          parameters:
            - {name: repository, string: '{{ .repository }}'}
            - {name: component, string: '{{ .component }}'}
            - {name: version, string: '{{ .version }}'}
            - {name: values, string: '` + values + `'}
      destination: {server: https://kubernetes.default.svc, namespace: 'fleet-` + member + `'}
      syncPolicy:
        automated: {prune: true}
        syncOptions: [CreateNamespace=true]`
}

// TestFleetApplicationSet: one ApplicationSet generates the N
// Applications, the plugin generator's newest version of the component
// times a list of N members, each with its own values.
func TestFleetApplicationSet(t *testing.T) {
	fleetSetup(t)
	cl.appSetController(t)
	var elems strings.Builder
	for i := range fleetN {
		fmt.Fprintf(&elems, "                - {i: '%d', values: \"replicaCount: %d\\nui: {message: fleet member %d}\"}\n", i, 1+i%3, i)
	}
	doc := `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: fleet, namespace: argocd}
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - matrix:
        generators:
          - plugin:
              configMapRef: {name: argocd-ocm-generator-webhook}
              requeueAfterSeconds: 3600
              input:
                parameters: {repository: '` + fleetRepo + `', component: ` + fleetComponent + `, version: '` + fleetVersion + `'}
          - list:
              elements:
` + elems.String() + appSetTemplate("as-{{ .i }}", "appset", "{{ .i }}", "{{ .values }}")
	ctx := context.Background()
	start := time.Now()
	must(t, cl.apply(ctx, doc))
	deadline := start.Add(5*time.Minute + time.Duration(fleetN)*3*time.Second)
	var created time.Duration
	synced := 0
	for {
		l, err := cl.dyn.Resource(appGVR).Namespace(argocdNamespace).List(ctx, metav1.ListOptions{LabelSelector: "e2e-fleet-round=appset"})
		if err == nil {
			if created == 0 && len(l.Items) == fleetN {
				created = time.Since(start)
			}
			synced = 0
			for _, u := range l.Items {
				if str(&u, "status", "sync", "status") == "Synced" && str(&u, "status", "operationState", "phase") == "Succeeded" {
					synced++
				}
			}
			if synced == fleetN {
				break
			}
		}
		// An ApplicationSet whose template does not resolve per element
		// (duplicate names) creates no Application at all and says so
		// only in ErrorOccurred; its next try is requeueAfterSeconds (3
		// min for a list) later: fail at once, not at the deadline.
		if as := live(t, appSetGVR, argocdNamespace, "fleet"); as != nil && condition(as, "ErrorOccurred") == "True" {
			t.Fatalf("ApplicationSet fleet: ErrorOccurred: %s", appConditions(as)["ErrorOccurred"])
		}
		if time.Now().After(deadline) {
			if l != nil {
				for _, u := range l.Items {
					if c := appConditions(&u); len(c) > 0 {
						t.Errorf("Application %s: %v", u.GetName(), c)
						break
					}
				}
			}
			as := live(t, appSetGVR, argocdNamespace, "fleet")
			t.Fatalf("ApplicationSet fleet: %d of %d Applications Synced after %s; its conditions: %v\n%s\n%s",
				synced, fleetN, time.Since(start).Round(time.Second), appConditions(as), ascOnce.p.tail(15), cl.tails())
		}
		time.Sleep(500 * time.Millisecond)
	}
	took := time.Since(start)
	note(t, "fleet ApplicationSet (plugin generator × list of %d): all %d Applications created %.1f s and Synced+Succeeded %.1f s after the apply (%.2f Applications/s)",
		fleetN, fleetN, created.Seconds(), took.Seconds(), float64(fleetN)/took.Seconds())
	must(t, cl.dyn.Resource(appSetGVR).Namespace(argocdNamespace).Delete(ctx, "fleet", metav1.DeleteOptions{}))
	must(t, poll(ctx, func() (bool, error) { return live(t, appSetGVR, argocdNamespace, "fleet") == nil, nil }))
	// Without a garbage collector the owner references delete nothing.
	deleteRound(t, "appset")
}

// TestFleetWebhook: the registry's own notifications of a push reach the
// plugin generator's webhook, which refreshes the ApplicationSet that lists
// the component (requeueAfterSeconds 3600, version lists kept 10 min: no
// poll can find it), and the new version becomes an Application within
// 5 s of the webhook.
func TestFleetWebhook(t *testing.T) {
	fleetSetup(t)
	cl.appSetController(t)
	ctx := context.Background()
	doc := `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: pushed, namespace: argocd}
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - plugin:
        configMapRef: {name: argocd-ocm-generator-webhook}
        requeueAfterSeconds: 3600
        input:
          parameters: {repository: '` + fleetRepo + `', component: ` + fleetComponent + `, latest: 0}
        values: {i: pushed, values: 'ui: {message: pushed}'}
` + appSetTemplate("push-{{ .versionName }}", "webhook", "{{ .values.i }}", "{{ .values.values }}")
	must(t, cl.apply(ctx, doc))
	waitApp(t, "push-6-14-1", "Synced", 3*time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "Synced"
	})
	if v := cl.version(ctx, "6.14.2"); v {
		t.Fatalf("6.14.2 is in the registry before its push")
	}
	logFrom := fileSize(webhookGenerator.logPath)
	must(t, cl.transfer("6.14.2"))
	pushed := time.Now()
	var appeared time.Time
	for deadline := pushed.Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if live(t, appGVR, argocdNamespace, "push-6-14-2") != nil {
			appeared = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Application push-6-14-2 30 s after the push\n%s\n%s", webhookGenerator.tail(15), ascOnce.p.tail(15))
		}
	}
	received, ok := logTime(webhookGenerator.logPath, logFrom, `msg="webhook event accepted"`, "tag=6.14.2")
	if !ok {
		t.Fatalf("the generator logged no webhook event of 6.14.2\n%s", webhookGenerator.tail(15))
	}
	fromWebhook := appeared.Sub(received)
	note(t, "webhook: push of %s 6.14.2 → the registry's notification reached the generator %.2f s after the push ended, the Application push-6-14-2 existed %.2f s after the webhook (%.2f s after the push), requeueAfterSeconds 3600, list TTL 10 min",
		fleetComponent, received.Sub(pushed).Seconds(), fromWebhook.Seconds(), appeared.Sub(pushed).Seconds())
	if fromWebhook > 5*time.Second {
		t.Errorf("the Application appeared %s after the webhook, want ≤ 5 s", fromWebhook)
	}
	waitApp(t, "push-6-14-2", "Synced", 3*time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sync", "status") == "Synced"
	})
	must(t, cl.dyn.Resource(appSetGVR).Namespace(argocdNamespace).Delete(ctx, "pushed", metav1.DeleteOptions{}))
	must(t, poll(ctx, func() (bool, error) { return live(t, appSetGVR, argocdNamespace, "pushed") == nil, nil }))
	deleteRound(t, "webhook")
}

// version reports whether the registry has the fleet component's version.
func (c *cluster) version(ctx context.Context, v string) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+registryAddr+"/v2/ocm/component-descriptors/"+fleetComponent+"/manifests/"+v, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logTime is the time= of the first line after offset from that holds all of want.
func logTime(p string, from int64, want ...string) (time.Time, bool) {
	f, err := os.Open(p)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	if _, err := f.Seek(from, 0); err != nil {
		return time.Time{}, false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		all := true
		for _, w := range want {
			all = all && strings.Contains(line, w)
		}
		if !all {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "time="); ok {
				if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
					return t, true
				}
			}
		}
	}
	return time.Time{}, false
}
