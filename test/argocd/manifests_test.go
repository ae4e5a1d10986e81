package argocd

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/applicationset/controllers/template"
	"github.com/argoproj/argo-cd/v3/applicationset/generators"
	"github.com/argoproj/argo-cd/v3/applicationset/utils"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	log "github.com/sirupsen/logrus"
	"golang.org/x/mod/sumdb/dirhash"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	projectRepoURL = "https://github.com/argocd-ocm-plugin/argocd-ocm-plugin.git"
	sidecarName    = "argocd-ocm-plugin"
)

// argoInstallYAML is Argo CD's stock manifests/install.yaml of the version
// this module builds against, read from the module's zip in the module cache
// once the zip hashes to what go.sum pins (the h1: hash the go command
// checks): the file of that release, whatever the cache's extracted tree
// holds.
func argoInstallYAML(t *testing.T) []byte {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/argoproj/argo-cd/v3").Output()
	var mod struct{ Path, Version, Zip, Error string }
	if jerr := json.Unmarshal(out, &mod); jerr != nil || mod.Error != "" || err != nil {
		t.Fatalf("go mod download github.com/argoproj/argo-cd/v3: %v %v %s", err, jerr, mod.Error)
	}
	pinned := goSumHash(t, mod.Path, mod.Version)
	if got, err := dirhash.HashZip(mod.Zip, dirhash.Hash1); err != nil || got != pinned {
		t.Fatalf("%s@%s: the module cache's zip hashes to %s (err %v), go.sum pins %s", mod.Path, mod.Version, got, err, pinned)
	}
	z, err := zip.OpenReader(mod.Zip)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	f, err := z.Open(mod.Path + "@" + mod.Version + "/manifests/install.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goSumHash is the h1: hash this module's go.sum pins for a module's content.
func goSumHash(t *testing.T, path, version string) string {
	t.Helper()
	b, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == path && f[1] == version {
			return f[2]
		}
	}
	t.Fatalf("go.sum pins no hash for %s %s", path, version)
	return ""
}

func argoVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/argoproj/argo-cd/v3").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func kustomize(t *testing.T, fs filesys.FileSystem, dir string) resmap.ResMap {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return m
}

