package deployment_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
)

var (
	examplesDir = filepath.Join(repoRoot, "docs", "examples")
	schemaFile  = filepath.Join(repoRoot, "docs", "schema", "componentdeployment-v1alpha1.schema.json")
)

// exampleFiles are the documented deployment definitions (kind
// ComponentDeployment) in docs/examples; other examples there (a sidecar
// policy) have tests of their own.
func exampleFiles(t *testing.T) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal(data, &head); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if head.Kind == "ComponentDeployment" {
			files = append(files, f)
		}
	}
	if len(files) < 3 {
		t.Fatalf("want three documented examples in %s, found %d", examplesDir, len(files))
	}
	return files
}

// Every documented example decodes strictly and satisfies the published schema.
func TestExamplesDecodeAndMatchSchema(t *testing.T) {
	schema, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range exampleFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := deployment.Decode(f, data); err != nil {
				t.Fatalf("decode: %v", err)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			if err := commonutil.ValidateAgainstSingleSchema(doc, schema); err != nil {
				t.Fatalf("schema: %v", err)
			}
			// The schema is strict too: an unknown field fails it.
			doc["spec"].(map[string]any)["renderz"] = []any{}
			if err := commonutil.ValidateAgainstSingleSchema(doc, schema); err == nil {
				t.Fatal("the schema accepts an unknown field")
			}
		})
	}
}

// Example 1 on the OCM CLI's own component: the defaults reproduce `helm
// template` with the chart defaults; on the relocated copy with two
// parameters, `helm template -f values-relocated.yaml`.
func TestExamplePodinfoHelm(t *testing.T) {
	def := filepath.Join(examplesDir, "podinfo-helm.yaml")
	got := render(t, argocdocm.Request{
		Repository: fixtures.Path(t, "ctf"), Component: "example.com/fixtures/podinfo-app", Version: "1.0.0",
		ReleaseName: "demo", Namespace: "demo", KubeVersion: "1.31.0", DefinitionFile: def,
	})
	manifeststest.Equal(t, got, manifeststest.ReadFile(t, fixtures.Path(t, "golden", "podinfo-mini-defaults.yaml")))

	got = render(t, argocdocm.Request{
		Repository: configCTF(t), Component: examples.PodinfoConfigured, Version: "1.0.0",
		ReleaseName: "demo", Namespace: "demo", KubeVersion: "1.31.0", DefinitionFile: def,
		Parameters: map[string]string{"replicas": "2", "message": "hello from the relocated registry"},
	})
	manifeststest.Equal(t, got, manifeststest.ReadFile(t, fixtures.Path(t, "golden", "podinfo-mini-relocated.yaml")))
}

// Example 2: ocm-controller's ConfigData fed by parameters, plus patches and
// automatic localisation.
func TestExampleBackendKustomize(t *testing.T) {
	got := render(t, argocdocm.Request{
		Repository: configCTF(t), Component: examples.Backend, Version: "1.0.0",
		DefinitionFile: filepath.Join(examplesDir, "backend-kustomize.yaml"),
		Parameters:     map[string]string{"replicas": "4", "message": "Hello from example 2"},
	})
	golden(t, "example-backend-kustomize.yaml", got)
	s := encode(t, got)
	for _, want := range []string{"replicas: 4", "PODINFO_UI_MESSAGE: Hello from example 2", "PODINFO_UI_COLOR: '#34577c'",
		"app.kubernetes.io/version: 1.0.0", "@" + examples.BackendImageDigest} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// Example 3 is shipped in the shop component; the git copy given explicitly
// renders the same.
func TestExampleShop(t *testing.T) {
	req := argocdocm.Request{
		Application: "shop", Namespace: "shop",
		Repository: configCTF(t), Component: examples.Shop, Version: "1.0.0", KubeVersion: "1.31.0",
		Parameters: map[string]string{"tier": "premium", "replicas": "3", "host": "shop.example.com",
			"database": "{secretName: shop-db, key: password}"},
	}
	shipped := render(t, req)
	golden(t, "shop.yaml", shipped)
	req.DefinitionFile = filepath.Join(examplesDir, "shop.yaml")
	manifeststest.Equal(t, render(t, req), shipped)
}

// The schema and the Go types list the same fields, so neither drifts.
func TestSchemaMatchesTypes(t *testing.T) {
	b, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	defs := schema["definitions"].(map[string]any)
	resolve := func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			return defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)
		}
		return s
	}
	var check func(where string, s map[string]any, typ reflect.Type)
	check = func(where string, s map[string]any, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		s = resolve(s)
		switch typ.Kind() {
		case reflect.Struct:
			props, _ := s["properties"].(map[string]any)
			fields := jsonFields(typ)
			var sk, tk []string
			for k := range props {
				sk = append(sk, k)
			}
			for k := range fields {
				tk = append(tk, k)
			}
			sort.Strings(sk)
			sort.Strings(tk)
			if strings.Join(sk, ",") != strings.Join(tk, ",") {
				t.Errorf("%s: schema fields %v, Go fields %v", where, sk, tk)
				return
			}
			for k, f := range fields {
				check(where+"."+k, props[k].(map[string]any), f)
			}
		case reflect.Slice:
			if items, ok := s["items"].(map[string]any); ok {
				check(where+"[]", items, typ.Elem())
			}
		case reflect.Map:
			if ap, ok := s["additionalProperties"].(map[string]any); ok && typ.Elem().Kind() != reflect.String {
				check(where+"{}", ap, typ.Elem())
			}
		}
	}
	check("", schema, reflect.TypeOf(deployment.Definition{}))
}

func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		out[name] = f.Type
	}
	return out
}
