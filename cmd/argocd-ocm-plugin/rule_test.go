package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// The public API applies the whole sidecar rule: the same request rendered
// by generate and by argocdocm.Engine.Render (confined to the Application's
// directory, as generate is, and not) under the same environment gives the
// same objects, or the same refusal, for every switch of the rule:
// signatures, the image origin guard, local archives, platform allowances,
// plain HTTP and addresses (and forced provenance).
func TestEngineRenderAppliesTheSidecarRule(t *testing.T) {
	comps, err := examples.Demo("../../testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	reg.Push(t, "ocm", comps...)
	host := reg.Host
	signed := mustAbs(fixtures.Path(t, "ctf-signed"))
	key := mustAbs(fixtures.Path(t, "keys", "key.pub"))
	policyDir := t.TempDir()
	policyFile := func(name, rule string) string {
		p := filepath.Join(policyDir, name)
		writeTestFile(t, p, "apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\nallowAddresses: ['127.0.0.1']\ndefault:\n"+rule)
		return p
	}
	noLocal := policyFile("no-local.yaml", "  localArchives: false\n")
	local := policyFile("local.yaml", "  repositories: []\n")
	strict := policyFile("strict.yaml", "  repositories: [{host: '"+host+"'}]\n")
	plain := policyFile("plain.yaml", "  repositories: [{host: '"+host+"', pathPrefix: ocm}]\n  plainHTTP: ['"+host+"']\n")

	podinfo := argocdocm.Request{Component: examples.Podinfo, Version: "1.0.0"}
	platform := argocdocm.Request{Component: "example.com/demo/platform", Version: "1.0.0",
		Platform: argocdocm.PlatformRequest{Project: "team-a", Source: argocdocm.PlatformSource{RepoURL: "https://git.example.com/idp.git", Path: "envs/prod"}}}
	signedApp := argocdocm.Request{Component: "example.com/fixtures/signed-app", Version: "1.0.0", Resources: []string{"chart"}}
	evil := map[string]any{"image": map[string]any{"repository": "evil.example.com/miner"}}

	for _, tc := range []struct {
		name string
		// repo is the CTF the Application's directory holds ("" for none),
		// spec what the request names (default: that CTF, as "ctf").
		repo, spec string
		req        argocdocm.Request
		env        map[string]string // the sidecar's settings
		mention    string            // in the refusal; "" renders
	}{
		{name: "no settings", repo: demoRepo, req: podinfo},

		{name: "signature without its key", repo: demoRepo, req: podinfo,
			env:     map[string]string{"ARGOCD_OCM_SIGNATURE": "acme", "ARGOCD_OCM_PUBLIC_KEY": "/nonexistent/acme.pem", "ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES": "true"},
			mention: "public key for signature acme"},
		{name: "signature absent", repo: demoRepo, req: podinfo, env: map[string]string{"ARGOCD_OCM_SIGNATURE": "acme", "ARGOCD_OCM_PUBLIC_KEY": key},
			mention: "acme"},
		{name: "signature verified", repo: signed, req: signedApp,
			env: map[string]string{"ARGOCD_OCM_SIGNATURE": "mysig", "ARGOCD_OCM_PUBLIC_KEY": key, "ARGOCD_OCM_PROVENANCE": "true"}},
		{name: "another signature required", repo: signed, req: signedApp, env: map[string]string{"ARGOCD_OCM_SIGNATURE": "othersig", "ARGOCD_OCM_PUBLIC_KEY": key},
			mention: "othersig"},

		{name: "image guard, own image", repo: demoRepo, req: podinfo, env: map[string]string{"ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES": "true"}},
		{name: "image guard, another image", repo: demoRepo, req: withValues(podinfo, evil), env: map[string]string{"ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES": "true"},
			mention: "image origin guard"},
		{name: "image guard off, another image", repo: demoRepo, req: withValues(podinfo, evil)},
		{name: "image guard misspelt", repo: demoRepo, req: podinfo, env: map[string]string{"ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES": "ture"},
			mention: "want true or false"},

		{name: "local archives refused", repo: demoRepo, req: podinfo, env: map[string]string{"ARGOCD_OCM_POLICY": noLocal},
			mention: "local CTFs and component archives are not allowed"},
		{name: "local archives allowed", repo: demoRepo, req: podinfo, env: map[string]string{"ARGOCD_OCM_POLICY": local}},

		{name: "platform children inherit", repo: demoRepo, req: platform},
		{name: "platform child in another project", repo: demoRepo, req: withValues(platform, map[string]any{"project": "admin-project"}),
			mention: "not allowed"},
		{name: "platform, other projects allowed", repo: demoRepo, req: withValues(platform, map[string]any{"project": "admin-project"}),
			env: map[string]string{"ARGOCD_OCM_PLATFORM_ALLOW_OTHER_PROJECTS": "true"}},
		{name: "platform child in another project's cluster", repo: demoRepo, req: withValues(platform, map[string]any{"project": "admin-project", "destination": map[string]any{"name": "prod"}}),
			env: map[string]string{"ARGOCD_OCM_PLATFORM_ALLOW_OTHER_PROJECTS": "true"}, mention: "not allowed"},
		{name: "platform, other destinations allowed", repo: demoRepo, req: withValues(platform, map[string]any{"destination": map[string]any{"namespace": "kube-system"}}),
			env: map[string]string{"ARGOCD_OCM_PLATFORM_ALLOW_OTHER_DESTINATIONS": "true"}},

		{name: "loopback refused", spec: "http://" + host + "/ocm", req: podinfo, mention: "connection refused by the sidecar"},
		{name: "loopback allowed", spec: "http://" + host + "/ocm", req: podinfo, env: map[string]string{"ARGOCD_OCM_ALLOW_ADDRESSES": "127.0.0.1"}},
		{name: "policy: loopback allowed", spec: host + "/ocm", req: podinfo, env: map[string]string{"ARGOCD_OCM_POLICY": plain}},

		{name: "TLS without plain HTTP", spec: host + "/ocm", req: podinfo, env: map[string]string{"ARGOCD_OCM_ALLOW_ADDRESSES": "127.0.0.1"},
			mention: host},
		{name: "plain HTTP", spec: host + "/ocm", req: podinfo, env: map[string]string{"ARGOCD_OCM_ALLOW_ADDRESSES": "127.0.0.1", "ARGOCD_OCM_PLAIN_HTTP": host}},
		{name: "policy: http:// without plain HTTP", spec: "http://" + host + "/ocm", req: podinfo, env: map[string]string{"ARGOCD_OCM_POLICY": strict},
			mention: host},
		{name: "policy: repository refused", spec: "http://" + host + "/other/ocm", req: podinfo, env: map[string]string{"ARGOCD_OCM_POLICY": plain},
			mention: "is not allowed for project"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Application, req.ReleaseName, req.Namespace = "shop", "shop", "shop"
			req.Repository = tc.spec
			if tc.repo != "" {
				name := inAppDir(t, tc.repo)
				if req.Repository == "" {
					req.Repository = name
				}
			} else {
				t.Chdir(t.TempDir())
			}
			clean := []string{"ARGOCD_OCM_POLICY", "ARGOCD_OCM_SIGNATURE", "ARGOCD_OCM_PUBLIC_KEY", "ARGOCD_OCM_PROVENANCE",
				"ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES", "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_PROJECTS", "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_DESTINATIONS",
				"ARGOCD_OCM_ALLOW_ADDRESSES", "ARGOCD_OCM_PLAIN_HTTP", "ARGOCD_OCM_LOG_LEVEL", "KUBE_VERSION", "KUBE_API_VERSIONS"}
			for _, k := range clean {
				t.Setenv(k, "")
			}
			t.Setenv("DOCKER_CONFIG", t.TempDir())
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			for k, v := range applicationEnv(t, req) {
				t.Setenv(k, v)
			}

			t.Setenv("ARGOCD_OCM_CACHE_DIR", t.TempDir())
			var stdout, stderr bytes.Buffer
			code := run([]string{"generate"}, &stdout, &stderr, os.Getenv)
			if tc.mention == "" {
				if code != 0 {
					t.Fatalf("generate: exit %d: %s", code, stderr.String())
				}
			} else if code == 0 || !strings.Contains(stderr.String(), tc.mention) {
				t.Fatalf("generate: exit %d, stderr %q: want a refusal naming %q", code, stderr.String(), tc.mention)
			}

			root, err := argocdocm.OpenRoot(".")
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			confined := req
			confined.Root = root
			for what, req := range map[string]argocdocm.Request{"confined": confined, "unconfined": req} {
				t.Setenv("ARGOCD_OCM_CACHE_DIR", t.TempDir())
				res, err := argocdocm.NewEngine().Render(context.Background(), req, nil)
				if code != 0 {
					if want := "argocd-ocm-plugin: " + errText(err) + "\n"; stderr.String() != want {
						t.Errorf("%s: Engine.Render: %v (%v)\ngenerate refused: %s", what, err, res != nil, stderr.String())
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: Engine.Render: %v\ngenerate rendered", what, err)
				}
				got, want := normalised(t, res.Objects), generatedObjects(t, stdout.Bytes())
				if len(want) == 0 || !reflect.DeepEqual(got, want) {
					t.Errorf("%s: Engine.Render gave %d objects, generate %d:\n%v\n%v", what, len(got), len(want), got, want)
				}
			}
		})
	}
}

func withValues(req argocdocm.Request, values map[string]any) argocdocm.Request {
	req.Values = values
	return req
}

// applicationEnv is what Argo CD gives generate for req (the inverse of
// cmp.RequestFromEnvironment for the fields the test sets).
func applicationEnv(t *testing.T, req argocdocm.Request) map[string]string {
	t.Helper()
	e := map[string]string{"ARGOCD_APP_NAME": req.Application, "ARGOCD_APP_NAMESPACE": req.Namespace,
		"ARGOCD_ENV_REPOSITORY": req.Repository, "ARGOCD_ENV_COMPONENT": req.Component, "ARGOCD_ENV_VERSION": req.Version,
		"ARGOCD_ENV_RESOURCE": strings.Join(req.Resources, ","), "ARGOCD_ENV_VALUES": "",
		"ARGOCD_APP_PROJECT_NAME": req.Platform.Project, "ARGOCD_APP_SOURCE_REPO_URL": req.Platform.Source.RepoURL,
		"ARGOCD_APP_SOURCE_PATH": req.Platform.Source.Path}
	if req.Values != nil {
		b, err := json.Marshal(req.Values)
		if err != nil {
			t.Fatal(err)
		}
		e["ARGOCD_ENV_VALUES"] = string(b)
	}
	return e
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// generatedObjects decodes generate's output for comparison.
func generatedObjects(t *testing.T, out []byte) []any {
	t.Helper()
	objs, err := manifests.Decode("generate output", out)
	if err != nil {
		t.Fatal(err)
	}
	return normalised(t, objs)
}

// normalised is objs as JSON values, so that numbers compare alike.
func normalised[O ~map[string]any](t *testing.T, objs []O) []any {
	t.Helper()
	b, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	var v []any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
