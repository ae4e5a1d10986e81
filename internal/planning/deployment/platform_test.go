package deployment_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// A platform validates each package's parameters against the definition its
// child ships, naming the package, before emitting any child Application.
func TestPlatformValidatesPackageParameters(t *testing.T) {
	def := header + "spec:\n  parameters:\n    replicas: {type: integer, minimum: 1}\n  renders:\n  - resource: {name: manifests}\n"
	tree, err := ocmbuild.TarFiles(map[string][]byte{"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")}, false)
	if err != nil {
		t.Fatal(err)
	}
	child := &ocmbuild.Component{Name: "example.com/idp/app", Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "manifests", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: tree},
		yamlRes("deploy", deployment.ResourceType, def)}}
	plain := &ocmbuild.Component{Name: "example.com/idp/plain", Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "manifests", Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: tree}}}
	parent := &ocmbuild.Component{Name: "example.com/idp/platform", Version: "1.0.0", References: []ocmbuild.Reference{
		{Name: "app", ComponentName: child.Name, Version: "1.0.0"}, {Name: "plain", ComponentName: plain.Name, Version: "1.0.0"}}}
	dir := filepath.Join(t.TempDir(), "ctf")
	if err := ocmbuild.WriteCTF(dir, parent, child, plain); err != nil {
		t.Fatal(err)
	}
	req := func(values map[string]any) argocdocm.Request {
		return argocdocm.Request{Repository: dir, Component: parent.Name, Version: "1.0.0", ReleaseName: "idp", Values: values,
			Platform: argocdocm.PlatformRequest{Source: argocdocm.PlatformSource{RepoURL: "https://git.example.com/idp.git"}, Project: "team"}}
	}
	pkgs := func(p map[string]any) map[string]any { return map[string]any{"packages": p} }

	if _, err := renderer(nil).Render(context.Background(), req(pkgs(map[string]any{"app": map[string]any{"parameters": map[string]any{"replicas": "3"}}}))); err != nil {
		t.Fatalf("valid parameters: %v", err)
	}
	for name, tc := range map[string]struct {
		values map[string]any
		want   string
	}{
		"misspelt": {pkgs(map[string]any{"app": map[string]any{"parameters": map[string]any{"replicaz": "3"}}}),
			"package app (example.com/idp/app:1.0.0): invalid input: deployment definition resource deploy"},
		"out of bounds": {pkgs(map[string]any{"app": map[string]any{"parameters": map[string]any{"replicas": "0"}}}),
			"parameter replicas"},
		"no definition": {pkgs(map[string]any{"plain": map[string]any{"parameters": map[string]any{"replicas": "3"}}}),
			"package plain (example.com/idp/plain:1.0.0): invalid input: parameters (replicas) need a deployment definition"},
		"unknown definition resource": {pkgs(map[string]any{"app": map[string]any{"definition": "resource:deploy-prod"}}),
			"package app (example.com/idp/app:1.0.0)"},
	} {
		_, err := renderer(nil).Render(context.Background(), req(tc.values))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
		if name == "misspelt" && (!errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "not declared (declared: replicas)")) {
			t.Errorf("misspelt: %v", err)
		}
	}
}
