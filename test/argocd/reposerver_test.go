package argocd

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	repoclient "github.com/argoproj/argo-cd/v3/reposerver/apiclient"
	reposervercache "github.com/argoproj/argo-cd/v3/reposerver/cache"
	"github.com/argoproj/argo-cd/v3/reposerver/metrics"
	"github.com/argoproj/argo-cd/v3/reposerver/repository"
	cacheutil "github.com/argoproj/argo-cd/v3/util/cache"
	"github.com/argoproj/argo-cd/v3/util/git"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"
)

// The repo-server side of the contract, run by Argo CD's own code: the
// Service that answers the application controller and the API server clones
// a git repository, builds the plugin's environment from the Application
// (newEnv, ARGOCD_ENV_ prefixing, parameters, KUBE_VERSION) and streams the
// checkout to the plugin's socket.

var (
	gitOnce sync.Once
	gitURL  string
	gitErr  error
)

// localGitRepo is a git repository with what the examples reference from
// this project's repository: the demo CTF and the per-cluster directories.
func localGitRepo(t *testing.T) string {
	t.Helper()
	gitOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gitrepo")
		if err != nil {
			gitErr = err
			return
		}
		copyDir(t, filepath.Join(repoRoot, "testdata", "demo"), filepath.Join(dir, "testdata", "demo"))
		copyDir(t, filepath.Join(repoRoot, "manifests", "examples"), filepath.Join(dir, "manifests", "examples"))
		// A CTF in a cluster directory of the git generator example, to render
		// it offline.
		copyDir(t, filepath.Join(repoRoot, "testdata", "demo", "ctf"), filepath.Join(dir, "manifests", "examples", "clusters", "prod", "ctf"))
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "demo"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
				"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				gitErr = err
				t.Logf("git %v: %s", args, out)
				return
			}
		}
		gitURL = "file://" + dir
	})
	if gitErr != nil {
		t.Fatal(gitErr)
	}
	return gitURL
}

func newRepoService(t *testing.T) *repository.Service {
	t.Helper()
	c := reposervercache.NewCache(cacheutil.NewCache(cacheutil.NewInMemoryCache(time.Minute)), time.Minute, time.Minute, 10*time.Second)
	root := t.TempDir()
	s := repository.NewService(metrics.NewMetricsServer(), c, repository.RepoServerInitConstants{ParallelismLimit: 1},
		&git.NoopCredsStore{}, root)
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	return s
}

// loadApplication reads an example Application (strictly) and points it at
// the local git repository.
func loadApplication(t *testing.T, rel string) *v1alpha1.Application {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	var app v1alpha1.Application
	if err := yaml.UnmarshalStrict(b, &app); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return &app
}

func manifestRequest(t *testing.T, app *v1alpha1.Application) *repoclient.ManifestRequest {
	url := localGitRepo(t)
	src := app.Spec.Source.DeepCopy()
	src.RepoURL, src.TargetRevision = url, "main"
	return &repoclient.ManifestRequest{
		Repo:               &v1alpha1.Repository{Repo: url},
		Revision:           "main",
		AppName:            app.Name,
		Namespace:          app.Spec.Destination.Namespace,
		ApplicationSource:  src,
		AppLabelKey:        "app.kubernetes.io/instance",
		TrackingMethod:     string(v1alpha1.TrackingMethodAnnotation),
		KubeVersion:        "v1.31.4+k3s1",
		ApiVersions:        []string{"v1", "apps/v1", "policy/v1", "networking.k8s.io/v1"},
		ProjectName:        "default",
		ProjectSourceRepos: []string{"*"},
		NoCache:            true,
	}
}

func TestRepoServerGeneratesExampleApplication(t *testing.T) {
	s := newRepoService(t)
	app := loadApplication(t, "manifests/examples/application-offline.yaml")
	resp, err := s.GenerateManifest(testContext(t), manifestRequest(t, app))
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeManifests(t, resp.Manifests)
	wantObjects(t, objs, "Deployment/demo-podinfo", "Service/demo-podinfo", "ConfigMap/demo-podinfo")
	if r := replicas(objs["Deployment/demo-podinfo"]); r != float64(2) {
		t.Errorf("replicas %v, want 2 from the example's values", r)
	}
	if resp.SourceType != string(v1alpha1.ApplicationSourceTypePlugin) || resp.Revision == "" {
		t.Errorf("source type %q revision %q", resp.SourceType, resp.Revision)
	}
}

// spec.source.plugin.env: Argo CD passes the entries as ARGOCD_ENV_<name>,
// with $ARGOCD_APP_* substituted.
func TestRepoServerPluginEnv(t *testing.T) {
	s := newRepoService(t)
	app := loadApplication(t, "manifests/examples/application-offline.yaml")
	app.Spec.Source.Plugin.Parameters = nil
	app.Spec.Source.Plugin.Env = v1alpha1.Env{
		{Name: "REPOSITORY", Value: "ctf"}, {Name: "COMPONENT", Value: podinfo}, {Name: "VERSION", Value: "1.0.0"},
		{Name: "VALUES", Value: "ui: {message: hello $ARGOCD_APP_NAME}"},
	}
	resp, err := s.GenerateManifest(testContext(t), manifestRequest(t, app))
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeManifests(t, resp.Manifests)
	wantObjects(t, objs, "Deployment/demo-podinfo")
	if !strings.Contains(strings.Join(resp.Manifests, "\n"), "hello demo") {
		t.Error("the values env entry did not reach the chart with $ARGOCD_APP_NAME substituted")
	}
}

