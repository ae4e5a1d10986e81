package generator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/generator"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Selection against a real registry: constraints, newest N, all, filters,
// signatures, labels, references; stable order and pinned entries.
func TestSelectRegistry(t *testing.T) {
	f := newFixture(t)
	url := serve(t, f.generator(t, generator.Options{}))
	digests := map[string]string{}
	for _, p := range call(t, url, map[string]any{"repository": f.repo, "component": podinfo, "version": ">=0.0.0-0", "latest": 0}).params(t) {
		digests[p["version"].(string)] = p["digest"].(string)
	}

	tests := []struct {
		name     string
		params   map[string]any
		versions string // "component:version" of every entry, in order
		names    string
	}{
		{"default: newest release", map[string]any{}, podinfo + ":3.0.0", "podinfo"},
		{"tilde constraint", map[string]any{"version": "~2.3"}, podinfo + ":2.3.1", "podinfo"},
		{"newest two of ^2", map[string]any{"version": "^2", "latest": 2},
			podinfo + ":2.4.0 " + podinfo + ":2.3.1", "podinfo-2-4-0 podinfo-2-3-1"},
		{"all, releases only, descending", map[string]any{"latest": 0},
			podinfo + ":3.0.0 " + podinfo + ":2.4.0 " + podinfo + ":2.3.1 " + podinfo + ":2.3.0 " + podinfo + ":1.0.0", ""},
		{"prerelease constraint", map[string]any{"version": ">=2.3.2-0 <2.4.0", "latest": 0}, podinfo + ":2.3.2-rc.1", ""},
		{"exact version", map[string]any{"version": "2.3.0"}, podinfo + ":2.3.0", "podinfo"},
		{"semverFilter", map[string]any{"semverFilter": `^2\.3\.`, "latest": 0},
			podinfo + ":2.3.1 " + podinfo + ":2.3.0", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := map[string]any{"repository": f.repo, "component": podinfo}
			for k, v := range tc.params {
				p[k] = v
			}
			ps := call(t, url, p).params(t)
			var got []string
			for _, e := range ps {
				got = append(got, e["component"].(string)+":"+e["version"].(string))
				if e["repository"] != f.repo {
					t.Errorf("repository %v, want %s", e["repository"], f.repo)
				}
				d, _ := e["digest"].(string)
				if !strings.HasPrefix(d, "sha256:") || d != digests[e["version"].(string)] {
					t.Errorf("%s: digest %q, want the descriptor manifest's %q", e["version"], d, digests[e["version"].(string)])
				}
				if e["pinnedVersion"] != e["version"].(string)+"@"+d {
					t.Errorf("pinnedVersion %v", e["pinnedVersion"])
				}
			}
			if joined(got) != tc.versions {
				t.Errorf("got %s\nwant %s", joined(got), tc.versions)
			}
			if tc.names != "" && joined(column(ps, "name")) != tc.names {
				t.Errorf("names %s, want %s", joined(column(ps, "name")), tc.names)
			}
		})
	}

	t.Run("labels", func(t *testing.T) {
		ps := call(t, url, map[string]any{"repository": f.repo, "component": podinfo, "labels": true}).params(t)
		if ps[0]["labels.team"] != "web" || ps[0]["labels.tier"] != `{"n":1}` {
			t.Errorf("labels: %v", ps[0])
		}
		ps = call(t, url, map[string]any{"repository": f.repo, "component": podinfo, "labels": []string{"team"}}).params(t)
		if _, ok := ps[0]["labels.tier"]; ok || ps[0]["labels.team"] != "web" {
			t.Errorf("label selection: %v", ps[0])
		}
		ps = call(t, url, map[string]any{"repository": f.repo, "component": podinfo}).params(t)
		if _, ok := ps[0]["labels.team"]; ok {
			t.Errorf("labels without the parameter: %v", ps[0])
		}
	})

	t.Run("signature skips unsigned versions", func(t *testing.T) {
		ps := call(t, url, map[string]any{"repository": f.repo, "component": redis}).params(t)
		if joined(column(ps, "version")) != "1.1.0" {
			t.Fatalf("unsigned newest: %v", column(ps, "version"))
		}
		ps = call(t, url, map[string]any{"repository": f.repo, "component": redis, "signature": "release"}).params(t)
		if joined(column(ps, "version")) != "1.0.0" {
			t.Errorf("signed: %v, want only 1.0.0", column(ps, "version"))
		}
		r := call(t, url, map[string]any{"repository": f.repo, "component": podinfo, "signature": []string{"release"}})
		if r.status != http.StatusBadRequest || !strings.Contains(r.message(t), "signed") {
			t.Errorf("no signed podinfo: %d %s", r.status, r.body)
		}
	})

	t.Run("references of the newest platform, nested platform expanded", func(t *testing.T) {
		ps := call(t, url, map[string]any{"repository": f.repo, "component": idp, "references": true}).params(t)
		var got []string
		for _, e := range ps {
			got = append(got, fmt.Sprintf("%s=%s:%s<%s:%s", e["name"], e["component"], e["version"], e["parent"], e["parentVersion"]))
			if e["reference"] == "" || !strings.HasPrefix(e["digest"].(string), "sha256:") {
				t.Errorf("entry %v", e)
			}
		}
		want := "base-db=" + redis + ":1.0.0<" + idpBase + ":1.0.0 frontend=" + podinfo + ":2.4.0<" + idp + ":1.1.0"
		if joined(got) != want {
			t.Errorf("got  %s\nwant %s", joined(got), want)
		}
		if ps[1]["digest"] != digests["2.4.0"] {
			t.Errorf("reference digest %v, want %s", ps[1]["digest"], digests["2.4.0"])
		}
		// Two platform versions: names carry the platform's version.
		ps = call(t, url, map[string]any{"repository": f.repo, "component": idp, "references": true, "latest": 0}).params(t)
		if got := joined(column(ps, "name")); got != "idp-1-1-0-base-db idp-1-1-0-frontend idp-1-0-0-base-db idp-1-0-0-frontend" {
			t.Errorf("names %s", got)
		}
	})

	t.Run("references of several platforms are prefixed", func(t *testing.T) {
		ps := call(t, url, map[string]any{"repository": f.repo, "component": "example.org/platform/*", "references": true}).params(t)
		if got := joined(column(ps, "name")); got != "base-db idp-base-db idp-frontend" {
			t.Errorf("names %s", got)
		}
	})

	t.Run("prefix pattern over the registry catalog", func(t *testing.T) {
		ps := call(t, url, map[string]any{"repository": f.repo, "component": "example.org/apps/*"}).params(t)
		if got := joined(column(ps, "component")); got != podinfo+" "+redis {
			t.Errorf("components %s", got)
		}
		if got := joined(column(ps, "name")); got != "podinfo redis" {
			t.Errorf("names %s", got)
		}
		// Components without a matching version drop out; none at all is 400.
		ps = call(t, url, map[string]any{"repository": f.repo, "component": "example.org/apps/*", "version": "~2.3"}).params(t)
		if got := joined(column(ps, "component")); got != podinfo {
			t.Errorf("~2.3 of example.org/apps/*: %s", got)
		}
		r := call(t, url, map[string]any{"repository": f.repo, "component": "example.org/apps/*", "version": "~9"})
		if r.status != http.StatusBadRequest || !strings.Contains(r.message(t), "no component matching example.org/apps/* has a matching version") {
			t.Errorf("~9: %d %s", r.status, r.body)
		}
	})
}

