package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
)

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{"ghcr.io": "GHCR_IO", "127.0.0.1:5000": "127_0_0_1_5000", "my-reg.example.com:443": "MY_REG_EXAMPLE_COM_443"} {
		if got := EnvName(in); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
	}
}

const secret = "s3cr3t-P4ssw0rd"

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "password")
	os.WriteFile(pwFile, []byte(secret+"\n"), 0o600)
	docker := filepath.Join(dir, "config.json")
	os.WriteFile(docker, []byte(fmt.Sprintf(`{
		"auths": {
			"https://index.docker.io/v1/": {"auth": %q},
			"https://ghcr.io": {"username": "gh", "password": "ghpw"},
			"quay.io/some/path": {"identitytoken": "refresh"},
			"reg.example.com": {"registrytoken": "tok"},
			"env.example.com": {"auth": %q}
		},
		"credHelpers": {"123.dkr.ecr.us-east-1.amazonaws.com": "ecr-login"}
	}`, base64.StdEncoding.EncodeToString([]byte("hub:hubpw")), base64.StdEncoding.EncodeToString([]byte("docker:dockerpw")))), 0o600)

	c, err := NewClient(WithDockerConfig(docker), WithEnv(env(map[string]string{
		"ARGOCD_OCM_REGISTRY_ENV_EXAMPLE_COM_USERNAME":      "envuser",
		"ARGOCD_OCM_REGISTRY_ENV_EXAMPLE_COM_PASSWORD_FILE": pwFile,
		"ARGOCD_OCM_REGISTRY_TOKEN_EXAMPLE_COM_TOKEN":       "bearer",
		"ARGOCD_OCM_REGISTRY_BAD_EXAMPLE_COM_PASSWORD_FILE": filepath.Join(dir, "missing"),
	})), WithCredential("static.example.com:5000", Credential{Username: "s", Password: "p"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for host, want := range map[string]Credential{
		"docker.io":               {Username: "hub", Password: "hubpw"},
		"registry-1.docker.io":    {Username: "hub", Password: "hubpw"},
		"ghcr.io":                 {Username: "gh", Password: "ghpw"},
		"quay.io":                 {RefreshToken: "refresh"},
		"reg.example.com":         {AccessToken: "tok"},
		"env.example.com":         {Username: "envuser", Password: secret}, // env wins over docker config
		"token.example.com":       {AccessToken: "bearer"},
		"static.example.com:5000": {Username: "s", Password: "p"},
		"unknown.example.com":     {},
	} {
		got, err := c.Credential(ctx, host)
		if err != nil || got != want {
			t.Errorf("%s: got %+v, %v; want %+v", host, got, err, want)
		}
	}
	_, err = c.Credential(ctx, "bad.example.com")
	if err == nil || !strings.Contains(err.Error(), "ARGOCD_OCM_REGISTRY_BAD_EXAMPLE_COM_PASSWORD_FILE") {
		t.Fatalf("missing credential file: %v", err)
	}
	if src := c.creds.source("env.example.com"); !strings.Contains(src, "environment") {
		t.Errorf("source %q", src)
	}
}

func TestDockerConfigErrorsDoNotLeak(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"no-colon":   fmt.Sprintf(`{"auths":{"r.io":{"auth":%q}}}`, base64.StdEncoding.EncodeToString([]byte(secret))),
		"not-base64": `{"auths":{"r.io":{"auth":"` + secret + `!!"}}}`,
		"bad-json":   `{"auths":{"r.io":{"password":"` + secret + `"}}`,
		"wrong-type": `{"auths":{"r.io":{"password":["` + secret + `"]}}}`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		_, err := NewClient(WithDockerConfig(p))
		if !errors.Is(err, errdef.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error leaks the secret: %v", name, err)
		}
	}
	// A missing file is fine.
	if _, err := NewClient(WithDockerConfig(filepath.Join(dir, "none.json"))); err != nil {
		t.Fatal(err)
	}
}

func TestCAFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o600)
	if _, err := NewClient(WithoutDockerConfig(), WithCAFile(bad)); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Fatalf("bad CA: %v", err)
	}
	if _, err := NewClient(WithoutDockerConfig(), WithCAFile(filepath.Join(dir, "missing.pem"))); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Fatalf("missing CA: %v", err)
	}
}

