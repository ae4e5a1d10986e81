package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
)

// TestCredentialFolding: ARGOCD_OCM_REGISTRY_<NAME>_* variables name hosts
// by folding; credentials go to exactly the host they were meant for, never
// to hosts that only fold to the same name.
func TestCredentialFolding(t *testing.T) {
	ctx := context.Background()
	cred := Credential{Username: "u", Password: secret}
	legacy := map[string]string{
		"ARGOCD_OCM_REGISTRY_REGISTRY_EXAMPLE_TEST_USERNAME": "u",
		"ARGOCD_OCM_REGISTRY_REGISTRY_EXAMPLE_TEST_PASSWORD": secret,
		"ARGOCD_OCM_REGISTRY_127_0_0_1_5000_USERNAME":        "u",
		"ARGOCD_OCM_REGISTRY_127_0_0_1_5000_PASSWORD":        secret,
	}
	withHost := func(host string) map[string]string {
		m := map[string]string{"ARGOCD_OCM_REGISTRY_REGISTRY_EXAMPLE_TEST_HOST": host}
		for k, v := range legacy {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		host string
		gets bool
	}{
		{"legacy: the host", legacy, "registry.example.test", true},
		{"legacy: upper case is the same DNS name", legacy, "REGISTRY.EXAMPLE.TEST", true},
		{"legacy: mixed case", legacy, "Registry.Example.Test", true},
		{"legacy: dash folds to the same name", legacy, "registry-example.test", false},
		{"legacy: underscore folds to the same name", legacy, "registry_example.test", false},
		{"legacy: dash and upper case", legacy, "REGISTRY-EXAMPLE.TEST", false},
		{"legacy: another port", legacy, "registry.example.test:443", false},
		{"legacy: trailing label", legacy, "registry.example.test.evil", false},
		{"legacy: IPv4 and port", legacy, "127.0.0.1:5000", true},
		{"legacy: dotted port lookalike", legacy, "127.0.0.1.5000", false},
		{"legacy: numeric last label", legacy, "127.0.0.1-5000", false},
		{"_HOST names the dashed host", withHost("registry-example.test"), "registry-example.test", true},
		{"_HOST: the dotted host no longer gets them", withHost("registry-example.test"), "registry.example.test", false},
		{"_HOST: case-insensitive", withHost("Registry-Example.TEST"), "registry-example.test", true},
		{"_HOST: underscore host still refused", withHost("registry-example.test"), "registry_example.test", false},
		{"_HOST with a port", withHost("registry.example.test:5000"), "registry.example.test:5000", false}, // folds to another name
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := NewClient(WithoutDockerConfig(), WithEnv(env(c.env)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := cl.Credential(ctx, c.host)
			if err != nil {
				t.Fatal(err)
			}
			if (got == cred) != c.gets {
				t.Fatalf("%s got %+v, want credentials=%v", c.host, got, c.gets)
			}
			if !c.gets {
				if hint := cl.authHint(c.host); strings.Contains(hint, secret) {
					t.Fatalf("hint leaks: %s", hint)
				}
			}
		})
	}
	// A port-qualified host with its own _HOST variable.
	cl, _ := NewClient(WithoutDockerConfig(), WithEnv(env(map[string]string{
		"ARGOCD_OCM_REGISTRY_REG_EXAMPLE_TEST_5000_HOST":     "reg-example.test:5000",
		"ARGOCD_OCM_REGISTRY_REG_EXAMPLE_TEST_5000_USERNAME": "u",
		"ARGOCD_OCM_REGISTRY_REG_EXAMPLE_TEST_5000_PASSWORD": secret,
	})))
	for host, want := range map[string]bool{"reg-example.test:5000": true, "reg.example.test:5000": false, "reg-example.test": false, "reg-example.test:50000": false} {
		got, _ := cl.Credential(ctx, host)
		if (got == cred) != want {
			t.Errorf("%s: %+v, want %v", host, got, want)
		}
	}
	// Docker config keys: compared as DNS names, the port exactly.
	docker := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(docker, []byte(`{"auths":{"https://Registry.Example.Test":{"auth":"`+base64.StdEncoding.EncodeToString([]byte("u:"+secret))+`"}}}`), 0o600)
	cl, _ = NewClient(WithDockerConfig(docker), WithEnv(env(nil)))
	for host, want := range map[string]bool{"registry.example.test": true, "REGISTRY.EXAMPLE.TEST": true, "registry-example.test": false, "registry.example.test:443": false} {
		got, _ := cl.Credential(ctx, host)
		if (got == cred) != want {
			t.Errorf("docker %s: %+v, want %v", host, got, want)
		}
	}
	// Docker config and client options: keys compared as DNS names.
	cl, _ = NewClient(WithoutDockerConfig(), WithEnv(env(nil)), WithCredential("Registry.Example.Test", cred))
	for host, want := range map[string]bool{"registry.example.test": true, "REGISTRY.EXAMPLE.TEST": true, "registry-example.test": false, "registry.example.test:5000": false} {
		got, _ := cl.Credential(ctx, host)
		if (got == cred) != want {
			t.Errorf("options %s: %+v, want %v", host, got, want)
		}
	}
}

// TestScopedCredentials: a scope is for its exact host and path prefix, by
// whole segments; the longest prefix wins; tokens are kept per credential.
func TestScopedCredentials(t *testing.T) {
	ctx := context.Background()
	scope := func(name, host, prefix string) CredentialScope {
		return CredentialScope{Name: name, Host: host, PathPrefix: prefix, Get: func(context.Context) (Credential, error) {
			return Credential{Username: name, Password: secret}, nil
		}}
	}
	c, err := NewClient(WithoutDockerConfig(), WithEnv(env(nil)), WithOnlyScopedCredentials(),
		WithCredentialScopes(scope("team-a", "ghcr.io", "acme/team-a"), scope("team-a-prod", "ghcr.io", "acme/team-a/prod"), scope("all", "quay.io", "")))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ host, repo, want string }{
		{"ghcr.io", "acme/team-a/x", "team-a"},
		{"ghcr.io", "acme/team-a", "team-a"},
		{"GHCR.IO", "acme/team-a/x", "team-a"},
		{"ghcr.io", "acme/team-a/prod/x", "team-a-prod"},
		{"ghcr.io", "acme/team-ab/x", ""},
		{"ghcr.io", "acme/team-b", ""},
		{"ghcr.io:443", "acme/team-a/x", ""},
		{"ghcr.io.evil.example", "acme/team-a/x", ""},
		{"quay.io", "anything/at/all", "all"},
	} {
		key, get := c.credentialFor(tc.host, tc.repo, false)
		cred, _ := get(ctx, tc.host)
		if cred.Username != tc.want {
			t.Errorf("%s/%s: credential %q (%s), want %q", tc.host, tc.repo, cred.Username, key, tc.want)
		}
		if tc.want == "" && key != "anonymous" {
			t.Errorf("%s/%s: token cache %q, want anonymous", tc.host, tc.repo, key)
		}
		// Over plain HTTP the operator did not allow: nothing.
		if _, get := c.credentialFor(tc.host, tc.repo, true); true {
			if cred, _ := get(ctx, tc.host); cred != (Credential{}) {
				t.Errorf("%s/%s over plain HTTP: %+v", tc.host, tc.repo, cred)
			}
		}
	}
	ka, _ := c.credentialFor("ghcr.io", "acme/team-a/x", false)
	kp, _ := c.credentialFor("ghcr.io", "acme/team-a/prod/x", false)
	if ka == kp || c.tokenCache(ka) == c.tokenCache(kp) || c.tokenCache(ka) != c.tokenCache(ka) {
		t.Error("tokens of two credentials share a cache")
	}
	var s Shared
	if s.tokenCache("a") == s.tokenCache("b") || s.tokenCache("a") != s.tokenCache("a") {
		t.Error("Shared token caches are not per credential")
	}
}