// A CTF: the demo fixture (its platform and podinfo with build metadata).
func TestSelectCTF(t *testing.T) {
	ctfDir := demoCTF(t)
	g := (*fixture)(nil).generator(t, generator.Options{CTFRoots: []string{filepath.Dir(ctfDir)}})
	url := serve(t, g)
	ps := call(t, url, map[string]any{"repository": ctfDir, "component": "example.com/demo/podinfo", "latest": 0}).params(t)
	if got := joined(column(ps, "version")); got != "1.1.0+build.7 1.0.0" {
		t.Errorf("versions %s", got)
	}
	if got := joined(column(ps, "name")); got != "podinfo-1-1-0-build-7 podinfo-1-0-0" {
		t.Errorf("names %s", got)
	}
	for _, p := range ps {
		if !strings.HasPrefix(p["digest"].(string), "sha256:") {
			t.Errorf("digest %v", p["digest"])
		}
		if _, ok := p["pinnedVersion"]; ok {
			t.Errorf("a CTF version is not pinned by digest: %v", p)
		}
	}
	// A relative path is below the first CTF directory.
	ps = call(t, url, map[string]any{"repository": "./" + filepath.Base(ctfDir), "component": "example.com/demo/*"}).params(t)
	if got := joined(column(ps, "component")); got != "example.com/demo/catalog example.com/demo/platform example.com/demo/podinfo example.com/demo/podinfo-extras" {
		t.Errorf("components %s", got)
	}
	ps = call(t, url, map[string]any{"repository": ctfDir, "component": "example.com/demo/platform", "references": true}).params(t)
	if len(ps) == 0 {
		t.Fatal("no references")
	}
	for _, p := range ps {
		if p["parent"] != "example.com/demo/platform" || p["reference"] == "" || p["version"] == "" {
			t.Errorf("reference entry %v", p)
		}
	}

	// Outside the CTF directories, existing or not: one message.
	for _, repo := range []string{"/etc", "/no/such/dir", "../../..", ctfDir + "/../../../go.mod"} {
		r := call(t, url, map[string]any{"repository": repo, "component": "x.org/y"})
		if r.status != http.StatusBadRequest || !strings.Contains(r.message(t), "below the generator's CTF directories") {
			t.Errorf("%s: %d %s", repo, r.status, r.body)
		}
	}
	// Without CTF directories, no CTF at all.
	url2 := serve(t, (*fixture)(nil).generator(t, generator.Options{}))
	if r := call(t, url2, map[string]any{"repository": ctfDir, "component": "example.com/demo/podinfo"}); r.status != http.StatusBadRequest || !strings.Contains(r.message(t), "reads none") {
		t.Errorf("CTF without CTF directories: %d %s", r.status, r.body)
	}
}

