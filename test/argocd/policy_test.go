package argocd

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/status"
)

// TestCMPSidecarPolicyPerProject: the sidecar policy through argocd-cmp-server,
// with ARGOCD_APP_PROJECT_NAME in the request's environment as the
// repo-server of Argo CD 3.0 and later sets it (reposerver/repository
// newEnv: q.ProjectName); argocd-cmp-server passes it on to the plugin
// unchanged. Project team-a may not read CTFs from git, project team-b may,
// and an Application whose project is not passed gets the default rule.
func TestCMPSidecarPolicyPerProject(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	writeFile(t, pol, `apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
rules:
- name: team-a
  projects: ["team-a*"]
  repositories: [{host: ghcr.io, pathPrefix: acme/team-a}]
  localArchives: false
- name: team-b
  projects: [team-b]
  repositories: []
default:
  localArchives: false
`)
	// The sidecar's environment (argocd-cmp-server runs the plugin with its
	// own environment plus the request's). It differs from the render
	// server's, so the generations run in processes of their own.
	t.Setenv("ARGOCD_OCM_POLICY", pol)
	root, app := gitCheckout(t)
	request := func(project string) []string {
		env := []string{"ARGOCD_APP_NAME=shop", "ARGOCD_APP_NAMESPACE=shop",
			"ARGOCD_ENV_REPOSITORY=ctf", "ARGOCD_ENV_COMPONENT=" + podinfo, "ARGOCD_ENV_VERSION=1.0.0"}
		if project != "" {
			env = append(env, "ARGOCD_APP_PROJECT_NAME="+project)
		}
		return env
	}

	ms, err := cmpGenerate(t, root, app, request("team-b"))
	if err != nil {
		t.Fatalf("team-b: %v", err)
	}
	wantObjects(t, decodeManifests(t, ms), "Deployment/shop-podinfo")

	for _, project := range []string{"team-a", "team-a-dev", "other", ""} {
		ms, err := cmpGenerate(t, root, app, request(project))
		if err == nil {
			t.Fatalf("project %q: rendered %d manifests under a policy that refuses it", project, len(ms))
		}
		msg := status.Convert(err).Message()
		if !strings.Contains(msg, "refused by the sidecar policy") || !strings.Contains(msg, "application shop") ||
			!strings.Contains(msg, `project "`+project+`"`) {
			t.Errorf("project %q: %s", project, msg)
		}
		if len(ms) != 0 {
			t.Errorf("project %q: manifests with an error", project)
		}
	}
}
