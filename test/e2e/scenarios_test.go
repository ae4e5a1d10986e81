package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// The scenarios share one Argo CD and run in this order (Go runs a file's
// tests in source order: a, i, d, b, c, h, e, f, g); each leaves its Applications
// behind for the next, except where it says otherwise.

var (
	servicesGVR   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	configmapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// report collects the figures printed at the end of the run.
var report []string

func note(t *testing.T, format string, args ...any) {
	t.Helper()
	s := fmt.Sprintf(format, args...)
	t.Log(s)
	report = append(report, s)
}

// a. The README's offline example (manifests/examples/application-offline.yaml),
// pointed at a local git repository holding testdata/demo: Synced and Healthy.
func TestA_OfflineExampleSyncsHealthy(t *testing.T) {
	createApp(t, exampleApp(t, "demo", "demo", "", nil))
	took, app := waitApp(t, "demo", "Synced and Healthy", 3*time.Minute, syncedHealthy)
	note(t, "a: first sync of the offline example: Synced and Healthy %s after the Application was created", took.Round(100*time.Millisecond))

	var kinds []string
	res, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
	for _, r := range res {
		m, _ := r.(map[string]any)
		kinds = append(kinds, fmt.Sprintf("%v/%v", m["kind"], m["name"]))
	}
	sort.Strings(kinds)
	want := []string{"ConfigMap/demo-podinfo", "Deployment/demo-podinfo", "Service/demo-podinfo"}
	for _, w := range want {
		if !slices.Contains(kinds, w) {
			t.Errorf("Application resources %v lack %s", kinds, w)
		}
	}
	dep := live(t, deploymentsGVR, "demo", "demo-podinfo")
	if dep == nil {
		t.Fatalf("Deployment demo/demo-podinfo missing")
	}
	if r, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); r != 2 {
		t.Errorf("Deployment replicas %d, want 2 (values: replicaCount: 2)", r)
	}
	// Argo CD's tracking: the Application owns what it deployed.
	if id := dep.GetAnnotations()["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(id, "demo:apps/Deployment:demo/demo-podinfo") {
		t.Errorf("tracking-id %q", id)
	}
	note(t, "a: resources %v, revision %s", kinds, str(app, "status", "sync", "revision"))
}

// i. Every generation went to the warm render server, which answers the
// repo-server on the plugin socket itself: no argocd-cmp-server, no process
// per generation.
func TestI_EveryGenerationServedByRenderServer(t *testing.T) {
	s, starts := assertAllServed(t)
	note(t, "i: %d generations answered by the render server, %d refused, %.0f render workers started; ms per generation %v",
		s.answered, s.refused, starts, s.ms)
}

