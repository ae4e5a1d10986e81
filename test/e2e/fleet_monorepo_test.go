package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// monoFiles is how many unrelated files the monorepo holds.
const monoFiles = 10000

// monorepo commits 10,000 unrelated files (100 teams' directories of 100
// files, 1 KiB each) and the Application's directory apps/podinfo into a
// bare repository of its own.
func (c *cluster) monorepo() (string, error) {
	work, bare := path(c.dir, "mono", "work"), path(c.dir, "mono", "repo.git")
	line := strings.Repeat("unrelated content of another team's service\n", 24)
	for i := range monoFiles {
		d := path(work, "services", fmt.Sprintf("team-%02d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return "", err
			}
		}
		if err := os.WriteFile(path(d, fmt.Sprintf("file-%03d.yaml", i%100)), []byte(fmt.Sprintf("# %d\n%s", i, line)), 0o644); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(path(work, "apps", "podinfo"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path(work, "apps", "podinfo", "README.md"), []byte("podinfo from the registry\n"), 0o644); err != nil {
		return "", err
	}
	git := func(dir string, args ...string) error {
		cmd := exec.Command("git", append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir, cmd.Env = dir, c.baseEnv("home")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
		return nil
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "monorepo"}} {
		if err := git(work, args...); err != nil {
			return "", err
		}
	}
	if err := git(path(c.dir, "mono"), "clone", "-q", "--bare", work, bare); err != nil {
		return "", err
	}
	return "file://" + bare, nil
}

// TestFleetMonorepo: Argo CD streams the Application's repository root to
// the plugin (the whole checkout, .git included) on every generation. One
// Application in a repository with 10,000 unrelated files, hard-refreshed
// K times through a dedicated replica (as installed: manifest-generate-paths
// honoured for CMPs) three ways: not annotated, with the tar-stream
// exclusions of Argo CD 3.6 (doublestar patterns), and annotated with
// manifest-generate-paths (its directory alone); the same Application in
// the small repository as the baseline. Each way must render the same
// manifests (Synced).
func TestFleetMonorepo(t *testing.T) {
	fleetSetup(t)
	monoURL, err := cl.monorepo()
	must(t, err)
	const k = 5
	type config struct {
		name, repo, path string
		annotate         bool
		env              []string
	}
	exclusions := ".git/**;services/**"
	configs := []config{
		{name: "small repository", repo: cl.gitURL, path: "fleet"},
		{name: "monorepo, Application not annotated", repo: monoURL, path: "apps/podinfo"},
		{name: "monorepo, tar exclusions " + exclusions, repo: monoURL, path: "apps/podinfo", env: []string{"ARGOCD_REPO_SERVER_PLUGIN_TAR_EXCLUSIONS=" + exclusions}},
		{name: "monorepo, manifest-generate-paths", repo: monoURL, path: "apps/podinfo", annotate: true},
	}
	ctx := context.Background()
	for i, c := range configs {
		r, err := cl.startReplica(7+i%3, c.env)
		must(t, err)
		restore := cl.only(r)
		name := fmt.Sprintf("mono-%d", i)
		app := fleetApp(name, "mono", 900+i, false)
		must(t, unstructured.SetNestedField(app.Object, c.repo, "spec", "source", "repoURL"))
		must(t, unstructured.SetNestedField(app.Object, c.path, "spec", "source", "path"))
		if !c.annotate {
			app.SetAnnotations(nil)
		}
		createApp(t, app)
		waitApp(t, name, "Synced", 3*time.Minute, func(u *unstructured.Unstructured) bool {
			return str(u, "status", "sync", "status") == "Synced" && str(u, "status", "operationState", "phase") == "Succeeded"
		})
		var walls []float64
		cpu0 := cpuOf([]*proc{r.repoServer, r.sidecar})
		for range k {
			start := time.Now()
			patchApp(t, name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{"argocd.argoproj.io/refresh": "hard"}}})
			waitApp(t, name, "hard-refreshed", 2*time.Minute, func(u *unstructured.Unstructured) bool {
				_, pending := u.GetAnnotations()["argocd.argoproj.io/refresh"]
				return !pending
			})
			walls = append(walls, time.Since(start).Seconds())
		}
		cpu := (cpuOf([]*proc{r.repoServer, r.sidecar}) - cpu0).Seconds() / k
		u := getApp(t, name)
		if s := str(u, "status", "sync", "status"); s != "Synced" {
			t.Errorf("%s: %s after the refreshes: %s", c.name, s, summary(u))
		}
		note(t, "monorepo: %s: hard refresh %.2f s (median of %d), CPU %.2f s per generation (repo-server + sidecar); load %s",
			c.name, median(walls), k, cpu, loadavg())
		restore()
		cl.removeReplica(r)
		_ = cl.dyn.Resource(appGVR).Namespace(argocdNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
	deleteRound(t, "mono")
}
