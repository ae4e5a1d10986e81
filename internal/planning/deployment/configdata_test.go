package deployment_test

import (
	"context"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/deployment"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// The two cases through a render: a ConfigData localization rule
// for a digest-only image gets the digest in the tag field (as
// ocm-controller writes it) and the path alone as repository; a definition's
// image mapping (the OCM CLI's) that maps registry and repository does not
// put the host into both. The per-combination semantics are in
// internal/finish/localize's TestMappingSemantics.
func TestConfigDataAndImageMappingSemantics(t *testing.T) {
	const host = "registry.example.org:5000"
	digest := "sha256:" + strings.Repeat("e", 64)
	webshop := ocmbuild.Resource{Name: "webshop", Type: "ociImage", Version: "2.1.0",
		Access: map[string]any{"type": "ociArtifact", "imageReference": host + "/shop/webshop@" + digest}}
	cd := yamlRes("config", deployment.TypeConfigData, `apiVersion: config.ocm.software/v1alpha1
kind: ConfigData
localization:
- resource: {name: webshop}
  registry: cd.registry
  repository: cd.repository
  tag: cd.tag
- resource: {name: webshop}
  image: cd.image
`)
	def := header + `spec:
  renders:
  - resource: {name: chart}
    valuesFrom: [{resource: {name: config}}]
    localization:
    - {resource: {name: webshop}, registry: cli.registry, repository: cli.repository, tag: cli.tag}
    - {resource: {name: webshop}, repository: clirepo.repository, tag: clirepo.tag}
`
	var report *explain.Report
	req := argocdocm.Request{Repository: testCTF(t, webshop, cd), Component: testComponent, Version: "1.0.0", DefinitionFile: writeFile(t, def)}
	if _, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, l := range report.Renders[0].Values {
		got[l.Path] = l.Value
	}
	for path, want := range map[string]string{
		"cd.registry":        host,
		"cd.repository":      "shop/webshop",
		"cd.tag":             digest,
		"cd.image":           host + "/shop/webshop@" + digest,
		"cli.registry":       host,
		"cli.repository":     "shop/webshop",
		"cli.tag":            digest,
		"clirepo.repository": host + "/shop/webshop",
		"clirepo.tag":        digest,
	} {
		if got[path] != want {
			t.Errorf("%s = %v, want %q", path, got[path], want)
		}
	}
}
