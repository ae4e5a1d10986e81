package argocd

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v3/cmpserver/apiclient"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	repoclient "github.com/argoproj/argo-cd/v3/reposerver/apiclient"
	"github.com/argoproj/argo-cd/v3/util/cmp"
	grpc_retry "github.com/grpc-ecosystem/go-grpc-middleware/retry"
	"google.golang.org/grpc/status"
)

const (
	podinfo       = "example.com/demo/podinfo"
	podinfoExtras = "example.com/demo/podinfo-extras"
)

// gitCheckout is what the repo-server streams: a repository with an
// Application directory (apps/demo) holding the demo CTF and a values file.
func gitCheckout(t *testing.T) (root, appPath string) {
	t.Helper()
	root = t.TempDir()
	appPath = filepath.Join(root, "apps", "demo")
	copyDir(t, filepath.Join(repoRoot, "testdata", "demo", "ctf"), filepath.Join(appPath, "ctf"))
	writeFile(t, filepath.Join(appPath, "values-prod.yaml"), "replicaCount: 5\n")
	writeFile(t, filepath.Join(root, "README.md"), "another directory of the repository\n")
	return root, appPath
}

// pluginParams is spec.source.plugin.parameters as Argo CD turns them into
// the environment (ARGOCD_APP_PARAMETERS and PARAM_*).
func pluginParams(t *testing.T, ps ...v1alpha1.ApplicationSourcePluginParameter) []string {
	t.Helper()
	env, err := v1alpha1.ApplicationSourcePluginParameters(ps).Environ()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func str(name, value string) v1alpha1.ApplicationSourcePluginParameter {
	return v1alpha1.ApplicationSourcePluginParameter{Name: name, String_: &value}
}

func cmpClient(t *testing.T) apiclient.ConfigManagementPluginServiceClient {
	t.Helper()
	closer, client, err := apiclient.NewConfigManagementPluginClientSet(pluginCfg.Address()).NewConfigManagementPluginClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	return client
}

// cmpGenerate streams the checkout to the plugin server like the repo-server
// does and returns the generated manifests.
func cmpGenerate(t *testing.T, root, appPath string, env []string) ([]string, error) {
	t.Helper()
	st, err := cmpClient(t).GenerateManifest(testContext(t), grpc_retry.Disable())
	if err != nil {
		t.Fatal(err)
	}
	if err := cmp.SendRepoStream(st.Context(), appPath, root, st, env, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := st.CloseAndRecv()
	if err != nil {
		return nil, err
	}
	return resp.Manifests, nil
}

func cmpAnnounce(t *testing.T, root, appPath string, env []string) ([]*repoclient.ParameterAnnouncement, error) {
	t.Helper()
	st, err := cmpClient(t).GetParametersAnnouncement(testContext(t), grpc_retry.Disable())
	if err != nil {
		t.Fatal(err)
	}
	if err := cmp.SendRepoStream(st.Context(), appPath, root, st, env, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := st.CloseAndRecv()
	if err != nil {
		return nil, err
	}
	return resp.ParameterAnnouncements, nil
}

type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec map[string]any `json:"spec"`
}

// decodeManifests parses the server's manifests: one JSON object each.
func decodeManifests(t *testing.T, ms []string) map[string]object {
	t.Helper()
	out := map[string]object{}
	for _, m := range ms {
		var o object
		if err := json.Unmarshal([]byte(m), &o); err != nil {
			t.Fatalf("manifest is not a JSON object: %v\n%s", err, m)
		}
		out[o.Kind+"/"+o.Metadata.Name] = o
	}
	return out
}

func wantObjects(t *testing.T, objs map[string]object, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := objs[k]; !ok {
			var have []string
			for h := range objs {
				have = append(have, h)
			}
			t.Errorf("no %s among %v", k, have)
		}
	}
}

func replicas(o object) any { return o.Spec["replicas"] }

func TestCMPGenerateWithParameters(t *testing.T) {
	root, app := gitCheckout(t)
	env := append([]string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop-ns", "KUBE_VERSION=1.31.0",
		"KUBE_API_VERSIONS=v1,apps/v1,policy/v1"},
		pluginParams(t, str("repository", "ctf"), str("component", podinfo), str("version", "1.0.0"),
			str("values", "replicaCount: 3\n"))...)
	ms, err := cmpGenerate(t, root, app, env)
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeManifests(t, ms)
	wantObjects(t, objs, "Deployment/shop-podinfo", "Service/shop-podinfo", "ConfigMap/shop-podinfo")
	if r := replicas(objs["Deployment/shop-podinfo"]); r != float64(3) {
		t.Errorf("replicas %v, want 3 from the values parameter", r)
	}
	if ns := objs["Deployment/shop-podinfo"].Metadata.Namespace; ns != "" && ns != "shop-ns" {
		t.Errorf("namespace %q, want the destination namespace", ns)
	}
}