// d. A bad parameter: a ComparisonError whose message ends with the plugin's
// one error line; nothing deployed is deleted or changed, no sync starts;
// the good parameters bring the Application back.
func TestD_BadParameterIsComparisonError(t *testing.T) {
	before := getApp(t, "demo")
	if !syncedHealthy(before) {
		t.Fatalf("demo is not Synced and Healthy to begin with: %s", summary(before))
	}
	good, _, _ := unstructured.NestedSlice(before.Object, "spec", "source", "plugin", "parameters")
	opStarted := str(before, "status", "operationState", "startedAt")
	objs := map[string]*unstructured.Unstructured{
		"Deployment": live(t, deploymentsGVR, "demo", "demo-podinfo"),
		"Service":    live(t, servicesGVR, "demo", "demo-podinfo"),
		"ConfigMap":  live(t, configmapsGVR, "demo", "demo-podinfo"),
	}

	bad := append(append([]any(nil), good...), map[string]any{"name": "valuess", "string": "replicaCount: 5"})
	patchApp(t, "demo", map[string]any{"spec": map[string]any{"source": map[string]any{"plugin": map[string]any{"parameters": bad}}}})
	const line = `argocd-ocm-plugin: application demo: invalid input: unknown parameter "valuess", did you mean "values"?`
	took, app := waitApp(t, "demo", "ComparisonError", 2*time.Minute, func(u *unstructured.Unstructured) bool {
		return strings.Contains(appConditions(u)["ComparisonError"], line)
	})
	msg := appConditions(app)["ComparisonError"]
	note(t, "d: ComparisonError %s after the bad parameter: %q", took.Round(10*time.Millisecond), msg)
	i := strings.Index(msg, "argocd-ocm-plugin:")
	if tail := msg[i:]; strings.Count(msg, "argocd-ocm-plugin:") != 1 || strings.Contains(tail, "\n") {
		t.Errorf("the message does not end with exactly one plugin line: %q", msg)
	}

	// A hard refresh regenerates again (the controller clears the
	// annotation when it is done): still the error, and no sync.
	patchApp(t, "demo", map[string]any{"metadata": map[string]any{"annotations": map[string]any{"argocd.argoproj.io/refresh": "hard"}}})
	waitApp(t, "demo", "refreshed with the error", time.Minute, func(u *unstructured.Unstructured) bool {
		_, pending := u.GetAnnotations()["argocd.argoproj.io/refresh"]
		return !pending && appConditions(u)["ComparisonError"] != ""
	})
	app = getApp(t, "demo")
	if s := str(app, "status", "operationState", "startedAt"); s != opStarted {
		t.Errorf("a sync started during the error (operation started %s, before %s)", s, opStarted)
	}
	unchanged := func(when string) {
		for kind, o := range objs {
			var gvr schema.GroupVersionResource
			switch kind {
			case "Deployment":
				gvr = deploymentsGVR
			case "Service":
				gvr = servicesGVR
			default:
				gvr = configmapsGVR
			}
			now := live(t, gvr, "demo", "demo-podinfo")
			if now == nil {
				t.Errorf("%s: %s demo-podinfo was deleted", when, kind)
				continue
			}
			if now.GetUID() != o.GetUID() || now.GetResourceVersion() != o.GetResourceVersion() {
				t.Errorf("%s: %s demo-podinfo changed (resourceVersion %s -> %s)", when, kind, o.GetResourceVersion(), now.GetResourceVersion())
			}
		}
	}
	unchanged("during the error")

	// Back to the good parameters: Synced and Healthy, still untouched.
	patchApp(t, "demo", map[string]any{"spec": map[string]any{"source": map[string]any{"plugin": map[string]any{"parameters": good}}}})
	took, _ = waitApp(t, "demo", "Synced and Healthy again", 2*time.Minute, syncedHealthy)
	note(t, "d: good parameters back: Synced and Healthy %s later; deployed objects unchanged throughout", took.Round(10*time.Millisecond))
	unchanged("after the fix")
	assertAllServed(t)
}

