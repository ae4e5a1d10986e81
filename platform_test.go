package argocdocm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// Nested platforms, as Argo CD renders them: the parent's platform config
// gives the nested platform (core) values, which are core's own platform
// config. Core renders with the project Argo CD gives it (the one its parent
// gave it), so a grandchild cannot leave the project or the destination
// either; what the top level may not do, no level may.
func TestNestedPlatformChildrenCannotEscape(t *testing.T) {
	ctx := context.Background()
	r := &argocdocm.Renderer{}
	src := argocdocm.PlatformSource{RepoURL: "https://git.example.com/idp.git", Path: "prod", TargetRevision: "main"}
	base := argocdocm.Request{Application: "idp", Repository: distroBundle, Component: examples.Distro, Version: "1.0.0",
		ReleaseName: "idp", Namespace: "argocd", Platform: argocdocm.PlatformRequest{Source: src, Project: "team-a"}}

	for _, tc := range []struct {
		name, grandchildConfig, mention string
	}{
		{"admin project", "project: admin-project", `project "admin-project", but children stay in their parent Application's project "team-a"`},
		{"admin project and kube-system", "{project: admin-project, packages: {extras: {namespace: kube-system}}}", `project "admin-project"`},
		{"admin project and another cluster", "{project: admin-project, destination: {server: 'https://prod.example.com:6443'}}", `project "admin-project"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var grand map[string]any
			if err := yaml.Unmarshal([]byte(tc.grandchildConfig), &grand); err != nil {
				t.Fatal(err)
			}
			top := base
			top.Values = map[string]any{"packages": map[string]any{"core": map[string]any{"values": grand}}}
			child := coreChild(t, r, top)
			_, err := r.Render(ctx, child)
			if !errors.Is(err, errdef.ErrNotAllowed) || !strings.Contains(err.Error(), tc.mention) ||
				!strings.HasPrefix(err.Error(), "application idp-core: component "+examples.DistroCore+":1.0.0: ") {
				t.Fatalf("grandchild: got %v, want %q", err, tc.mention)
			}
			// The same config at the top level is refused there.
			direct := base
			direct.Values = grand
			if tc.name == "admin project and kube-system" {
				direct.Values = map[string]any{"project": "admin-project", "packages": map[string]any{"shop": map[string]any{"namespace": "kube-system"}}}
			}
			if _, err := r.Render(ctx, direct); !errors.Is(err, errdef.ErrNotAllowed) {
				t.Fatalf("top level: %v", err)
			}
			// The operator may allow it (the generation's rule).
			allowed := &argocdocm.Renderer{}
			allowed.SetRule(&policy.Rule{LocalArchives: true, Platform: policy.Platform{AllowOtherProjects: true, AllowOtherDestinations: true}})
			if _, err := allowed.Render(ctx, child); err != nil {
				t.Fatalf("allowed: %v", err)
			}
		})
	}
}

// Within their project, a platform's children (and grandchildren) may go
// to the namespace or cluster their config gives: Argo CD checks each
// against that AppProject's destinations.
func TestNestedPlatformChildrenChooseDestinationsInTheirProject(t *testing.T) {
	ctx := context.Background()
	r := &argocdocm.Renderer{}
	src := argocdocm.PlatformSource{RepoURL: "https://git.example.com/idp.git", Path: "prod", TargetRevision: "main"}
	grand := map[string]any{"packages": map[string]any{"extras": map[string]any{"namespace": "kube-system"}}}
	top := argocdocm.Request{Application: "idp", Repository: distroBundle, Component: examples.Distro, Version: "1.0.0",
		ReleaseName: "idp", Namespace: "argocd", Platform: argocdocm.PlatformRequest{Source: src, Project: "team-a"},
		Values: map[string]any{"packages": map[string]any{"core": map[string]any{"values": grand}}}}
	res, err := r.Render(ctx, coreChild(t, r, top))
	if err != nil {
		t.Fatalf("grandchild in its project: %v", err)
	}
	found := false
	for _, app := range res.Objects {
		if get(app, "spec", "destination", "namespace") == "kube-system" && get(app, "spec", "project") == "team-a" {
			found = true
		}
	}
	if !found {
		t.Errorf("no grandchild in kube-system, project team-a: %v", res.Objects)
	}
}

// coreChild renders the platform top and returns the request Argo CD makes
// for its child Application idp-core: its parameters, its project.
func coreChild(t *testing.T, r *argocdocm.Renderer, top argocdocm.Request) argocdocm.Request {
	t.Helper()
	res, err := r.Render(context.Background(), top)
	if err != nil {
		t.Fatalf("top level: %v", err) // the top level itself stays in its project
	}
	var core map[string]any
	for _, app := range res.Objects {
		if get(app, "metadata", "name") == "idp-core" {
			core = app
		}
	}
	if core == nil || get(core, "spec", "project") != "team-a" {
		t.Fatalf("core child: %v", core)
	}
	p := params(core)
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(p["values"].(string)), &vals); err != nil {
		t.Fatal(err)
	}
	return argocdocm.Request{Application: "idp-core", Repository: p["repository"].(string), Component: p["component"].(string), Version: p["version"].(string),
		ReleaseName: "idp-core", Namespace: "core", Values: vals,
		Platform: argocdocm.PlatformRequest{Source: top.Platform.Source, Project: get(core, "spec", "project").(string)}}
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