// The same Application configured with spec.source.plugin.env: Argo CD
// prefixes the names with ARGOCD_ENV_.
func TestCMPGenerateWithEnv(t *testing.T) {
	root, app := gitCheckout(t)
	env := []string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop-ns",
		"ARGOCD_ENV_REPOSITORY=ctf", "ARGOCD_ENV_COMPONENT=" + podinfo, "ARGOCD_ENV_VERSION=1.0.0",
		"ARGOCD_ENV_VALUES=replicaCount: 4"}
	ms, err := cmpGenerate(t, root, app, env)
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeManifests(t, ms)
	wantObjects(t, objs, "Deployment/shop-podinfo", "Service/shop-podinfo")
	if r := replicas(objs["Deployment/shop-podinfo"]); r != float64(4) {
		t.Errorf("replicas %v, want 4 from ARGOCD_ENV_VALUES", r)
	}
}

// Parameters win over ARGOCD_ENV_ variables; value files are read from the
// Application's directory; a kustomization resource renders too.
func TestCMPGeneratePrecedenceAndValueFiles(t *testing.T) {
	root, app := gitCheckout(t)
	env := append([]string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop",
		"ARGOCD_ENV_REPOSITORY=does-not-exist", "ARGOCD_ENV_COMPONENT=" + podinfo, "ARGOCD_ENV_VERSION=9.9.9"},
		pluginParams(t, str("repository", "ctf"), str("version", "1.0.0"),
			v1alpha1.ApplicationSourcePluginParameter{Name: "value-files", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"values-prod.yaml"}}})...)
	ms, err := cmpGenerate(t, root, app, env)
	if err != nil {
		t.Fatal(err)
	}
	if r := replicas(decodeManifests(t, ms)["Deployment/shop-podinfo"]); r != float64(5) {
		t.Errorf("replicas %v, want 5 from values-prod.yaml", r)
	}

	ms, err = cmpGenerate(t, root, app, []string{"ARGOCD_APP_NAME=extras", "ARGOCD_APP_NAMESPACE=shop",
		"ARGOCD_ENV_REPOSITORY=ctf", "ARGOCD_ENV_COMPONENT=" + podinfoExtras, "ARGOCD_ENV_VERSION=1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeManifests(t, ms)
	if len(objs) == 0 {
		t.Fatal("kustomization rendered nothing")
	}
	for k := range objs {
		if !strings.HasPrefix(k, "PodDisruptionBudget/") && !strings.HasPrefix(k, "NetworkPolicy/") {
			t.Errorf("unexpected object %s from podinfo-extras", k)
		}
	}
}

// A failing generate fails the request: no manifests, and the error Argo CD
// shows carries the plugin's one stderr line naming application, component,
// version and, when known, resource.
func TestCMPGenerateFailureShowsPluginError(t *testing.T) {
	root, app := gitCheckout(t)
	for _, tc := range []struct {
		name     string
		env      []string
		mentions []string
	}{
		{"unknown version", append([]string{"ARGOCD_APP_NAME=shop"},
			pluginParams(t, str("repository", "ctf"), str("component", podinfo), str("version", "9.9.9"))...),
			[]string{"argocd-ocm-plugin: application shop: component example.com/demo/podinfo:9.9.9:", "available: 1.0.0"}},
		{"render failure", append([]string{"ARGOCD_APP_NAME=shop"},
			pluginParams(t, str("repository", "ctf"), str("component", "example.com/demo/catalog"), str("version", "2.3.0"),
				str("values", "image: {tag: 7}"))...),
			[]string{"argocd-ocm-plugin: application shop: component example.com/demo/catalog:2.3.0: resource chart:"}},
		{"missing inputs", []string{"ARGOCD_APP_NAME=shop"},
			[]string{"argocd-ocm-plugin: application shop:", "missing repository, component, version"}},
		{"unknown resource", []string{"ARGOCD_APP_NAME=shop", "ARGOCD_ENV_REPOSITORY=ctf", "ARGOCD_ENV_COMPONENT=" + podinfo,
			"ARGOCD_ENV_VERSION=1.0.0", "ARGOCD_ENV_RESOURCE=nope"},
			[]string{"argocd-ocm-plugin: application shop: component example.com/demo/podinfo:1.0.0:", "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := cmpGenerate(t, root, app, tc.env)
			if err == nil {
				t.Fatalf("no error; %d manifests", len(ms))
			}
			if len(ms) != 0 {
				t.Errorf("manifests returned with an error: %d", len(ms))
			}
			msg := status.Convert(err).Message()
			t.Logf("Argo CD shows: %s", msg)
			if !strings.Contains(msg, "argocd-ocm-client generate` failed exit status 1: ") {
				t.Errorf("not the plugin's failure: %q", msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("error %q lacks %q", msg, m)
				}
			}
			if strings.Count(msg, "argocd-ocm-plugin: ") != 1 {
				t.Errorf("want exactly one plugin stderr line in %q", msg)
			}
		})
	}
}

func TestCMPParametersAnnouncement(t *testing.T) {
	root, app := gitCheckout(t)
	got, err := cmpAnnounce(t, root, app, append([]string{"ARGOCD_APP_NAME=shop"},
		pluginParams(t, str("repository", "ctf"), str("component", podinfo), str("version", "~1.0"))...))
	if err != nil {
		t.Fatal(err)
	}
	// cmp-server appends plugin.yaml's static list to the dynamic one and
	// the UI keys its rows by name (the first announcement wins): plugin.yaml
	// has no static list, so every parameter comes exactly once, from the
	// dynamic command, with its component defaults.
	if n := len(pluginCfg.Spec.Parameters.Static); n != 0 {
		t.Errorf("plugin.yaml announces %d parameters statically: cmp-server would announce them twice", n)
	}
	first := map[string]*repoclient.ParameterAnnouncement{}
	var order []string
	for _, a := range got {
		if _, ok := first[a.Name]; ok {
			t.Errorf("parameter %q is announced twice", a.Name)
			continue
		}
		first[a.Name] = a
		order = append(order, a.Name)
		if a.Title == "" || a.Tooltip == "" {
			t.Errorf("parameter %q: title %q, tooltip %q", a.Name, a.Title, a.Tooltip)
		}
	}
	for name := range contractParams {
		if _, ok := first[name]; !ok {
			t.Errorf("contract parameter %q is not announced", name)
		}
	}
	want := []string{"repository", "component", "version", "resource", "path", "values", "value-files", "parameters",
		"definition", "platform", "platform-config", "localize", "provenance", "resolved-version"}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("announced %v, want %v", order, want)
	}
	if a := first["resource"]; a.String_ != "chart" || !strings.Contains(a.Tooltip, "chart (helmChart)") {
		t.Errorf("resource: default %q tooltip %q", a.String_, a.Tooltip)
	}
	if a := first["resolved-version"]; a.String_ != "1.0.0" {
		t.Errorf("resolved-version %q, want 1.0.0", a.String_)
	}
	if a := first["version"]; !a.Required || a.String_ != "" || !strings.Contains(a.Tooltip, `"~1.0" resolves to 1.0.0`) {
		t.Errorf("version: %+v", a)
	}
	if first["parameters"].CollectionType != "map" || first["value-files"].CollectionType != "array" {
		t.Errorf("collection types: parameters %q, value-files %q", first["parameters"].CollectionType, first["value-files"].CollectionType)
	}

	// Without a component yet (a new Application in the UI): the contract only.
	got, err = cmpAnnounce(t, root, app, []string{"ARGOCD_APP_NAME=new"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range got {
		if a.Name == "resolved-version" || a.String_ != "" {
			t.Errorf("announced %q = %q without a component", a.Name, a.String_)
		}
	}
}

func TestCMPParametersAnnouncementFailure(t *testing.T) {
	root, app := gitCheckout(t)
	got, err := cmpAnnounce(t, root, app, append([]string{"ARGOCD_APP_NAME=shop"},
		pluginParams(t, str("repository", "ctf"), str("component", podinfo), str("version", "3.0.0"))...))
	if err == nil {
		t.Fatalf("no error; announced %d", len(got))
	}
	msg := status.Convert(err).Message()
	for _, m := range []string{"argocd-ocm-client parameters` failed exit status 1", "argocd-ocm-plugin: application shop: component example.com/demo/podinfo:3.0.0:"} {
		if !strings.Contains(msg, m) {
			t.Errorf("error %q lacks %q", msg, m)
		}
	}
}

// No discovery: the plugin runs only for Applications that name it, and it
// asks for no git credentials.
func TestCMPNoDiscovery(t *testing.T) {
	resp, err := cmpClient(t).CheckPluginConfiguration(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.IsDiscoveryConfigured || resp.ProvideGitCreds {
		t.Errorf("discovery configured %v, git creds %v: want neither", resp.IsDiscoveryConfigured, resp.ProvideGitCreds)
	}
	if pluginCfg.Metadata.Name != pluginName || pluginCfg.Spec.Version != "" {
		t.Errorf("plugin %q version %q: Applications name it %q", pluginCfg.Metadata.Name, pluginCfg.Spec.Version, pluginName)
	}
}

// Generation goes through the render server the sidecar runs, and a client
// without a server (none listening) renders the same manifests, and the same
// error, in a process of its own.
func TestCMPRenderServerAndFallbackAgree(t *testing.T) {
	root, app := gitCheckout(t)
	ok := append([]string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop-ns"},
		pluginParams(t, str("repository", "ctf"), str("component", podinfo), str("version", "1.0.0"),
			v1alpha1.ApplicationSourcePluginParameter{Name: "value-files", OptionalArray: &v1alpha1.OptionalArray{Array: []string{"values-prod.yaml"}}})...)
	bad := append([]string{"ARGOCD_APP_NAME=shop"}, pluginParams(t, str("repository", "ctf"), str("component", podinfo), str("version", "9.9.9"))...)

	before := strings.Count(renderLog.String(), "command done")
	served, err := cmpGenerate(t, root, app, ok)
	if err != nil {
		t.Fatal(err)
	}
	_, servedErr := cmpGenerate(t, root, app, bad)
	// The line reaches renderLog through the server's stderr pipe, possibly
	// after the answer.
	if n := waitForCount(func() int { return strings.Count(renderLog.String(), "command done") - before }, 2); n != 2 {
		t.Fatalf("the render server ran %d commands, want 2; its log:\n%s", n, renderLog.String())
	}

	// argocd-cmp-server gives each command its own environment at the time.
	t.Setenv("ARGOCD_OCM_SERVER_SOCKET", filepath.Join(t.TempDir(), "none.sock"))
	fallback, err := cmpGenerate(t, root, app, ok)
	if err != nil {
		t.Fatal(err)
	}
	_, fallbackErr := cmpGenerate(t, root, app, bad)
	if n := strings.Count(renderLog.String(), "command done") - before; n != 2 {
		t.Fatalf("the render server ran commands without being reachable")
	}
	if !reflect.DeepEqual(served, fallback) {
		t.Errorf("render server and process differ:\n%q\n%q", served, fallback)
	}
	if servedErr == nil || fallbackErr == nil || status.Convert(servedErr).Message() != status.Convert(fallbackErr).Message() {
		t.Errorf("errors differ:\nserver:  %v\nprocess: %v", servedErr, fallbackErr)
	}
	if r := replicas(decodeManifests(t, served)["Deployment/shop-podinfo"]); r != float64(5) {
		t.Errorf("replicas %v, want 5 from values-prod.yaml (read from the Application's directory by the server)", r)
	}
}
