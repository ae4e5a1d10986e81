package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The fleet (issue 40): the real podinfo chart as an OCM component in the
// run's registry and as a Helm chart pushed to the same registry for Argo
// CD's native Helm OCI source; N Applications of each, each with its own
// values and automated sync, rounds alternating plugin and native.
//
// make e2e runs it small (E2E_FLEET_N=20, 2 rounds); make e2e-fleet N=… ROUNDS=…
// REPLICAS=… runs only the fleet scenarios, for figures.

const (
	fleetComponent = "example.com/fleet/podinfo"
	fleetVersion   = "6.14.1"
	fleetChart     = "podinfo"
	fleetRepo      = registryAddr + "/ocm"
	chartRepo      = registryAddr + "/charts"
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

var (
	fleetN        = envInt("E2E_FLEET_N", 20)
	fleetRounds   = envInt("E2E_FLEET_ROUNDS", 2)
	fleetReplicas = envInt("E2E_FLEET_REPLICAS", 1)
)

var fleetOnce struct {
	sync.Once
	err error
}

// fleetSetup puts the component and the chart into the registry, the Helm
// OCI repository into Argo CD, and starts the webhook generator (the
// registry notifies it of the pushes).
func fleetSetup(t *testing.T) {
	t.Helper()
	fleetOnce.Do(func() { fleetOnce.err = doFleetSetup() })
	if fleetOnce.err != nil {
		t.Fatalf("fleet setup: %v", fleetOnce.err)
	}
}

func doFleetSetup() error {
	if err := cl.startWebhookGenerator(); err != nil {
		return err
	}
	if err := cl.transfer(fleetVersion); err != nil {
		return err
	}
	helm := exec.Command(path(e2eBin, "helm"), "push", path(repoRoot, "testdata", "fleet", "podinfo-6.14.1.tgz"), "oci://"+chartRepo, "--plain-http")
	helm.Env = cl.baseEnv("home")
	if out, err := helm.CombinedOutput(); err != nil {
		return fmt.Errorf("helm push: %v: %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cl.apply(ctx, `apiVersion: v1
kind: Secret
metadata: {name: fleet-charts, namespace: argocd, labels: {argocd.argoproj.io/secret-type: repository}}
stringData: {type: helm, name: fleet-charts, url: '`+chartRepo+`', enableOCI: "true", insecureOCIForceHttp: "true"}`)
}

// transfer copies a version of the fleet component from the fixtures' CTF
// into the registry with the plugin's own transfer command.
func (c *cluster) transfer(version string) error {
	cmd := exec.Command(path(pluginBin, "argocd-ocm-plugin"), "transfer", "--from", path(fixtures, "fleet", "ctf"),
		"--to", "http://"+fleetRepo, "--component", fleetComponent, "--version", version)
	cmd.Env = append(c.baseEnv("home"), "ARGOCD_OCM_PLAIN_HTTP="+registryAddr, "ARGOCD_OCM_CACHE_DIR="+path(c.dir, "transfer-cache"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("transfer %s: %v: %s", version, err, out)
	}
	return nil
}

// fleetValues are Application i's own values.
func fleetValues(i int) map[string]any {
	return map[string]any{"replicaCount": int64(1 + i%3), "ui": map[string]any{"message": fmt.Sprintf("fleet member %d", i)}}
}

// fleetApp is Application i of a round, through the plugin or natively,
// in a namespace of the round's own: Argo CD creates it (CreateNamespace),
// and a round that found the previous round's namespaces would skip that
// work (nothing deletes a namespace here: the cluster runs no namespace
// controller), so the second round of a pair would be the cheaper one.
func fleetApp(name, round string, i int, native bool) *unstructured.Unstructured {
	values := fleetValues(i)
	var source map[string]any
	if native {
		source = map[string]any{"repoURL": chartRepo, "chart": fleetChart, "targetRevision": "6.14.1",
			"helm": map[string]any{"valuesObject": values}}
	} else {
		vy, _ := yaml.Marshal(values)
		source = map[string]any{"repoURL": cl.gitURL, "targetRevision": "main", "path": "fleet",
			"plugin": map[string]any{"name": pluginName, "parameters": paramList([]param{
				{"repository", fleetRepo}, {"component", fleetComponent}, {"version", fleetVersion}, {"values", string(vy)}})}}
	}
	meta := map[string]any{"name": name, "namespace": argocdNamespace,
		"labels":     map[string]any{"e2e-fleet-round": round},
		"finalizers": []any{"resources-finalizer.argocd.argoproj.io"}}
	if !native {
		// As docs/scaling.md recommends: Argo CD streams the plugin only
		// the Application's directory, not the whole repository.
		meta["annotations"] = map[string]any{"argocd.argoproj.io/manifest-generate-paths": "."}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": meta,
		"spec": map[string]any{"project": "default", "source": source,
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": fmt.Sprintf("%s-%d", round, i)},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true}, "syncOptions": []any{"CreateNamespace=true"}}},
	}}
}

// roundResult is what one round measured.
type roundResult struct {
	mode    string
	n       int
	took    time.Duration
	synced  int
	errored []string
	cpu     map[string]time.Duration
	// byCommand is the generation CPU (repo-server and sidecar) by
	// "group/command", 0.1 s or more.
	byCommand map[string]time.Duration
	// generations the render servers answered (plugin rounds): one per
	// Application unless Argo CD generated some again.
	generations, workerStarts float64
	mem                       map[string]int64
	requests                  map[string]int // registry requests by client
	blobGets                  map[string]int // blob GETs by digest (the plugin's)
	load                      [2]string
}

func (r roundResult) line() string {
	mib := func(k string) int64 { return r.mem[k] >> 20 }
	return fmt.Sprintf("%s: %d/%d Synced+Succeeded in %.1f s (%.2f Applications/s), errors %d; CPU s: repo-server %.1f, sidecar %.1f, generation %.1f, controller %.1f; peak MiB: repo-server %d, sidecar %d, controller %d; registry requests per Application: %.1f (plugin %d, helm %d); load %s → %s",
		r.mode, r.synced, r.n, r.took.Seconds(), float64(r.synced)/r.took.Seconds(), len(r.errored),
		r.cpu["repo-server"].Seconds(), r.cpu["sidecar"].Seconds(), (r.cpu["repo-server"] + r.cpu["sidecar"]).Seconds(), r.cpu["controller"].Seconds(),
		mib("repo-server"), mib("sidecar"), mib("controller"),
		float64(r.requests["plugin"]+r.requests["helm"])/float64(r.n), r.requests["plugin"], r.requests["helm"], r.load[0], r.load[1])
}

// cpuByCommand is the CPU time of the repo-server and sidecar trees by
// "group/command" (see treeCPUByCommand).
func cpuByCommand(groups map[string][]*proc) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, g := range []string{"repo-server", "sidecar"} {
		m := map[string]time.Duration{}
		for _, p := range groups[g] {
			if !p.exited() {
				treeCPUByCommand(p.cmd.Process.Pid, m)
			}
		}
		for k, d := range m {
			out[g+"/"+k] += d
		}
	}
	return out
}

// renderCounts are the generations every replica's render server
// answered so far and the workers it started.
type renderCounts struct{ generations, workerStarts float64 }

func (c *cluster) renderCounts() renderCounts {
	var n renderCounts
	for _, r := range c.replicas {
		if m, err := readMetrics(r.metrics); err == nil {
			for k, v := range m {
				switch {
				case strings.HasPrefix(k, "argocd_ocm_generations_total{"):
					n.generations += v
				case k == "argocd_ocm_worker_starts_total":
					n.workerStarts += v
				}
			}
		}
	}
	return n
}

// breakdown is byCommand as one sorted line, largest first.
func (r roundResult) breakdown() string {
	keys := make([]string, 0, len(r.byCommand))
	for k := range r.byCommand {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return r.byCommand[keys[i]] > r.byCommand[keys[j]] })
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.1f", k, r.byCommand[k].Seconds())
	}
	return b.String()
}

// groups are the process trees a round measures.
func (c *cluster) groups() map[string][]*proc {
	g := map[string][]*proc{"controller": {c.controller}}
	for _, r := range c.replicas {
		g["repo-server"] = append(g["repo-server"], r.repoServer)
		g["sidecar"] = append(g["sidecar"], r.sidecar)
	}
	return g
}

// runRound creates the round's N Applications at once, waits until all
// are Synced with a Succeeded operation, then deletes them with their
// resources (not timed).
func runRound(t *testing.T, round string, n int, native bool) roundResult {
	t.Helper()
	res := roundResult{mode: "plugin", n: n, cpu: map[string]time.Duration{}, requests: map[string]int{}, blobGets: map[string]int{}}
	if native {
		res.mode = "native"
	}
	groups := cl.groups()
	cpu0 := map[string]time.Duration{}
	for k, ps := range groups {
		cpu0[k] = cpuOf(ps)
	}
	byCmd0 := cpuByCommand(groups)
	counts0 := cl.renderCounts()
	logFrom := cl.registryLogEnd()
	res.load[0] = loadavg()
	smp := sample(250*time.Millisecond, groups)
	ctx := context.Background()
	start := time.Now()

	// As kubectl apply of one file would, one after another, but from
	// four clients (an apply of 500 objects takes seconds).
	names := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				names[i] = fmt.Sprintf("%s-%d", round, i)
				if _, err := cl.dyn.Resource(appGVR).Namespace(argocdNamespace).Create(ctx, fleetApp(names[i], round, i, native), metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating the round's Applications: %v", err)
	}
	created := time.Since(start)

	// Generous: the shared machine's load decides how long a round takes.
	timeout := 5*time.Minute + time.Duration(n)*3*time.Second
	deadline := start.Add(timeout)
	errored := map[string]string{}
	for {
		l, err := cl.dyn.Resource(appGVR).Namespace(argocdNamespace).List(ctx, metav1.ListOptions{LabelSelector: "e2e-fleet-round=" + round})
		if err == nil {
			res.synced = 0
			for _, u := range l.Items {
				if str(&u, "status", "sync", "status") == "Synced" && str(&u, "status", "operationState", "phase") == "Succeeded" {
					res.synced++
				}
				for typ, msg := range appConditions(&u) {
					if strings.HasSuffix(typ, "Error") {
						errored[u.GetName()] = typ + ": " + msg
					}
				}
				if p := str(&u, "status", "operationState", "phase"); p == "Failed" || p == "Error" {
					errored[u.GetName()] = "operation " + p + ": " + str(&u, "status", "operationState", "message")
				}
			}
			if res.synced == n {
				break
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	res.took = time.Since(start)
	res.mem = smp.end()
	for k, ps := range groups {
		res.cpu[k] = cpuOf(ps) - cpu0[k]
	}
	counts := cl.renderCounts()
	res.generations, res.workerStarts = counts.generations-counts0.generations, counts.workerStarts-counts0.workerStarts
	res.byCommand = map[string]time.Duration{}
	for k, d := range cpuByCommand(groups) {
		if d -= byCmd0[k]; d >= 100*time.Millisecond {
			res.byCommand[k] = d
		}
	}
	res.load[1] = loadavg()
	reqs, _ := cl.registryLog(logFrom)
	for _, q := range reqs {
		who := "other"
		switch {
		case strings.HasPrefix(q.agent, "argocd-ocm-plugin"):
			who = "plugin"
			if q.method == "GET" && strings.Contains(q.path, "/blobs/") {
				res.blobGets[q.path[strings.LastIndex(q.path, "/")+1:]]++
			}
		case strings.Contains(strings.ToLower(q.agent), "helm"):
			who = "helm"
		}
		res.requests[who]++
	}
	for name, e := range errored {
		res.errored = append(res.errored, name+": "+e)
	}
	sort.Strings(res.errored)
	t.Logf("round %s: %d Applications created in %s", round, n, created.Round(time.Millisecond))
	if res.synced != n {
		t.Errorf("round %s (%s): %d of %d Synced+Succeeded after %s; errors: %v\n%s", round, res.mode, res.synced, n, timeout, head(res.errored, 5), cl.tails())
	}
	return res
}

func head(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}

// deleteRound deletes the round's Applications with their resources.
func deleteRound(t *testing.T, round string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	sel := metav1.ListOptions{LabelSelector: "e2e-fleet-round=" + round}
	// One delete per Application, again while any is left: a
	// DeleteCollection of hundreds can outlast the API server's request
	// timeout on a loaded machine.
	if err := poll(ctx, func() (bool, error) {
		l, err := cl.dyn.Resource(appGVR).Namespace(argocdNamespace).List(ctx, sel)
		if err != nil {
			return false, nil
		}
		for _, u := range l.Items {
			if u.GetDeletionTimestamp() == nil {
				_ = cl.dyn.Resource(appGVR).Namespace(argocdNamespace).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
			}
		}
		if len(l.Items) > 0 {
			time.Sleep(time.Second)
		}
		return len(l.Items) == 0, nil
	}); err != nil {
		t.Fatalf("round %s: Applications still there 10 min after their delete\n%s", round, cl.tails())
	}
	t.Logf("round %s deleted with its resources in %s", round, time.Since(start).Round(100*time.Millisecond))
}

func median(ds []float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestFleet: rounds alternate plugin and native (plugin first); each
// round's figures, then the medians per mode. With E2E_FLEET_REPLICAS=2 a
// second repo-server replica (its own sidecar and cache) serves half the
// generations: no errors, and each blob fetched at most once per replica.
func TestFleet(t *testing.T) {
	fleetSetup(t)
	runFleet(t, "r", fleetReplicas, fleetRounds)
}

// TestFleetTwoReplicas: when TestFleet ran with one replica, one plugin
// and one native round with two (make e2e-fleet REPLICAS=2 runs them all
// with two).
func TestFleetTwoReplicas(t *testing.T) {
	if fleetReplicas > 1 {
		t.Skipf("TestFleet ran with %d replicas", fleetReplicas)
	}
	fleetSetup(t)
	runFleet(t, "two", 2, 2)
}

func runFleet(t *testing.T, prefix string, replicas, rounds int) {
	var added []*replica
	for n := 2; n <= replicas; n++ {
		r, err := cl.addReplica(n)
		must(t, err)
		added = append(added, r)
	}
	defer func() {
		for _, r := range added {
			cl.removeReplica(r)
		}
	}()
	caches := map[int]map[string]bool{}
	for _, r := range cl.replicas {
		caches[r.n] = cachedBlobs(r.cache)
	}
	conns0 := cl.service.connections()
	note(t, "fleet: N=%d per round, %d rounds, %d repo-server replica(s), load %s", fleetN, rounds, len(cl.replicas), loadavg())
	results := map[string][]roundResult{}
	pluginBlobs := map[string]int{}
	// A warm-up round of each way first, not counted: the first Applications
	// a fresh Argo CD syncs pay for what it then keeps (the controller's
	// cluster cache and OpenAPI schemas, the repo-server's Helm chart cache,
	// the sidecar's blob cache), and without it that cost would fall on
	// whichever way went first.
	for _, native := range []bool{false, true} {
		name := fmt.Sprintf("%sw-%s", prefix, map[bool]string{false: "pl", true: "na"}[native])
		r := runRound(t, name, min(fleetN, 10), native)
		note(t, "fleet warm-up (not counted) %s", r.line())
		deleteRound(t, name)
		for d, k := range r.blobGets {
			pluginBlobs[d] += k
		}
	}
	for i := range rounds {
		native := i%2 == 1
		name := fmt.Sprintf("%s%d-%s", prefix, i+1, map[bool]string{false: "pl", true: "na"}[native])
		r := runRound(t, name, fleetN, native)
		note(t, "fleet round %d %s", i+1, r.line())
		note(t, "fleet round %d generation CPU s by process: %s; generations per Application: %.2f, render workers started: %.0f", i+1, r.breakdown(), r.generations/float64(r.n), r.workerStarts)
		deleteRound(t, name)
		results[r.mode] = append(results[r.mode], r)
		if len(r.errored) > 0 {
			t.Errorf("round %d (%s): %d Applications had errors: %v", i+1, r.mode, len(r.errored), head(r.errored, 5))
		}
		for d, k := range r.blobGets {
			pluginBlobs[d] += k
		}
	}
	for _, mode := range []string{"plugin", "native"} {
		rs := results[mode]
		if len(rs) == 0 {
			continue
		}
		var took, rate, gen, ctrl, reqs []float64
		for _, r := range rs {
			took = append(took, r.took.Seconds())
			rate = append(rate, float64(r.synced)/r.took.Seconds())
			gen = append(gen, (r.cpu["repo-server"] + r.cpu["sidecar"]).Seconds())
			ctrl = append(ctrl, r.cpu["controller"].Seconds())
			reqs = append(reqs, float64(r.requests["plugin"]+r.requests["helm"])/float64(r.n))
		}
		note(t, "fleet medians %s (N=%d, %d rounds, %d replica(s)): all Synced in %.1f s, %.2f Applications/s, generation CPU (repo-server + sidecar) %.1f s, controller CPU %.1f s, registry requests per Application %.1f",
			mode, fleetN, len(rs), len(cl.replicas), median(took), median(rate), median(gen), median(ctrl), median(reqs))
	}
	// Each blob the plugin read was fetched at most once per replica
	// that did not hold it when the rounds began, and every replica holds it now.
	for d, k := range pluginBlobs {
		missing := 0
		for _, r := range cl.replicas {
			if !caches[r.n][d] {
				missing++
			}
			if !cachedBlobs(r.cache)[d] {
				t.Errorf("replica %d has no cached %s after the rounds (fetched %d times in all)", r.n, d, k)
			}
		}
		if k > missing {
			t.Errorf("blob %s fetched %d times by %d replicas that lacked it", d, k, missing)
		}
	}
	if len(cl.replicas) > 1 {
		conns := cl.service.connections()
		var per []string
		for _, r := range cl.replicas {
			per = append(per, fmt.Sprintf("replica %d: %d", r.n, conns[r.addr]-conns0[r.addr]))
			if conns[r.addr]-conns0[r.addr] == 0 {
				t.Errorf("replica %d was given no connection", r.n)
			}
		}
		note(t, "fleet: repo-server connections per replica: %s; plugin blob GETs: %d for %d distinct blobs", strings.Join(per, ", "), sum(pluginBlobs), len(pluginBlobs))
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// cachedBlobs are the digests in a blob cache (blobs/<alg>/<hex>).
func cachedBlobs(dir string) map[string]bool {
	out := map[string]bool{}
	for _, alg := range []string{"sha256", "sha512"} {
		entries, _ := os.ReadDir(filepath.Join(dir, "blobs", alg))
		for _, e := range entries {
			out[alg+":"+e.Name()] = true
		}
	}
	return out
}