// The point of the generator: a version pushed between two polls appears
// on the second, once the list TTL has passed; within it, nothing new is
// asked of the registry. The second poll must be within the TTL: where a
// loaded machine made it later (a fixed 300 ms failed once in 40 on 2 busy
// cores), the case proves nothing either way and runs again with a longer one.
func TestPushedVersionAppears(t *testing.T) {
	for ttl := 300 * time.Millisecond; !pushedVersionAppears(t, ttl); ttl *= 4 {
		if ttl >= 10*time.Second {
			t.Fatalf("the second poll never came within a list TTL of %v", ttl)
		}
		t.Logf("the second poll came after the list TTL of %v: again with %v", ttl, 4*ttl)
	}
}

// pushedVersionAppears runs TestPushedVersionAppears with ttl; false: the
// poll that must be within it was not.
func pushedVersionAppears(t *testing.T, ttl time.Duration) bool {
	f := newFixture(t)
	g := f.generator(t, generator.Options{ListTTL: ttl})
	url := serve(t, g)
	p := map[string]any{"repository": f.repo, "component": podinfo, "version": "~2.4"}
	listing := time.Now() // the list's time to live starts after this
	if got := joined(column(call(t, url, p).params(t), "version")); got != "2.4.0" {
		t.Fatalf("first poll: %s", got)
	}
	f.reg.Push(t, "ocm", app(podinfo, "2.4.1"))
	f.reg.Reset()
	got := joined(column(call(t, url, p).params(t), "version"))
	if time.Since(listing) >= ttl {
		return false
	}
	if got != "2.4.0" {
		t.Errorf("within the TTL: %s", got)
	}
	if n := len(f.reg.Requests()); n != 0 {
		t.Errorf("within the TTL the registry was asked %d times: %v", n, f.reg.Requests())
	}
	time.Sleep(ttl + 50*time.Millisecond)
	ps := call(t, url, p).params(t)
	if got := joined(column(ps, "version")); got != "2.4.1" {
		t.Errorf("after the TTL: %s", got)
	}
	if ps[0]["name"] != "podinfo" {
		t.Errorf("the Application keeps its name as its version moves: %v", ps[0]["name"])
	}
	return true
}