// TestSanitizeHostile: what a registry or an input may put into an error.
func TestSanitizeHostile(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte("ocm:" + secret))
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvY20ifQ.c2lnbmF0dXJlX29mX3RoZV90b2tlbg"
	for _, in := range []string{
		"Authorization: Basic " + b64,
		"authorization=basic%20" + b64,
		"Bearer " + jwt,
		"token " + jwt,
		"you sent " + b64 + " which is wrong",
		"password=" + secret,
		`{"password": "` + secret + `"}`,
		"secret: " + secret,
		"https://user:" + secret + "@registry.example/v2/",
		"https://blob.example/x?X-Amz-Signature=" + secret,
		"jwt " + jwt,
	} {
		out := Sanitize(in)
		for _, bad := range []string{secret, b64, jwt, "c2lnbmF0dXJl"} {
			if strings.Contains(out, bad) {
				t.Errorf("Sanitize(%q) = %q keeps %q", in, out, bad)
			}
		}
	}
	// What is not a credential stays readable.
	for _, keep := range []string{
		"manifest unknown: sha256:" + strings.Repeat("0123456789abcdef", 4),
		"repository acme/team-a/component-descriptors/example.com/demo/podinfo not found",
		"MANIFEST_UNKNOWN",
		"dial tcp 127.0.0.1:5000: connect: connection refused",
	} {
		if out := Sanitize(keep); out != keep {
			t.Errorf("Sanitize(%q) = %q", keep, out)
		}
	}
	long := Sanitize(strings.Repeat("é", 1000) + "\x1b[31m\n")
	if len(long) > errdef.MaxMessage+len("…") || strings.ContainsAny(long, "\x1b\n") {
		t.Errorf("not capped or not cleaned: %d bytes %q", len(long), long[len(long)-10:])
	}
	// Unicode line breaks (LS, PS, NEL), C1 controls and bidi overrides
	// would split or reorder the one error line in a log viewer, as
	// errdef.Quote escapes them.
	for _, bad := range []string{"\u2028", "\u2029", "\u0085", "\u009b", "\u202e", "\ufeff", "\xff"} {
		if out := Sanitize("blob unknown" + bad + "level=error msg=forged"); strings.Contains(out, bad) || !strings.HasPrefix(out, "blob unknown?level=error") {
			t.Errorf("Sanitize kept %q: %q", bad, out)
		}
	}
	if out := Sanitize("dépôt « inconnu »"); out != "dépôt « inconnu »" {
		t.Errorf("printable text changed: %q", out)
	}
	// A refusal of a long reference quotes it capped.
	_, err := imageref.Parse("ghcr.io/" + strings.Repeat("A", 3000) + ":t")
	if err == nil || len(err.Error()) > 3*errdef.MaxQuoted {
		t.Errorf("reference error is %d bytes", len(err.Error()))
	}
}

// TestPlainHTTPGuard: over plain HTTP to a host only an http:// URL
// allowed, Authorization is stripped and a request body (a token request's
// password or refresh token) is refused; the operator's hosts get both.
func TestPlainHTTPGuard(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	do := func(c *Client, method string) error {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader("grant_type=refresh_token&refresh_token=" + secret)
		}
		req, _ := http.NewRequest(method, srv.URL+"/token", body)
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("u:"+secret)))
		resp, err := c.HTTPClient().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	url, _ := NewClient(WithoutDockerConfig(), WithEnv(env(nil)), WithRetries(0))
	url.AllowPlainHTTP(host)
	if err := do(url, http.MethodGet); err != nil {
		t.Fatal(err)
	}
	if err := do(url, http.MethodPost); !errors.Is(err, errdef.ErrInsecure) {
		t.Fatalf("POST with a body: %v", err)
	}
	op, _ := NewClient(WithoutDockerConfig(), WithEnv(env(nil)), WithRetries(0), WithPlainHTTP(host))
	if err := do(op, http.MethodPost); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "GET " || !strings.HasPrefix(got[1], "POST Basic ") {
		t.Fatalf("server saw %q; want a GET without Authorization and the operator's POST with it", got)
	}
}