func TestRepoServerAppOfApps(t *testing.T) {
	s := newRepoService(t)
	for _, c := range []struct{ file, want string }{
		{"podinfo.yaml", "Deployment/demo-apps-podinfo"},
		{"catalog.yaml", "Job/demo-apps-catalog-migrate"},
		{"podinfo-extras.yaml", "PodDisruptionBudget/"},
	} {
		t.Run(c.file, func(t *testing.T) {
			app := loadApplication(t, "manifests/examples/app-of-apps/apps/"+c.file)
			resp, err := s.GenerateManifest(testContext(t), manifestRequest(t, app))
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			found := false
			for k := range decodeManifests(t, resp.Manifests) {
				kinds = append(kinds, k)
				found = found || strings.HasPrefix(k, c.want)
			}
			if !found {
				t.Errorf("no %s in %v", c.want, kinds)
			}
		})
	}
}

// What a user of the UI or `argocd app get` reads when generation fails.
func TestRepoServerFailureNamesApplicationComponentVersion(t *testing.T) {
	s := newRepoService(t)
	app := loadApplication(t, "manifests/examples/application-offline.yaml")
	for i, p := range app.Spec.Source.Plugin.Parameters {
		if p.Name == "version" {
			v := "7.0.0"
			app.Spec.Source.Plugin.Parameters[i].String_ = &v
		}
	}
	resp, err := s.GenerateManifest(testContext(t), manifestRequest(t, app))
	if err == nil {
		t.Fatalf("no error; %d manifests", len(resp.Manifests))
	}
	msg := status.Convert(err).Message()
	t.Logf("Argo CD shows: %s", msg)
	for _, m := range []string{"error generating manifests in cmp:", "argocd-ocm-plugin: application demo: component example.com/demo/podinfo:7.0.0:", "available: 1.0.0"} {
		if !strings.Contains(msg, m) {
			t.Errorf("error %q lacks %q", msg, m)
		}
	}
}

// GetAppDetails is what the UI calls for the parameters panel.
func TestRepoServerAppDetailsAnnouncesParameters(t *testing.T) {
	s := newRepoService(t)
	app := loadApplication(t, "manifests/examples/application-offline.yaml")
	req := manifestRequest(t, app)
	resp, err := s.GetAppDetails(testContext(t), &repoclient.RepoServerAppDetailsQuery{
		Repo: req.Repo, Source: req.ApplicationSource, AppName: app.Name, NoCache: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Type != string(v1alpha1.ApplicationSourceTypePlugin) || resp.Plugin == nil {
		t.Fatalf("details: %+v", resp)
	}
	defaults := map[string]string{}
	for _, a := range resp.Plugin.ParametersAnnouncement {
		if _, seen := defaults[a.Name]; !seen {
			defaults[a.Name] = a.String_
		}
	}
	if defaults["resource"] != "chart" || defaults["resolved-version"] != "1.0.0" {
		t.Errorf("announced defaults %v", defaults)
	}
}

// An Application generated by the git-generator ApplicationSet renders with
// its cluster's values file, read from the Application's own directory. The
// registry of the example is swapped for a CTF in that directory.
func TestRepoServerApplicationSetGitGenerated(t *testing.T) {
	s := newRepoService(t)
	b, err := os.ReadFile(filepath.Join(repoRoot, "manifests", "examples", "applicationset-git.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var as v1alpha1.ApplicationSet
	if err := yaml.UnmarshalStrict(b, &as); err != nil {
		t.Fatal(err)
	}
	for _, app := range expandApplicationSet(t, &as) {
		if app.Name != "podinfo-prod" {
			continue
		}
		for i, p := range app.Spec.Source.Plugin.Parameters {
			if p.Name == "repository" {
				ctf := "ctf"
				app.Spec.Source.Plugin.Parameters[i].String_ = &ctf
			}
		}
		resp, err := s.GenerateManifest(testContext(t), manifestRequest(t, &app))
		if err != nil {
			t.Fatal(err)
		}
		objs := decodeManifests(t, resp.Manifests)
		if r := replicas(objs["Deployment/podinfo-prod"]); r != float64(3) {
			t.Errorf("replicas %v, want 3 from clusters/prod/values.yaml", r)
		}
		return
	}
	t.Fatal("the ApplicationSet generated no podinfo-prod")
}

// The OCM-style app of apps: the platform component renders child
// Applications, which Argo CD accepts, and each child renders in turn.
func TestRepoServerPlatformAppOfApps(t *testing.T) {
	s := newRepoService(t)
	parent := loadApplication(t, "manifests/examples/app-of-apps/platform.yaml")
	resp, err := s.GenerateManifest(testContext(t), manifestRequest(t, parent))
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for _, m := range resp.Manifests {
		var child v1alpha1.Application
		if err := yaml.UnmarshalStrict([]byte(m), &child); err != nil {
			t.Fatalf("child is not an Application: %v\n%s", err, m)
		}
		children = append(children, child.Name)
		checkPluginApplication(t, "child "+child.Name, &child)
		if child.Spec.Source.RepoURL != localGitRepo(t) || child.Spec.Source.Path != parent.Spec.Source.Path {
			t.Errorf("child %s points at %s %s, want the parent's repository and path", child.Name, child.Spec.Source.RepoURL, child.Spec.Source.Path)
		}
		r, err := s.GenerateManifest(testContext(t), manifestRequest(t, &child))
		if err != nil {
			t.Errorf("child %s: %v", child.Name, err)
			continue
		}
		if len(r.Manifests) == 0 {
			t.Errorf("child %s renders nothing", child.Name)
		}
	}
	sort.Strings(children)
	if strings.Join(children, ",") != "platform-extras,platform-podinfo" {
		t.Errorf("children %v, want one per reference of example.com/demo/platform (podinfo, extras)", children)
	}
}
