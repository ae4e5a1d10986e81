package platform_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/platform"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

func ref(name, comp, version string) ocmbuild.Reference {
	return ocmbuild.Reference{Name: name, ComponentName: comp, Version: version}
}

func leaf(name, version string) *ocmbuild.Component {
	return &ocmbuild.Component{Name: name, Version: version, Resources: []ocmbuild.Resource{
		{Name: "manifests", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: []byte("x")},
	}}
}

func openCTF(t *testing.T, comps ...*ocmbuild.Component) ocm.Repository {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, comps...); err != nil {
		t.Fatal(err)
	}
	r, err := ctf.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func lookup(t *testing.T, r ocm.Repository, name, version string) ocm.ComponentVersion {
	t.Helper()
	cv, err := r.LookupComponentVersion(context.Background(), name, version)
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

func get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

func params(app manifests.Object) map[string]any {
	out := map[string]any{}
	for _, p := range get(app, "spec", "source", "plugin", "parameters").([]any) {
		m := p.(map[string]any)
		for _, k := range []string{"string", "array", "map"} {
			if v, ok := m[k]; ok {
				out[m["name"].(string)] = v
			}
		}
	}
	return out
}

func TestChildApplications(t *testing.T) {
	repo := openCTF(t,
		&ocmbuild.Component{Name: "example.com/idp/platform", Version: "2.0.0", References: []ocmbuild.Reference{
			ref("ingress", "example.com/idp/ingress", "1.2.0"),
			ref("cert_manager", "example.com/idp/cert-manager", "1.16.1"),
			ref("portal", "example.com/idp/portal", "0.9.0"),
		}},
		leaf("example.com/idp/ingress", "1.2.0"), leaf("example.com/idp/cert-manager", "1.16.1"), leaf("example.com/idp/portal", "0.9.0"))
	cv := lookup(t, repo, "example.com/idp/platform", "2.0.0")
	if !platform.IsPlatform(cv.Descriptor(), func(string) bool { return true }) {
		t.Fatal("a component with references and no resources is a platform")
	}
	cfg, err := platform.DecodeConfig([]byte(`
project: idp
destination: {name: prod-cluster}
packages:
  cert_manager: {syncWave: -1, namespace: cert-manager, values: {installCRDs: true}}
  portal: {parameters: {hostname: portal.example.com}, values: {replicas: 2}, resource: [chart]}
  ingress: {disabled: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	// As `render` for people: the config may choose project and destination.
	opts := platform.Options{Parent: "idp", Source: platform.Source{RepoURL: "https://git.example.com/idp.git", TargetRevision: "main", Path: "prod", Repository: "bundle.tgz"},
		AllowOtherProjects: true, AllowOtherDestinations: true}
	opts.ApplyConfig(cfg)
	apps, err := platform.Applications(context.Background(), repo, cv, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 2 {
		t.Fatalf("%d children, want 2 (ingress disabled)", len(apps))
	}
	cm, portal := apps[0], apps[1] // sorted by reference name
	if get(cm, "metadata", "name") != "idp-cert-manager" || get(cm, "metadata", "annotations", platform.AnnotationSyncWave) != "-1" {
		t.Fatalf("cert-manager metadata %v", cm["metadata"])
	}
	if get(cm, "spec", "project") != "idp" || get(cm, "spec", "destination", "name") != "prod-cluster" ||
		get(cm, "spec", "destination", "namespace") != "cert-manager" || get(cm, "spec", "destination", "server") != nil {
		t.Fatalf("cert-manager spec %v", cm["spec"])
	}
	p := params(cm)
	if p["component"] != "example.com/idp/cert-manager" || p["version"] != "1.16.1" || p["repository"] != "bundle.tgz" ||
		!strings.Contains(p["values"].(string), "installCRDs: true") {
		t.Fatalf("cert-manager parameters %v", p)
	}
	if get(cm, "spec", "source", "repoURL") != "https://git.example.com/idp.git" || get(cm, "spec", "source", "path") != "prod" ||
		get(cm, "spec", "source", "targetRevision") != "main" || get(cm, "spec", "source", "plugin", "name") != platform.DefaultPluginName {
		t.Fatalf("cert-manager source %v", get(cm, "spec", "source"))
	}
	pp := params(portal)
	if get(portal, "spec", "destination", "namespace") != "portal" || pp["parameters"].(map[string]any)["hostname"] != "portal.example.com" ||
		len(pp["resource"].([]any)) != 1 {
		t.Fatalf("portal %v", pp)
	}
	var vals map[string]any
	yaml.Unmarshal([]byte(pp["values"].(string)), &vals)
	if vals["replicas"] != float64(2) {
		t.Fatalf("portal values %v", vals)
	}
}

func TestNestedPlatformsAndCycles(t *testing.T) {
	repo := openCTF(t,
		&ocmbuild.Component{Name: "example.com/idp/distro", Version: "1.0.0", References: []ocmbuild.Reference{ref("core", "example.com/idp/core", "1.0.0")}},
		&ocmbuild.Component{Name: "example.com/idp/core", Version: "1.0.0", References: []ocmbuild.Reference{ref("db", "example.com/idp/db", "1.0.0")}},
		leaf("example.com/idp/db", "1.0.0"),
		&ocmbuild.Component{Name: "example.com/loop/a", Version: "1.0.0", References: []ocmbuild.Reference{ref("b", "example.com/loop/b", "1.0.0")}},
		&ocmbuild.Component{Name: "example.com/loop/b", Version: "1.0.0", References: []ocmbuild.Reference{ref("a", "example.com/loop/a", "1.0.0")}},
		&ocmbuild.Component{Name: "example.com/loop/self", Version: "1.0.0", References: []ocmbuild.Reference{ref("me", "example.com/loop/self", "1.0.0")}},
		&ocmbuild.Component{Name: "example.com/broken/p", Version: "1.0.0", References: []ocmbuild.Reference{ref("gone", "example.com/broken/gone", "1.0.0")}},
	)
	opts := platform.Options{Parent: "top", ParentProject: "team-a", Source: platform.Source{RepoURL: "https://git.example.com/x.git", Repository: "ctf"}}
	ctx := context.Background()

	// distro → core (itself a platform) → db: the distro emits core, core emits db.
	apps, err := platform.Applications(ctx, repo, lookup(t, repo, "example.com/idp/distro", "1.0.0"), opts)
	if err != nil || len(apps) != 1 || params(apps[0])["component"] != "example.com/idp/core" {
		t.Fatalf("distro: %v %v", apps, err)
	}
	opts.Parent = "top-core"
	apps, err = platform.Applications(ctx, repo, lookup(t, repo, "example.com/idp/core", "1.0.0"), opts)
	if err != nil || len(apps) != 1 || get(apps[0], "metadata", "name") != "top-core-db" {
		t.Fatalf("core: %v %v", apps, err)
	}

	for _, tc := range []struct {
		component string
		want      error
		mention   string
	}{
		{"example.com/loop/a", errdef.ErrInvalidDescriptor, "example.com/loop/a:1.0.0 -> example.com/loop/b:1.0.0 -> example.com/loop/a:1.0.0"},
		{"example.com/loop/self", errdef.ErrInvalidDescriptor, "cycle"},
		{"example.com/broken/p", errdef.ErrNotFound, "reference gone"},
	} {
		_, err := platform.Applications(ctx, repo, lookup(t, repo, tc.component, "1.0.0"), opts)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: got %v, want %v mentioning %q", tc.component, err, tc.want, tc.mention)
		}
	}
}

func TestPlatformConfigErrors(t *testing.T) {
	repo := openCTF(t, &ocmbuild.Component{Name: "example.com/idp/p", Version: "1.0.0", References: []ocmbuild.Reference{ref("a", "example.com/idp/a", "1.0.0")}},
		leaf("example.com/idp/a", "1.0.0"))
	cv := lookup(t, repo, "example.com/idp/p", "1.0.0")
	if _, err := platform.DecodeConfig([]byte("packages: {a: {replicas: 3}}")); !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("unknown field: %v", err)
	}
	opts := platform.Options{Parent: "p", ParentProject: "team-a", Source: platform.Source{RepoURL: "https://git.example.com/x.git"}, Packages: map[string]platform.Package{"typo": {}}}
	if _, err := platform.Applications(context.Background(), repo, cv, opts); !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), `"typo"`) {
		t.Errorf("unknown package: %v", err)
	}
	opts = platform.Options{Parent: "p", ParentProject: "team-a"}
	if _, err := platform.Applications(context.Background(), repo, cv, opts); !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "ARGOCD_APP_SOURCE_REPO_URL") {
		t.Errorf("no source: %v", err)
	}
}

// A platform config comes from the Application's git repository: by default
// it cannot move children to another project than the parent's, unless the
// operator allows it; within the parent's project it may choose namespaces
// and clusters (Argo CD checks them against the AppProject), outside it
// only when the operator allows other destinations.
func TestChildrenStayInParentsProjectAndDestination(t *testing.T) {
	repo := openCTF(t,
		&ocmbuild.Component{Name: "example.com/idp/p", Version: "1.0.0", References: []ocmbuild.Reference{
			ref("cert_manager", "example.com/idp/cert-manager", "1.0.0"), ref("portal", "example.com/idp/portal", "1.0.0")}},
		leaf("example.com/idp/cert-manager", "1.0.0"), leaf("example.com/idp/portal", "1.0.0"))
	cv := lookup(t, repo, "example.com/idp/p", "1.0.0")
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name          string
		parentProject string
		allowProjects bool
		allowDests    bool
		config        string
		mention       string // "" means allowed
	}{
		{"no config", "team-a", false, false, "", ""},
		{"the parent's project", "team-a", false, false, "project: team-a", ""},
		{"the default namespace", "team-a", false, false, "packages: {cert_manager: {namespace: cert-manager}}", ""},
		{"the default server", "team-a", false, false, "destination: {server: https://kubernetes.default.svc}", ""},
		{"admin project", "team-a", false, false, "project: admin-project", `project "admin-project", but children stay in their parent Application's project "team-a"`},
		{"default project", "team-a", false, false, "project: default", `project "default"`},
		{"project, other case", "team-a", false, false, "project: Team-A", `project "Team-A"`},
		{"project, trailing space", "team-a", false, false, "project: 'team-a '", `project "team-a "`},
		{"long project", "team-a", false, false, "project: " + long, "…"},
		{"kube-system for all", "team-a", false, false, "destination: {namespace: kube-system}", ""},
		{"kube-system for one", "team-a", false, false, "packages: {portal: {namespace: kube-system}}", ""},
		{"kube-system in a package destination", "team-a", false, false, "packages: {portal: {destination: {namespace: kube-system}}}", ""},
		{"another cluster by server", "team-a", false, false, "destination: {server: 'https://prod.example.com:6443'}", ""},
		{"another cluster by name", "team-a", false, false, "destination: {name: prod}", ""},
		{"in-cluster by name", "team-a", false, false, "destination: {name: in-cluster}", ""},
		{"another cluster for one package", "team-a", false, false, "packages: {portal: {destination: {server: 'https://evil:6443', namespace: portal}}}", ""},
		{"unknown parent project", "", false, false, "", "ARGOCD_APP_PROJECT_NAME"},
		{"unknown parent project, config project", "", false, true, "project: team-a", "ARGOCD_APP_PROJECT_NAME"},
		// What the operator allows, and only that.
		{"other projects allowed", "team-a", true, false, "project: admin-project", ""},
		{"other projects allowed, not destinations", "team-a", true, false, "project: admin-project\ndestination: {namespace: kube-system}", `namespace "kube-system"`},
		{"other destinations allowed", "team-a", false, true, "destination: {name: prod, namespace: kube-system}", ""},
		{"other destinations allowed, not projects", "team-a", false, true, "project: admin-project\ndestination: {namespace: kube-system}", `project "admin-project"`},
		{"other projects allowed, another cluster", "team-a", true, false, "project: admin-project\ndestination: {name: prod}", `of project "admin-project" to cluster "prod"`},
		{"unknown parent project allowed", "", true, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := platform.Options{Parent: "idp", ParentProject: tc.parentProject, Source: platform.Source{RepoURL: "https://git.example.com/idp.git"},
				AllowOtherProjects: tc.allowProjects, AllowOtherDestinations: tc.allowDests}
			if tc.config != "" {
				c, err := platform.DecodeConfig([]byte(tc.config))
				if err != nil {
					t.Fatal(err)
				}
				opts.ApplyConfig(c)
			}
			apps, err := platform.Applications(context.Background(), repo, cv, opts)
			if tc.mention == "" {
				if err != nil || len(apps) != 2 {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if apps != nil || !errors.Is(err, errdef.ErrNotAllowed) || !strings.Contains(err.Error(), tc.mention) || len(err.Error()) > 700 {
				t.Fatalf("got %v, want ErrNotAllowed mentioning %q", err, tc.mention)
			}
		})
	}

	// Inherited: the parent's project, its cluster, the package's namespace.
	apps, err := platform.Applications(context.Background(), repo, cv, platform.Options{Parent: "idp", ParentProject: "team-a",
		Source: platform.Source{RepoURL: "https://git.example.com/idp.git"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, ns := range []string{"cert-manager", "portal"} {
		if get(apps[i], "spec", "project") != "team-a" || get(apps[i], "spec", "destination", "server") != platform.DefaultServer ||
			get(apps[i], "spec", "destination", "namespace") != ns || get(apps[i], "spec", "destination", "name") != nil {
			t.Errorf("child %d: %v", i, apps[i]["spec"])
		}
	}
	// Unknown parent project, allowed (Argo CD 2.x, or `render` for people): today's default.
	apps, err = platform.Applications(context.Background(), repo, cv, platform.Options{Parent: "idp", AllowOtherProjects: true,
		Source: platform.Source{RepoURL: "https://git.example.com/idp.git"}})
	if err != nil || get(apps[0], "spec", "project") != platform.DefaultProject {
		t.Fatalf("%v %v", err, apps)
	}
}