// b. A distro component with a deployment definition from git: a Helm
// pre-install Job (PreSync, wave -5, before-hook-creation), the CRD before
// wave 2 (Deployment, StatefulSet), the custom resource in wave 3, a
// PostSync Job deleted once it succeeded (HookSucceeded).
func TestB_HooksAndWaves(t *testing.T) {
	params := []param{{"repository", "idp-bundle.tgz"}, {"component", "example.com/distro/shop"}, {"version", "2.3.0"}, {"definition", "definition.yaml"}}
	start := time.Now()
	createApp(t, exampleApp(t, "shop", "shop", "distro/shop", params))
	took, app := waitApp(t, "shop", "Synced and Healthy", 3*time.Minute, syncedHealthy)
	note(t, "b: hooks and waves: Synced and Healthy %s after creation", took.Round(100*time.Millisecond))

	first := map[string]time.Time{}
	deleted := map[string]time.Time{}
	for _, e := range cl.faker.eventsSince(start) {
		switch e.what {
		case "added":
			if _, ok := first[e.key]; !ok {
				first[e.key] = e.at
			}
		case "deleted":
			deleted[e.key] = e.at
		}
	}
	order := []string{
		"Job/shop/shop-migrate",                                  // PreSync
		"CustomResourceDefinition//products.catalog.example.com", // wave 1 (before the lowest wave of its CRs)
		"Deployment/shop/shop-catalog",                           // wave 2
		"Product/shop/shop-default",                              // wave 3
		"Job/shop/smoke",                                         // PostSync
	}
	var line []string
	for i, k := range order {
		at, ok := first[k]
		if !ok {
			t.Errorf("%s was never created (created: %v)", k, keysOf(first))
			continue
		}
		line = append(line, fmt.Sprintf("%s +%s", k, at.Sub(start).Round(100*time.Millisecond)))
		if i > 0 {
			if prev, ok := first[order[i-1]]; ok && !at.After(prev) {
				t.Errorf("%s created at %s, not after %s (%s)", k, at.Format(time.StampMilli), order[i-1], prev.Format(time.StampMilli))
			}
		}
	}
	if at, ok := first["StatefulSet/shop/shop-cache"]; !ok || at.Sub(first["Deployment/shop/shop-catalog"]).Abs() > time.Second {
		t.Errorf("StatefulSet shop-cache not created with the Deployment (wave 2)")
	}
	note(t, "b: creation order: %s", strings.Join(line, ", "))
	// Deletion policies: HookSucceeded deletes smoke; before-hook-creation keeps shop-migrate.
	if _, ok := deleted["Job/shop/smoke"]; !ok || live(t, jobsGVR, "shop", "smoke") != nil {
		t.Errorf("PostSync Job smoke (HookSucceeded) not deleted")
	}
	if live(t, jobsGVR, "shop", "shop-migrate") == nil {
		t.Errorf("PreSync Job shop-migrate (before-hook-creation) gone after the sync")
	}
	var hooks []string
	res, _, _ := unstructured.NestedSlice(app.Object, "status", "operationState", "syncResult", "resources")
	for _, r := range res {
		m, _ := r.(map[string]any)
		if m["hookType"] != nil {
			hooks = append(hooks, fmt.Sprintf("%v/%v %v %v", m["kind"], m["name"], m["hookType"], m["hookPhase"]))
		}
	}
	note(t, "b: hooks in the sync result: %v", hooks)
	assertAllServed(t)

	// The CRD goes on to the next scenario's Application (same chart):
	// delete this one without its resources, so that they do not share it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.dyn.Resource(appGVR).Namespace(argocdNamespace).Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, func() (bool, error) { return live(t, appGVR, argocdNamespace, "shop") == nil, nil }); err != nil {
		t.Fatalf("Application shop still there a minute after its delete")
	}
}