func TestPlainHTTPPolicy(t *testing.T) {
	c, err := NewClient(WithoutDockerConfig(), WithPlainHTTP("a.local:5000", "b.local"))
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"a.local:5000": true, "A.LOCAL:5000": true, "a.local": false, "b.local": true, "b.local:80": true, "c.local": false} {
		if got := c.PlainHTTPAllowed(host); got != want {
			t.Errorf("%s: %v, want %v", host, got, want)
		}
	}
	_, err = c.Repository(imageref.Reference{Scheme: "http", Registry: "c.local", Repository: "x"})
	if !errors.Is(err, errdef.ErrInsecure) {
		t.Fatalf("http:// to a host not allowed: %v", err)
	}
	r, err := c.Repository(imageref.Reference{Registry: "a.local:5000", Repository: "x"})
	if err != nil || !r.PlainHTTP {
		t.Fatalf("allowed host: %v %v", r, err)
	}
	// The guard refuses plain HTTP below redirects too.
	resp, err := c.HTTPClient().Get("http://c.local/x")
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, errdef.ErrInsecure) {
		t.Fatalf("guard: %v", err)
	}
}

func TestSanitize(t *testing.T) {
	in := `GET "https://bucket.s3.amazonaws.com/blob?X-Amz-Signature=abc&X-Amz-Credential=k": 403; https://user:` + secret + `@reg.io/v2/ oci://u@h/x?y=z`
	out := Sanitize(in)
	for _, bad := range []string{"X-Amz", secret, "user:", "y=z"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q survives: %s", bad, out)
		}
	}
	if !strings.Contains(out, "https://bucket.s3.amazonaws.com/blob") || !strings.Contains(out, "https://reg.io/v2/") {
		t.Errorf("too much removed: %s", out)
	}
}

func TestWrapError(t *testing.T) {
	c, _ := NewClient(WithoutDockerConfig(), WithEnv(env(nil)))
	ref := imageref.Reference{Registry: "r.io", Repository: "ocm/component-descriptors/a", Tag: "1.0.0"}
	resp := func(code int) error {
		return fmt.Errorf("wrapped: %w", &errcode.ErrorResponse{Method: "GET", StatusCode: code, Errors: errcode.Errors{{Code: "X", Message: "msg"}}})
	}
	cases := []struct {
		err  error
		kind error
		text []string
	}{
		{resp(401), errdef.ErrUnauthorized, []string{"registry r.io", "repository ocm/component-descriptors/a", "reference 1.0.0", "HTTP 401 Unauthorized", "ARGOCD_OCM_REGISTRY_R_IO_USERNAME"}},
		{resp(403), errdef.ErrUnauthorized, []string{"HTTP 403"}},
		{resp(404), errdef.ErrNotFound, []string{"HTTP 404"}},
		{resp(503), nil, []string{"HTTP 503 Service Unavailable"}},
		{context.DeadlineExceeded, context.DeadlineExceeded, []string{"timed out"}},
	}
	for _, cs := range cases {
		err := c.Wrap(cs.err, "fetch manifest", ref)
		if cs.kind != nil && !errors.Is(err, cs.kind) {
			t.Errorf("%v: not %v", err, cs.kind)
		}
		for _, s := range cs.text {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%q lacks %q", err, s)
			}
		}
	}
	if c.Wrap(nil, "x", ref) != nil {
		t.Fatal("nil")
	}
}

func TestRetryPolicy(t *testing.T) {
	p := &retryPolicy{max: 3, min: 100 * time.Millisecond, cap: time.Second, logger: nil}
	p.logger = discardLogger()
	mk := func(code int, h http.Header) *http.Response { return &http.Response{StatusCode: code, Header: h} }
	for _, c := range []struct {
		attempt int
		resp    *http.Response
		err     error
		retry   bool
	}{
		{0, mk(503, nil), nil, true},
		{0, mk(500, nil), nil, true},
		{0, mk(429, nil), nil, true},
		{0, mk(501, nil), nil, false},
		{0, mk(404, nil), nil, false},
		{0, mk(401, nil), nil, false},
		{3, mk(503, nil), nil, false}, // bounded
		{0, nil, errors.New("x: connection reset by peer"), false},
		{0, nil, context.Canceled, false},
		{0, nil, errdef.ErrInsecure, false},
	} {
		d, err := p.Retry(c.attempt, c.resp, c.err)
		if err != nil || (d >= 0) != c.retry {
			t.Errorf("%+v: %v %v, want retry=%v", c, d, err, c.retry)
		}
	}
	d, _ := p.Retry(0, mk(429, http.Header{"Retry-After": []string{"120"}}), nil)
	if d != time.Second {
		t.Errorf("Retry-After is capped: %v", d)
	}
	d, _ = p.Retry(2, mk(503, nil), nil)
	if d < 360*time.Millisecond || d > 440*time.Millisecond {
		t.Errorf("backoff of attempt 2: %v", d)
	}
}