// inMemoryTree copies manifests/ into an in-memory filesystem. manifests/argocd
// installs Argo CD's stock install.yaml, which is not committed: make
// argocd-manifests writes it from the Argo CD module these tests build
// against, and it must be that release's file byte for byte. The stock file
// is also written as stock-install.yaml for kustomizeStock.
func inMemoryTree(t *testing.T) filesys.FileSystem {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	src := filepath.Join(repoRoot, "manifests")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return fs.WriteFile(filepath.Join("/m", rel), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	rel, stock := generatedArgoInstall(t)
	if b, err := fs.ReadFile(filepath.Join("/m/argocd", rel)); err != nil {
		t.Fatalf("manifests/argocd/%s does not exist: make argocd-manifests writes it (%v)", rel, err)
	} else if !bytes.Equal(b, stock) {
		t.Errorf("manifests/argocd/%s is not Argo CD's manifests/install.yaml of the module go.sum pins: run make argocd-manifests", rel)
	}
	if err := fs.WriteFile("/m/argocd/stock-install.yaml", stock); err != nil {
		t.Fatal(err)
	}
	return fs
}

// generatedArgoInstall is the stock install.yaml manifests/argocd names,
// relative to it, and what make argocd-manifests writes there: Argo CD's
// manifests/install.yaml of the version this module requires.
func generatedArgoInstall(t *testing.T) (string, []byte) {
	t.Helper()
	k, err := os.ReadFile(filepath.Join(repoRoot, "manifests", "argocd", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*-\s*(argo-cd-(v[0-9.]+)/install\.yaml)\s*$`).FindSubmatch(k)
	if m == nil {
		t.Fatal("manifests/argocd does not install a stock Argo CD release (argo-cd-vX.Y.Z/install.yaml, which make argocd-manifests writes)")
	}
	if got, want := string(m[2]), argoVersion(t); got != want {
		t.Fatalf("manifests/argocd installs argo-cd-%s/install.yaml; make argocd-manifests writes the release the contract tests run, argo-cd-%s", got, want)
	}
	return string(m[1]), argoInstallYAML(t)
}

// The stock install.yaml is generated, not committed (2 MiB): git ignores it.
func TestArgoInstallNotCommitted(t *testing.T) {
	rel, _ := generatedArgoInstall(t)
	p := "manifests/argocd/" + rel
	err := exec.Command("git", "-C", repoRoot, "check-ignore", "-q", p).Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		t.Errorf("%s is committed or not git-ignored: make argocd-manifests writes it", p)
	default:
		t.Skipf("SKIPPED: not a git checkout, or no git (%v)", err)
	}
}

func repoServerDeployment(t *testing.T, m resmap.ResMap) *appsv1.Deployment {
	t.Helper()
	for _, r := range m.Resources() {
		if r.GetKind() == "Deployment" && r.GetName() == "argocd-repo-server" {
			b, err := r.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var d appsv1.Deployment
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			return &d
		}
	}
	t.Fatal("no argocd-repo-server Deployment")
	return nil
}

func container(t *testing.T, cs []corev1.Container, name string) *corev1.Container {
	t.Helper()
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

func mountPath(c *corev1.Container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

func TestInstallOverlay(t *testing.T) {
	fs := inMemoryTree(t)
	m := kustomize(t, fs, "/m/argocd")

	d := repoServerDeployment(t, m)
	spec := d.Spec.Template.Spec
	if d.Namespace != "argocd" {
		t.Errorf("namespace %q", d.Namespace)
	}
	repo := container(t, spec.Containers, "argocd-repo-server")
	side := container(t, spec.Containers, sidecarName)

	// The render server answers the repo-server itself, on the socket the
	// repo-server dials for Applications naming the plugin: <name>.sock in
	// its plugin socket directory (Argo CD's default, as the repo-server
	// container does not move it), shared through the plugins volume.
	sockDir := common.DefaultPluginSockFilePath
	for _, e := range repo.Env {
		if e.Name == common.EnvPluginSockFilePath {
			t.Fatalf("the repo-server sets %s: the sidecar's socket must follow it", e.Name)
		}
	}
	if got := mountPath(repo, "plugins"); got != sockDir {
		t.Errorf("the repo-server mounts the plugins volume at %q, not at its plugin socket directory %q", got, sockDir)
	}
	if got := mountPath(side, "plugins"); got != sockDir {
		t.Errorf("the sidecar mounts the plugins volume at %q, the repo-server looks in %q", got, sockDir)
	}
	wantCmd := []string{"/usr/local/bin/argocd-ocm-plugin", "serve", "--plugin-socket", sockDir + "/" + pluginName + ".sock"}
	if !slices.Equal(side.Command, wantCmd) {
		t.Errorf("sidecar command %q, want %q", side.Command, wantCmd)
	}
	// Nothing of argocd-cmp-server's way: not its binary (copied by
	// copyutil into var-files), not a plugin config.
	for _, m := range side.VolumeMounts {
		if m.Name == "var-files" || strings.HasPrefix(m.MountPath, "/home/argocd/cmp-server/config") {
			t.Errorf("the sidecar mounts %s at %s, which only argocd-cmp-server needs", m.Name, m.MountPath)
		}
	}
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dockerfile), "COPY --from=build /out/argocd-ocm-plugin /out/argocd-ocm-client /usr/local/bin/") {
		t.Error("the Dockerfile does not install argocd-ocm-plugin and argocd-ocm-client in /usr/local/bin")
	}
	// The image's plugin.yaml (the alternative command, serve --
	// argocd-cmp-server) serves the same plugin name through the thin
	// client, found on PATH.
	if pluginCfg.Metadata.Name != pluginName {
		t.Errorf("plugin.yaml names the plugin %q, the installed socket %q", pluginCfg.Metadata.Name, pluginName)
	}
	for _, c := range [][]string{pluginCfg.Spec.Generate.Command, pluginCfg.Spec.Parameters.Dynamic.Command} {
		if len(c) != 2 || c[0] != "argocd-ocm-client" {
			t.Errorf("plugin.yaml command %v, want argocd-ocm-client", c)
		}
	}
	sc := side.SecurityContext
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 999 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("sidecar security context %+v: want uid 999, non-root, read-only root filesystem, no privilege escalation", sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := side.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
	}
	if _, ok := side.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Error("no memory limit")
	}
	if !strings.HasPrefix(side.Image, "ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin:") {
		t.Errorf("image %q", side.Image)
	}

	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		if _, dup := vols[v.Name]; dup {
			t.Errorf("volume %q twice", v.Name)
		}
		vols[v.Name] = v
	}
	writable := map[string]bool{}
	for _, vm := range side.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			t.Errorf("mount of unknown volume %q", vm.Name)
			continue
		}
		if v.EmptyDir != nil && !vm.ReadOnly {
			writable[vm.MountPath] = true
		}
	}
	if !writable["/tmp"] {
		t.Error("the sidecar needs a writable /tmp: each request's repository stream is unpacked there")
	}
	env := map[string]string{}
	for _, e := range side.Env {
		env[e.Name] = e.Value
	}
	if !writable[env["ARGOCD_OCM_CACHE_DIR"]] {
		t.Errorf("ARGOCD_OCM_CACHE_DIR=%q is not a writable volume", env["ARGOCD_OCM_CACHE_DIR"])
	}
	reg := vols["argocd-ocm-plugin-registry"]
	if reg.Secret == nil || reg.Secret.Optional == nil || !*reg.Secret.Optional ||
		len(reg.Secret.Items) != 1 || reg.Secret.Items[0].Key != ".dockerconfigjson" || reg.Secret.Items[0].Path != "config.json" {
		t.Errorf("registry secret volume %+v: want an optional dockerconfigjson secret as config.json", reg.Secret)
	}
	if env["DOCKER_CONFIG"] != mountPath(side, "argocd-ocm-plugin-registry") {
		t.Errorf("DOCKER_CONFIG=%q, secret mounted at %q", env["DOCKER_CONFIG"], mountPath(side, "argocd-ocm-plugin-registry"))
	}

	// Everything else is Argo CD's install, untouched but for the namespace
	// (and the generator's objects, checked by TestGeneratorManifests): the
	// Component adds no object of its own.
	base := kustomizeStock(t, fs)
	n := 0
	for _, r := range m.Resources() {
		if r.GetName() != generatorName {
			n++
		}
	}
	if got, want := n, len(base.Resources()); got != want {
		t.Errorf("%d objects, want stock %d", got, want)
	}
}

// kustomizeStock builds the stock install with the same namespace.
func kustomizeStock(t *testing.T, fs filesys.FileSystem) resmap.ResMap {
	t.Helper()
	b, err := fs.ReadFile("/m/argocd/stock-install.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"/stock/kustomization.yaml": []byte("namespace: argocd\nresources:\n  - install.yaml\n"),
		"/stock/install.yaml":       b,
	} {
		if err := fs.WriteFile(name, content); err != nil {
			t.Fatal(err)
		}
	}
	return kustomize(t, fs, "/stock")
}

// The Component alone builds on top of any base holding argocd-repo-server
// (here the stock install, without namespace), from disk as a user runs it.
func TestInstallComponentFromDisk(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "install.yaml"), string(argoInstallYAML(t)))
	rel, err := filepath.Rel(dir, filepath.Join(repoRoot, "manifests", "install"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "kustomization.yaml"), fmt.Sprintf("resources:\n  - install.yaml\ncomponents:\n  - %s\n", rel))
	d := repoServerDeployment(t, kustomize(t, filesys.MakeFsOnDisk(), dir))
	container(t, d.Spec.Template.Spec.Containers, sidecarName)
}

func toJSONValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func readYAML(t *testing.T, rel string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

// manifestGeneratePathsKey is the argocd-cmd-params-cm key that makes the
// repo-server stream an annotated Application's manifest-generate-paths to
// a plugin instead of its whole repository.
const manifestGeneratePathsKey = "reposerver.plugin.use.manifest.generate.paths"

// The install turns it on, and Argo CD's own repo-server reads it from there.
func TestInstallStreamsOnlyAnnotatedPaths(t *testing.T) {
	m := kustomize(t, inMemoryTree(t), "/m/argocd")
	var data map[string]string
	for _, r := range m.Resources() {
		if r.GetKind() == "ConfigMap" && r.GetName() == "argocd-cmd-params-cm" {
			data = r.GetDataMap()
		}
	}
	if data[manifestGeneratePathsKey] != "true" {
		t.Errorf("argocd-cmd-params-cm %s = %q, want \"true\"", manifestGeneratePathsKey, data[manifestGeneratePathsKey])
	}
	repo := container(t, repoServerDeployment(t, m).Spec.Template.Spec.Containers, "argocd-repo-server")
	var wired bool
	for _, e := range repo.Env {
		if e.Name == "ARGOCD_REPO_SERVER_PLUGIN_USE_MANIFEST_GENERATE_PATHS" && e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil &&
			e.ValueFrom.ConfigMapKeyRef.Name == "argocd-cmd-params-cm" && e.ValueFrom.ConfigMapKeyRef.Key == manifestGeneratePathsKey {
			wired = true
		}
	}
	if !wired {
		t.Errorf("the repo-server does not read %s from argocd-cmd-params-cm", manifestGeneratePathsKey)
	}
}

// manifests/helm/values.yaml says what manifests/install says, in the argo-cd
// chart's terms.
func TestHelmValuesMatchOverlay(t *testing.T) {
	var values struct {
		Configs struct {
			Params map[string]any `json:"params"`
			CMP    map[string]any `json:"cmp"`
		} `json:"configs"`
		RepoServer struct {
			ExtraContainers []corev1.Container `json:"extraContainers"`
			Volumes         []corev1.Volume    `json:"volumes"`
		} `json:"repoServer"`
	}
	readYAML(t, "manifests/helm/values.yaml", &values)

	if v := values.Configs.Params[manifestGeneratePathsKey]; v != true {
		t.Errorf("configs.params.%s = %v, want true (as manifests/install/cmd-params.yaml)", manifestGeneratePathsKey, v)
	}
	// The sidecar answers the repo-server itself: no plugin config for
	// argocd-cmp-server (the chart's argocd-cmp-cm).
	if values.Configs.CMP != nil {
		t.Errorf("configs.cmp = %v: the sidecar reads no plugin config", values.Configs.CMP)
	}

	var patch appsv1.Deployment
	readYAML(t, "manifests/install/repo-server-sidecar.yaml", &patch)
	want := container(t, patch.Spec.Template.Spec.Containers, sidecarName)
	if len(values.RepoServer.ExtraContainers) != 1 {
		t.Fatalf("%d extra containers", len(values.RepoServer.ExtraContainers))
	}
	got := &values.RepoServer.ExtraContainers[0]
	if !reflect.DeepEqual(got, want) {
		g, _ := yaml.Marshal(got)
		w, _ := yaml.Marshal(want)
		t.Errorf("repoServer.extraContainers[0] differs from the overlay's sidecar:\n--- values\n%s--- overlay\n%s", g, w)
	}
	if !reflect.DeepEqual(toJSONValue(t, values.RepoServer.Volumes), toJSONValue(t, patch.Spec.Template.Spec.Volumes)) {
		t.Error("repoServer.volumes differ from the overlay's volumes")
	}
}

// contractEnv are the spec.source.plugin.env names the plugin reads (as
// ARGOCD_ENV_<name>).
var contractEnv = map[string]bool{"REPOSITORY": true, "COMPONENT": true, "VERSION": true, "RESOURCE": true,
	"PATH": true, "VALUES": true, "VALUE_FILES": true, "PARAMETERS": true, "DEFINITION": true, "PLATFORM": true,
	"PLATFORM_CONFIG": true, "LOCALIZE": true, "PROVENANCE": true}

// contractParams are the spec.source.plugin.parameters names the plugin
// reads (announced by its dynamic parameters command).
var contractParams = map[string]bool{"repository": true, "component": true, "version": true, "resource": true,
	"path": true, "values": true, "value-files": true, "parameters": true, "definition": true, "platform": true,
	"platform-config": true, "localize": true, "provenance": true}

// checkPluginApplication checks what the plugin needs of an Application.
func checkPluginApplication(t *testing.T, where string, app *v1alpha1.Application) {
	t.Helper()
	src := app.Spec.Source
	if src == nil || src.Plugin == nil {
		return
	}
	if src.Plugin.Name != pluginName {
		t.Errorf("%s: plugin %q, want %q (no discovery: Applications name the plugin)", where, src.Plugin.Name, pluginName)
	}
	set := map[string]string{}
	for _, p := range src.Plugin.Parameters {
		if !contractParams[p.Name] {
			t.Errorf("%s: parameter %q is not one the plugin reads", where, p.Name)
		}
		if p.String_ != nil {
			set[p.Name] = *p.String_
		} else {
			set[p.Name] = "(collection)"
		}
	}
	for _, e := range src.Plugin.Env {
		if !contractEnv[e.Name] {
			t.Errorf("%s: env %q is not one the plugin reads", where, e.Name)
		}
		name := strings.ReplaceAll(strings.ToLower(e.Name), "_", "-")
		if _, ok := set[name]; !ok {
			set[name] = e.Value
		}
	}
	for _, req := range []string{"repository", "component", "version"} {
		if set[req] == "" {
			t.Errorf("%s: no %s", where, req)
		}
	}
	if v, ok := set["values"]; ok {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(v), &m); err != nil {
			t.Errorf("%s: values is not a YAML map: %v", where, err)
		}
	}
	if app.Spec.Destination.Namespace == "" {
		t.Errorf("%s: no destination namespace (the release namespace)", where)
	}
	if src.RepoURL == projectRepoURL && !strings.Contains(src.Path, "{{") {
		if st, err := os.Stat(filepath.Join(repoRoot, src.Path)); err != nil || !st.IsDir() {
			t.Errorf("%s: path %q does not exist in this repository", where, src.Path)
		}
	}
}

// localRepos serves the git generator from the working tree.
type localRepos struct{}

func (localRepos) GetFiles(_ context.Context, repoURL, _, _, pattern string, _ bool, _ *v1alpha1.SourceIntegrity) (map[string][]byte, error) {
	if repoURL != projectRepoURL {
		return nil, fmt.Errorf("git generator of %s: only %s is served", repoURL, projectRepoURL)
	}
	matches, err := filepath.Glob(filepath.Join(repoRoot, pattern))
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(repoRoot, m)
		out[filepath.ToSlash(rel)] = b
	}
	return out, nil
}

func (localRepos) GetDirectories(context.Context, string, string, string, bool, *v1alpha1.SourceIntegrity) ([]string, error) {
	return nil, fmt.Errorf("not served")
}

func (localRepos) GetOciFiles(context.Context, string, string, string, string, bool) (map[string][]byte, error) {
	return nil, fmt.Errorf("not served")
}

func (localRepos) GetOciDirectories(context.Context, string, string, string, bool) ([]string, error) {
	return nil, fmt.Errorf("not served")
}

// expandApplicationSet runs Argo CD's ApplicationSet generators and template
// rendering.
func expandApplicationSet(t *testing.T, as *v1alpha1.ApplicationSet) []v1alpha1.Application {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	project := &v1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "argocd"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(project).Build()
	gens := map[string]generators.Generator{
		"List": generators.NewListGenerator(),
		"Git":  generators.NewGitGenerator(localRepos{}, "argocd"),
	}
	apps, _, err := template.GenerateApplications(log.NewEntry(log.StandardLogger()), *as, gens, &utils.Render{}, c)
	if err != nil {
		t.Fatalf("ApplicationSet %s: %v", as.Name, err)
	}
	return apps
}

// Every example decodes strictly into Argo CD's types; ApplicationSets expand
// into Applications the plugin can serve.
func TestExamplesDecode(t *testing.T) {
	root := filepath.Join(repoRoot, "manifests", "examples")
	kinds := map[string]int{}
	generated := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			where := fmt.Sprintf("%s#%d", rel, i)
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			kinds[meta.Kind]++
			switch meta.Kind {
			case "Application":
				var app v1alpha1.Application
				if err := yaml.UnmarshalStrict([]byte(doc), &app); err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				checkPluginApplication(t, where, &app)
			case "ApplicationSet":
				var as v1alpha1.ApplicationSet
				if err := yaml.UnmarshalStrict([]byte(doc), &as); err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				if usesPluginGenerator(&as) {
					continue // TestGeneratorExamples runs these against the generator
				}
				for _, app := range expandApplicationSet(t, &as) {
					checkPluginApplication(t, where+" → "+app.Name, &app)
					generated[as.Name] = append(generated[as.Name], app.Name+"@"+app.Spec.Destination.Server)
				}
			case "Job", "CronJob":
				// The replication example: transfer in the sidecar's image
				// (docs/airgap.md; internal/frontend/transfer tests run its arguments).
				if !strings.HasPrefix(rel, filepath.Join("manifests", "examples", "replication")+string(filepath.Separator)) {
					t.Errorf("%s: unexpected %s", where, meta.Kind)
					continue
				}
				var pod *corev1.PodSpec
				if meta.Kind == "Job" {
					var j batchv1.Job
					if err := yaml.UnmarshalStrict([]byte(doc), &j); err != nil {
						t.Errorf("%s: %v", where, err)
						continue
					}
					pod = &j.Spec.Template.Spec
				} else {
					var cj batchv1.CronJob
					if err := yaml.UnmarshalStrict([]byte(doc), &cj); err != nil {
						t.Errorf("%s: %v", where, err)
						continue
					}
					pod = &cj.Spec.JobTemplate.Spec.Template.Spec
				}
				if len(pod.Containers) != 1 || !strings.Contains(strings.Join(pod.Containers[0].Args, " "), "transfer") {
					t.Errorf("%s: want one container running transfer, got %+v", where, pod.Containers)
				}
			case "ConfigMap":
				if filepath.Base(rel) != "sidecar-policy.yaml" {
					t.Errorf("%s: unexpected ConfigMap", where) // policy tests its content
				}
			case "":
				if !strings.Contains(rel, "/clusters/") {
					t.Errorf("%s: not a Kubernetes object", where)
				}
			default:
				t.Errorf("%s: unexpected kind %q", where, meta.Kind)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if kinds["Application"] < 5 || kinds["ApplicationSet"] < 2 {
		t.Errorf("examples: %v", kinds)
	}
	for name, want := range map[string][]string{
		"podinfo":     {"podinfo-dev@https://dev.example.com:6443", "podinfo-prod-eu@https://prod-eu.example.com:6443"},
		"podinfo-git": {"podinfo-dev@https://kubernetes.default.svc", "podinfo-prod@https://prod.example.com:6443"},
	} {
		got := generated[name]
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ApplicationSet %s generates %v, want %v", name, got, want)
		}
	}
}