// Warm, many versions cost one registry request: the tag list.
func TestWarmCostsOneRequest(t *testing.T) {
	reg := registrytest.Start(t)
	var comps []*ocmbuild.Component
	for i := 0; i < 200; i++ {
		comps = append(comps, app(podinfo, fmt.Sprintf("1.%d.0", i)))
	}
	reg.Push(t, "ocm", comps...)
	g := (*fixture)(nil).generator(t, generator.Options{ListTTL: -1})
	// What is counted is registry requests, not time: the request timeout
	// is a safety net (at load ~36 on 2 cores the 200 cold lookups ran past
	// the default 25 s).
	url := serveHandler(t, &generator.Handler{Generator: g, RequestTimeout: 5 * time.Minute})
	p := map[string]any{"repository": reg.URL + "/ocm", "component": podinfo, "latest": 0}
	cold := time.Now()
	if n := len(call(t, url, p).params(t)); n != 200 {
		t.Fatalf("%d entries", n)
	}
	coldD := time.Since(cold)
	reg.Reset()
	warm := time.Now()
	ps := call(t, url, p).params(t)
	warmD := time.Since(warm)
	if len(ps) != 200 || ps[0]["version"] != "1.199.0" || ps[199]["version"] != "1.0.0" {
		t.Fatalf("order: first %v last %v", ps[0]["version"], ps[len(ps)-1]["version"])
	}
	reqs := reg.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Path, "/tags/list") {
		t.Errorf("warm request cost %d registry requests: %v", len(reqs), reqs)
	}
	t.Logf("200 versions: cold %s, warm %s", coldD.Round(time.Millisecond), warmD.Round(time.Millisecond))
}

// Registry credentials: the generator's (the registry client's options),
// never in a message.
func TestRegistryCredentials(t *testing.T) {
	f := newFixture(t, registrytest.WithBasicAuth("robot", "hunter2-password"))
	url := serve(t, f.generator(t, generator.Options{}))
	r := call(t, url, map[string]any{"repository": f.repo, "component": podinfo})
	if r.status != http.StatusBadGateway || !strings.Contains(r.message(t), "unauthorized") {
		t.Errorf("without credentials: %d %s", r.status, r.body)
	}
	withCreds := func(ctx context.Context, spec string) (ocm.Repository, error) {
		return resolve.Open(spec, oci.WithCache(nil), oci.WithRegistryOptions(
			registry.WithCredential(f.reg.Host, registry.Credential{Username: "robot", Password: "hunter2-password"}),
			registry.WithPlainHTTP(f.reg.Host))) // credentials over plain HTTP only to listed hosts
	}
	url = serve(t, f.generator(t, generator.Options{Open: withCreds}))
	if got := joined(column(call(t, url, map[string]any{"repository": f.repo, "component": podinfo, "version": "~2.3"}).params(t), "version")); got != "2.3.1" {
		t.Errorf("with credentials: %s", got)
	}
	r = call(t, url, map[string]any{"repository": f.repo, "component": "example.org/apps/missing"})
	if r.status != http.StatusBadRequest || strings.Contains(string(r.body), "hunter2") || strings.Contains(string(r.body), "robot") {
		t.Errorf("unknown component: %d %s", r.status, r.body)
	}
}

type denyGate struct{ asked []string }

func (d *denyGate) AllowRepository(project, spec string) error {
	d.asked = append(d.asked, project+"|"+spec)
	return errors.New("not in the policy's repositories")
}

// The gate (the sidecar's policy, wired at the command) is asked, with
// project "", before the repository is opened.
func TestRepositoryGate(t *testing.T) {
	opened := 0
	open := func(ctx context.Context, spec string) (ocm.Repository, error) {
		opened++
		return nil, errors.New("must not be opened")
	}
	gate := &denyGate{}
	url := serve(t, (*fixture)(nil).generator(t, generator.Options{Open: open, Gate: gate}))
	r := call(t, url, map[string]any{"repository": "registry.example.org/ocm", "component": "a/b"})
	if r.status != http.StatusBadRequest || !strings.Contains(r.message(t), "not in the policy's repositories") {
		t.Errorf("%d %s", r.status, r.body)
	}
	if opened != 0 || len(gate.asked) != 1 || gate.asked[0] != "|registry.example.org/ocm" {
		t.Errorf("opened %d times, gate asked %v", opened, gate.asked)
	}
	// Credentials in a spec are refused before the gate, unrepeated.
	r = call(t, url, map[string]any{"repository": "robot:hunter2@registry.example.org/ocm", "component": "a/b"})
	if r.status != http.StatusBadRequest || strings.Contains(string(r.body), "hunter2") || len(gate.asked) != 1 {
		t.Errorf("%d %s (gate asked %v)", r.status, r.body, gate.asked)
	}
}
