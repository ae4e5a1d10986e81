package platform_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/platform"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// A package can choose its child's definition, localisation and name (the
// name is also the child's Helm release name, so an existing release keeps
// its name).
func TestPackageDefinitionLocalizeName(t *testing.T) {
	repo := openCTF(t,
		&ocmbuild.Component{Name: "example.com/idp/p", Version: "1.0.0", References: []ocmbuild.Reference{
			ref("shop", "example.com/idp/shop", "1.0.0"), ref("portal", "example.com/idp/portal", "1.0.0")}},
		leaf("example.com/idp/shop", "1.0.0"), leaf("example.com/idp/portal", "1.0.0"))
	cv := lookup(t, repo, "example.com/idp/p", "1.0.0")
	cfg, err := platform.DecodeConfig([]byte(`
packages:
  shop: {name: webshop, definition: "resource:deploy-prod", localize: true, resource: [chart], path: overlays/prod}
  portal: {localize: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	opts := platform.Options{Parent: "idp", ParentProject: "team", Source: platform.Source{RepoURL: "https://git.example.com/idp.git", Repository: "bundle.tgz"}}
	opts.ApplyConfig(cfg)
	apps, err := platform.Applications(context.Background(), repo, cv, opts)
	if err != nil {
		t.Fatal(err)
	}
	portal, shop := apps[0], apps[1]
	if get(shop, "metadata", "name") != "webshop" || get(portal, "metadata", "name") != "idp-portal" {
		t.Fatalf("names %v %v", get(shop, "metadata", "name"), get(portal, "metadata", "name"))
	}
	sp := params(shop)
	if sp["definition"] != "resource:deploy-prod" || sp["localize"] != "true" || sp["path"] != "overlays/prod" || len(sp["resource"].([]any)) != 1 {
		t.Fatalf("shop parameters %v", sp)
	}
	if pp := params(portal); pp["localize"] != "false" || pp["definition"] != nil {
		t.Fatalf("portal parameters %v", pp)
	}

	// Two children of one name, and a name Argo CD would refuse.
	for cfgText, want := range map[string]string{
		"packages: {shop: {name: same}, portal: {name: same}}": `packages portal and shop both make the child Application "same"`,
		"packages: {shop: {name: Web_Shop}}":                   `reference shop: invalid input: name "Web_Shop" is not a valid Application name`,
	} {
		c, err := platform.DecodeConfig([]byte(cfgText))
		if err != nil {
			t.Fatal(err)
		}
		o := platform.Options{Parent: "idp", ParentProject: "team", Source: platform.Source{RepoURL: "https://git.example.com/idp.git"}}
		o.ApplyConfig(c)
		if _, err := platform.Applications(context.Background(), repo, cv, o); !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", cfgText, err, want)
		}
	}
}

// Platform config errors name the package, the field and the line.
func TestPlatformConfigErrorsNameFieldAndLine(t *testing.T) {
	for doc, want := range map[string]string{
		"packages:\n  podinfo:\n    syncWave: 1\n    valuez: {a: 1}\n": `packages.podinfo."valuez" (line 4): unknown field (fields: definition, destination, disabled, localize, name, namespace, parameters, path, resource, syncWave, values)`,
		"projekt: x\n": `"projekt" (line 1): unknown field`,
		"packages:\n  a:\n    destination: {servr: x}\n": `packages.a.destination."servr" (line 3): unknown field (fields: name, namespace, server)`,
	} {
		_, err := platform.DecodeConfig([]byte(doc))
		if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", doc, err, want)
		}
	}
	// Free-form maps are not checked field by field.
	if _, err := platform.DecodeConfig([]byte("packages: {a: {values: {anything: {goes: 1}}}}\nsyncPolicy: {automated: {}}\n")); err != nil {
		t.Error(err)
	}
}

func TestSyncWaveNote(t *testing.T) {
	repo := openCTF(t, &ocmbuild.Component{Name: "example.com/idp/p", Version: "1.0.0", References: []ocmbuild.Reference{ref("a", "example.com/idp/a", "1.0.0")}},
		leaf("example.com/idp/a", "1.0.0"))
	cv := lookup(t, repo, "example.com/idp/p", "1.0.0")
	opts := platform.Options{Parent: "p", ParentProject: "team", Source: platform.Source{RepoURL: "https://git.example.com/x.git"}}
	apps, err := platform.Applications(context.Background(), repo, cv, opts)
	if err != nil || platform.SyncWaveNote(apps) != "" {
		t.Fatalf("no waves: %v %q", err, platform.SyncWaveNote(apps))
	}
	wave := 2
	opts.Packages = map[string]platform.Package{"a": {SyncWave: &wave}}
	apps, err = platform.Applications(context.Background(), repo, cv, opts)
	if err != nil || !strings.Contains(platform.SyncWaveNote(apps), "health check for Application objects") {
		t.Fatalf("waves: %v %q", err, platform.SyncWaveNote(apps))
	}
}