// c. A parameter change re-renders, and the object that went away is
// pruned: the demo CTF's catalog chart without its cache subchart
// (StatefulSet). The chart's pre-install Job (PreSync,
// before-hook-creation) runs again, as a new object.
func TestC_ParameterChangePrunes(t *testing.T) {
	params := []param{{"repository", "ctf"}, {"component", "example.com/demo/catalog"}, {"version", "2.3.0"}}
	app := exampleApp(t, "catalog", "catalog", "", params)
	app.SetFinalizers([]string{"resources-finalizer.argocd.argoproj.io"}) // deleted at the end with what it deployed
	start := time.Now()
	createApp(t, app)
	took, _ := waitApp(t, "catalog", "Synced and Healthy", 3*time.Minute, syncedHealthy)
	note(t, "c: catalog (CRD, PreSync Job, Deployment, StatefulSet, custom resource) Synced and Healthy %s after creation", took.Round(100*time.Millisecond))
	if live(t, statefulsetsGVR, "catalog", "catalog-cache") == nil {
		t.Fatalf("StatefulSet catalog/catalog-cache missing; statefulsets: %v", listNames(t, statefulsetsGVR, "catalog"))
	}
	firstJob := live(t, jobsGVR, "catalog", "catalog-migrate")
	if firstJob == nil {
		t.Fatalf("PreSync Job catalog/catalog-migrate missing (before-hook-creation keeps it); jobs: %v", listNames(t, jobsGVR, "catalog"))
	}
	before := cl.served().answered

	changed := time.Now()
	setParams(t, "catalog", append(params, param{"values", "cache: {enabled: false}\n"}))
	took, _ = waitApp(t, "catalog", "pruned and Synced", 3*time.Minute, func(u *unstructured.Unstructured) bool {
		return syncedHealthy(u) && str(u, "status", "operationState", "startedAt") >= changed.UTC().Add(-time.Second).Format(time.RFC3339) &&
			live(t, statefulsetsGVR, "catalog", "catalog-cache") == nil
	})
	note(t, "c: values cache.enabled=false: re-rendered, StatefulSet pruned, Synced and Healthy %s after the change", took.Round(100*time.Millisecond))
	if after := cl.served().answered; after <= before {
		t.Errorf("no new generation after the parameter change (%d before, %d after)", before, after)
	}
	if live(t, deploymentsGVR, "catalog", "catalog") == nil && len(listNames(t, deploymentsGVR, "catalog")) == 0 {
		t.Errorf("the Deployment went too")
	}
	if j := live(t, jobsGVR, "catalog", "catalog-migrate"); j == nil || j.GetUID() == firstJob.GetUID() {
		t.Errorf("the PreSync Job did not run again as a new object (before-hook-creation)")
	}
	var deleted []string
	for _, e := range cl.faker.eventsSince(start) {
		if e.what == "deleted" {
			deleted = append(deleted, e.key)
		}
	}
	note(t, "c: deleted during the scenario: %v", deleted)

	// Deleting the Application with its resources finalizer deletes what it
	// deployed (foreground), except the CRD: Argo CD never deletes CRDs on a
	// cascading delete (controller.shouldBeDeleted).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	deleting := time.Now()
	if err := cl.dyn.Resource(appGVR).Namespace(argocdNamespace).Delete(ctx, "catalog", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := poll(ctx, func() (bool, error) {
		return live(t, appGVR, argocdNamespace, "catalog") == nil && len(listNames(t, deploymentsGVR, "catalog")) == 0 &&
			len(listNames(t, jobsGVR, "catalog")) == 0, nil
	}); err != nil {
		t.Fatalf("Application catalog or its Deployment or Job still there 2 min after the delete\n%s", cl.tails())
	}
	if live(t, crdGVR, "", "products.catalog.example.com") == nil {
		t.Errorf("Argo CD deleted the CRD on a cascading delete")
	}
	note(t, "c: Application deleted with its resources (cascade, the CRD kept as Argo CD does) in %s", time.Since(deleting).Round(100*time.Millisecond))
	assertAllServed(t)
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// h. Hostile Applications (a CPU loop stopped only by the deadline, a tpl
// recursion stopped by the memory limit) do not delay another
// Application's sync beyond its generation deadline.
func TestH_HostileDoesNotDelayOthers(t *testing.T) {
	for _, name := range []string{"slow", "tpl"} {
		createApp(t, exampleApp(t, "evil-"+name, "evil", "hostile", []param{
			{"repository", "hostile"}, {"component", "example.com/hostile/" + name}, {"version", "1.0.0"}}))
	}
	// Wait until the render server is busy with them.
	deadline := time.Now().Add(time.Minute)
	for {
		m, _ := cl.metrics()
		if m[`argocd_ocm_workers{state="busy"}`] >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hostile generations never reached the render server\n%s", cl.tails())
		}
		time.Sleep(100 * time.Millisecond)
	}
	hostileStart := time.Now()
	createApp(t, exampleApp(t, "victim", "victim", "", nil))
	took, _ := waitApp(t, "victim", "Synced and Healthy", 50*time.Second, syncedHealthy)
	note(t, "h: victim Synced and Healthy %s after creation, while the hostile generations ran", took.Round(100*time.Millisecond))

	for name, want := range map[string]string{
		"slow": "application evil-slow: component example.com/hostile/slow:1.0.0",
		"tpl":  "application evil-tpl: component example.com/hostile/tpl:1.0.0",
	} {
		_, app := waitApp(t, "evil-"+name, "ComparisonError", 2*time.Minute, func(u *unstructured.Unstructured) bool {
			return strings.Contains(appConditions(u)["ComparisonError"], want)
		})
		msg := appConditions(app)["ComparisonError"]
		note(t, "h: evil-%s: ComparisonError by %s after the hostile generations began: %q", name,
			time.Since(hostileStart).Round(100*time.Millisecond), msg[max(0, strings.Index(msg, "argocd-ocm-plugin:")):])
		if app := live(t, deploymentsGVR, "evil", "evil-"+name); app != nil {
			t.Errorf("evil-%s deployed something", name)
		}
	}
	s, _ := assertAllServed(t)
	note(t, "h: render server outcomes so far: %v failed generations by application", s.failedApps)
}

// e. App of apps, OCM style (manifests/examples/app-of-apps/platform.yaml):
// the plugin renders the platform component's references as child
// Applications (same repository, path and plugin), which Argo CD syncs.
func TestE_PlatformAppOfApps(t *testing.T) {
	b, err := os.ReadFile(repoRoot + "/manifests/examples/app-of-apps/platform.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	must(t, yaml.Unmarshal(b, &obj))
	app := &unstructured.Unstructured{Object: obj}
	must(t, unstructured.SetNestedField(app.Object, cl.gitURL, "spec", "source", "repoURL"))
	createApp(t, app)
	took, parent := waitApp(t, "platform", "Synced and Healthy with child Applications", 3*time.Minute, func(u *unstructured.Unstructured) bool {
		if !syncedHealthy(u) {
			return false
		}
		res, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
		return len(res) > 0
	})
	var children []string
	res, _, _ := unstructured.NestedSlice(parent.Object, "status", "resources")
	for _, r := range res {
		m, _ := r.(map[string]any)
		if m["kind"] == "Application" {
			children = append(children, fmt.Sprint(m["name"]))
		}
	}
	note(t, "e: platform Application Synced and Healthy %s after creation, children %v", took.Round(100*time.Millisecond), children)
	if len(children) != 2 {
		t.Fatalf("child Applications %v, want 2 (podinfo, extras)", children)
	}
	start := time.Now()
	for _, child := range children {
		u := getApp(t, child)
		if got := str(u, "spec", "source", "repoURL"); got != cl.gitURL {
			t.Errorf("child %s: repoURL %q, want the parent's %q", child, got, cl.gitURL)
		}
		if got := str(u, "spec", "source", "plugin", "name"); got != pluginName {
			t.Errorf("child %s: plugin %q", child, got)
		}
		waitApp(t, child, "Synced and Healthy", 3*time.Minute, syncedHealthy)
	}
	note(t, "e: children Synced and Healthy %s after the parent", time.Since(start).Round(100*time.Millisecond))
	assertAllServed(t)
}

// f. An ApplicationSet with the plugin's generator (argocd-ocm-plugin
// generator, its own process as its own Deployment would be) under Argo CD's
// applicationset-controller: one Application per component version of the
// demo CTF, each Synced and Healthy.
func TestF_ApplicationSetPluginGenerator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokenFile := path(cl.dir, "generator.token")
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	token := hex.EncodeToString(tok)
	must(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	// The generator lists a CTF of its own that holds 1.0.0 only; 1.1.0+build.7
	// is transferred into it later, as a release pipeline would push it.
	appsetRoot := path(cl.dir, "appset")
	transfer := func(version string) {
		t.Helper()
		out, err := exec.Command(path(pluginBin, "argocd-ocm-plugin"), "transfer", "--from", path(repoRoot, "testdata", "demo", "ctf"),
			"--to", path(appsetRoot, "ctf"), "--component", "example.com/demo/podinfo", "--version", version).CombinedOutput()
		if err != nil {
			t.Fatalf("transfer %s: %v\n%s", version, err, out)
		}
	}
	transfer("1.0.0")
	gen, err := cl.start("generator", append(cl.baseEnv("home"), "ARGOCD_OCM_CACHE_DIR="+path(cl.dir, "cache")),
		path(pluginBin, "argocd-ocm-plugin"), "generator", "--listen", generatorAddr, "--token-file", tokenFile,
		"--ctf-dir", appsetRoot, "--list-ttl", "1s")
	must(t, err)
	must(t, gen.waitFor("/healthz", 30*time.Second, httpOK("http://"+generatorAddr+"/healthz")))
	for _, doc := range []string{
		"apiVersion: v1\nkind: Secret\nmetadata: {name: argocd-ocm-generator, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}\nstringData: {token: " + token + "}",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-ocm-generator, namespace: argocd}\ndata: {baseUrl: 'http://" + generatorAddr + "', token: '$argocd-ocm-generator:token', requestTimeout: '30'}",
	} {
		must(t, cl.apply(ctx, doc))
	}
	asc := cl.appSetController(t)

	start := time.Now()
	must(t, cl.apply(ctx, `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: podinfo-versions, namespace: argocd}
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - plugin:
        configMapRef: {name: argocd-ocm-generator}
        requeueAfterSeconds: 5
        input:
          parameters: {repository: ./ctf, component: example.com/demo/podinfo, latest: 0}
  template:
    metadata:
      name: 'appset-{{ .versionName }}'
      annotations: {argocd-ocm-plugin.io/digest: '{{ .digest }}'}
    spec:
      project: default
      source:
        repoURL: '`+cl.gitURL+`'
        targetRevision: main
        path: testdata/demo
        plugin:
          name: argocd-ocm-plugin
          parameters:
            - {name: repository, string: ctf}
            - {name: component, string: '{{ .component }}'}
            - {name: version, string: '{{ .version }}'}
      destination: {server: https://kubernetes.default.svc, namespace: 'appset-{{ .versionName }}'}
      syncPolicy:
        automated: {prune: true}
        syncOptions: [CreateNamespace=true]`))
	appear := func(name string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for live(t, appGVR, argocdNamespace, name) == nil {
			if time.Now().After(deadline) {
				t.Fatalf("the ApplicationSet made no Application %s in 2 min; Applications: %v\n%s\n%s\n%s", name,
					listNames(t, appGVR, argocdNamespace), asc.tail(15), gen.tail(10), cl.tails())
			}
			time.Sleep(200 * time.Millisecond)
		}
		waitApp(t, name, "Synced and Healthy", 3*time.Minute, syncedHealthy)
	}
	appear("appset-1-0-0")
	first := time.Since(start)
	if live(t, appGVR, argocdNamespace, "appset-1-1-0-build-7") != nil {
		t.Fatalf("appset-1-1-0-build-7 exists before its version was transferred")
	}
	pushed := time.Now()
	transfer("1.1.0+build.7")
	appear("appset-1-1-0-build-7")
	note(t, "f: ApplicationSet with the plugin generator: appset-1-0-0 Synced and Healthy %s after the ApplicationSet was applied; a version transferred into the listed CTF afterwards became appset-1-1-0-build-7, Synced and Healthy %s later (requeueAfterSeconds 5)",
		first.Round(100*time.Millisecond), time.Since(pushed).Round(100*time.Millisecond))
	assertAllServed(t)
}

// g. The Source Hydrator: Argo CD renders the dry source (this plugin) and
// its argocd-commit-server commits the manifests to a branch of the git
// repository, from which the Application syncs.
func TestG_SourceHydrator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := cl.start("commit-server", cl.baseEnv("controller-tmp"), path(e2eBin, "argocd-commit-server"),
		"--address", "127.0.0.1", "--port", "8087", "--metrics-address", "127.0.0.1", "--metrics-port", "8088")
	must(t, err)
	must(t, cs.waitFor("a gRPC listener", 30*time.Second, dials("tcp", commitServerAddr)))
	must(t, cl.apply(ctx, "apiVersion: v1\nkind: Secret\nmetadata: {name: e2e-repo-write, namespace: argocd, labels: {argocd.argoproj.io/secret-type: repository-write}}\nstringData: {type: git, url: '"+cl.gitURL+"'}"))
	must(t, cl.apply(ctx, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: hydrated, namespace: argocd}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: hydrated}
  sourceHydrator:
    drySource:
      repoURL: '`+cl.gitURL+`'
      targetRevision: main
      path: testdata/demo
      plugin:
        name: argocd-ocm-plugin
        parameters:
          - {name: repository, string: ctf}
          - {name: component, string: example.com/demo/podinfo}
          - {name: version, string: 1.0.0}
    syncSource: {targetBranch: environments/hydrated, path: hydrated}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [CreateNamespace=true]`))
	took, first := waitApp(t, "hydrated", "hydrated, Synced and Healthy", 3*time.Minute, func(u *unstructured.Unstructured) bool {
		return str(u, "status", "sourceHydrator", "currentOperation", "phase") == "Hydrated" && syncedHealthy(u)
	})
	out, err := exec.Command("git", "--git-dir", path(cl.dir, "git", "repo.git"), "show", "environments/hydrated:hydrated/manifest.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "name: hydrated-podinfo") {
		t.Errorf("the hydrated branch holds no manifest of hydrated-podinfo: %v\n%.2000s\n%s", err, out, cs.tail(15))
	}
	if live(t, deploymentsGVR, "hydrated", "hydrated-podinfo") == nil {
		t.Errorf("Deployment hydrated/hydrated-podinfo missing")
	}
	// The same input hydrates to the same manifests: a new dry commit that
	// changes nothing the plugin reads is rendered again, byte for byte.
	gitOut := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir, cmd.Env = dir, cl.baseEnv("home")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	bare, work := path(cl.dir, "git", "repo.git"), path(cl.dir, "git", "work")
	before := gitOut(cl.dir, "--git-dir", bare, "show", "environments/hydrated:hydrated/manifest.yaml")
	gitOut(work, "commit", "-q", "--allow-empty", "-m", "an unrelated change")
	gitOut(work, "push", "-q", bare, "main")
	dry := gitOut(cl.dir, "--git-dir", bare, "rev-parse", "main")
	patchApp(t, "hydrated", map[string]any{"metadata": map[string]any{"annotations": map[string]any{"argocd.argoproj.io/refresh": "normal"}}})
	again, second := waitApp(t, "hydrated", "hydrated again from "+dry[:8], 3*time.Minute, func(u *unstructured.Unstructured) bool {
		op := func(f string) string { return str(u, "status", "sourceHydrator", "currentOperation", f) }
		return op("drySHA") == dry && op("phase") == "Hydrated"
	})
	if after := gitOut(cl.dir, "--git-dir", bare, "show", "environments/hydrated:hydrated/manifest.yaml"); after != before {
		t.Errorf("the same input hydrated to other manifests:\n%.1500s\n---\n%.1500s", before, after)
	}
	commit := "the same hydrated commit"
	if h1, h2 := str(first, "status", "sourceHydrator", "currentOperation", "hydratedSHA"), str(second, "status", "sourceHydrator", "currentOperation", "hydratedSHA"); h1 != h2 {
		commit = "a new hydrated commit (Argo CD records the dry commit in it), the manifest unchanged"
	}
	note(t, "g: Source Hydrator: rendered by the plugin, committed to environments/hydrated by argocd-commit-server, Synced and Healthy %s after the Application was applied; a new dry commit changing nothing the plugin reads was hydrated again %s later to byte-identical manifests: %s",
		took.Round(100*time.Millisecond), again.Round(100*time.Millisecond), commit)
	assertAllServed(t)
}

// j. Keyless trust: an Application whose project's rule requires the keyless
// signature of the signer is Synced; one whose rule names another identity
// is a ComparisonError naming both, and nothing of it is created.
func TestJ_KeylessSignatureRequired(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range []string{"keyless-release", "keyless-impostor"} {
		must(t, cl.apply(ctx, `apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: `+p+`, namespace: argocd}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]`))
	}
	app := func(name string) *unstructured.Unstructured {
		u := exampleApp(t, name, name, "keyless", []param{{"repository", "ctf"}, {"component", "example.com/keyless/hello"}, {"version", "1.0.0"}})
		must(t, unstructured.SetNestedField(u.Object, name, "spec", "project"))
		return u
	}
	createApp(t, app("keyless-release"))
	took, _ := waitApp(t, "keyless-release", "Synced and Healthy", 3*time.Minute, syncedHealthy)
	if live(t, configmapsGVR, "keyless-release", "hello-keyless") == nil {
		t.Errorf("ConfigMap keyless-release/hello-keyless was not deployed")
	}
	note(t, "j: keyless signature verified offline (trusted root, identity, issuer): Synced and Healthy %s after the Application was created", took.Round(100*time.Millisecond))

	createApp(t, app("keyless-impostor"))
	want := `signed by "` + keylessIdentity + `" (OIDC issuer "` + keylessIssuerURL + `"), the policy requires identity "` + keylessImpostor + `"`
	took, bad := waitApp(t, "keyless-impostor", "ComparisonError", 2*time.Minute, func(u *unstructured.Unstructured) bool {
		return strings.Contains(appConditions(u)["ComparisonError"], want)
	})
	msg := appConditions(bad)["ComparisonError"]
	if i := strings.Index(msg, "argocd-ocm-plugin:"); i < 0 || strings.Contains(msg[i:], "\n") {
		t.Errorf("the message does not end with one plugin line: %q", msg)
	}
	if s := str(bad, "status", "operationState", "startedAt"); s != "" {
		t.Errorf("a sync started for the refused Application (at %s)", s)
	}
	if live(t, configmapsGVR, "keyless-impostor", "hello-keyless") != nil {
		t.Errorf("the refused Application's ConfigMap exists")
	}
	note(t, "j: wrong identity: ComparisonError %s after the Application was created, nothing applied: %q", took.Round(100*time.Millisecond), msg)
}
