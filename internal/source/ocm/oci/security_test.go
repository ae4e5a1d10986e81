package oci_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

func TestBasicAuth(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t, registrytest.WithBasicAuth("ocm", secret))
	reg.PushTransferred(t, "ocm", component(d, "1.0.0"))
	dir := t.TempDir()
	docker := filepath.Join(dir, "config.json")
	os.WriteFile(docker, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, "http://"+reg.Host, base64.StdEncoding.EncodeToString([]byte("ocm:"+secret)))), 0o600)
	pwFile := filepath.Join(dir, "password")
	os.WriteFile(pwFile, []byte(secret+"\n"), 0o600)
	envPrefix := registry.EnvPrefix + registry.EnvName(reg.Host)

	cases := []struct {
		name string
		opts []registry.Option
		err  error
		hint string
	}{
		{name: "right credentials", opts: []registry.Option{registry.WithCredential(reg.Host, registry.Credential{Username: "ocm", Password: secret})}},
		{name: "docker config", opts: []registry.Option{registry.WithDockerConfig(docker)}},
		{name: "environment and password file", opts: []registry.Option{registry.WithEnv(func(k string) (string, bool) {
			switch k {
			case envPrefix + "_USERNAME":
				return "ocm", true
			case envPrefix + "_PASSWORD_FILE":
				return pwFile, true
			}
			return "", false
		})}},
		{name: "wrong password", opts: []registry.Option{registry.WithCredential(reg.Host, registry.Credential{Username: "ocm", Password: "wrong-" + secret})},
			err: errdef.ErrUnauthorized, hint: "were rejected"},
		{name: "wrong user", opts: []registry.Option{registry.WithCredential(reg.Host, registry.Credential{Username: "nobody", Password: secret})},
			err: errdef.ErrUnauthorized, hint: "were rejected"},
		{name: "no credentials", err: errdef.ErrUnauthorized, hint: envPrefix + "_USERNAME"},
		{name: "credentials for another host", opts: []registry.Option{registry.WithCredential("other.example.com", registry.Credential{Username: "ocm", Password: secret})},
			err: errdef.ErrUnauthorized, hint: "no credentials configured"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs := &logSink{}
			// The operator allows plain HTTP to the test registry: only then
			// are credentials sent without TLS (see TestPlainHTTPWithoutAllowance).
			opts := append(baseOpts(t.TempDir(), registry.WithPlainHTTP(reg.Host)), oci.WithRegistryOptions(c.opts...), oci.WithLogger(logs.logger()))
			r, err := oci.New("http://"+reg.Host+"/ocm", opts...)
			if err != nil {
				t.Fatal(err)
			}
			cv, err := r.LookupComponentVersion(ctx, compName, "1.0.0")
			if c.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				res, _ := cv.Descriptor().Resource(ocm.Identity{"name": "chart"})
				b, _, err := r.OpenAccess(ctx, cv, res.Access)
				readBlob(t, b, err)
				return
			}
			if !errors.Is(err, c.err) {
				t.Fatalf("got %v, want %v", err, c.err)
			}
			msg := err.Error()
			for _, want := range []string{"registry " + reg.Host, "repository ocm/component-descriptors/" + compName, "reference 1.0.0", "HTTP 401", c.hint} {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q: %s", want, msg)
				}
			}
			if strings.Contains(msg, secret) || strings.Contains(logs.String(), secret) || strings.Contains(msg, base64.StdEncoding.EncodeToString([]byte("ocm:"+secret))) {
				t.Fatalf("secret leaked: %s / %s", msg, logs)
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	// A registry that challenges for a bearer token; the token comes from
	// the environment and is sent as is (registry token).
	d := makeData(t)
	var reg *registrytest.Registry
	var unauthorized atomic.Int32
	reg = registrytest.Start(t, registrytest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+secret && r.Method == http.MethodGet {
				unauthorized.Add(1)
				w.Header().Set("WWW-Authenticate", `Bearer realm="http://`+reg.Host+`/token",service="registrytest"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	// Push with HEAD/PUT/POST (not challenged); reads are GETs.
	reg.Push(t, "ocm", component(d, "1.0.0"))
	env := func(k string) (string, bool) {
		if k == registry.EnvPrefix+registry.EnvName(reg.Host)+"_TOKEN" {
			return secret, true
		}
		return "", false
	}
	r, err := oci.New("http://"+reg.Host+"/ocm", append(baseOpts(t.TempDir(), registry.WithPlainHTTP(reg.Host)), oci.WithRegistryOptions(registry.WithEnv(env)))...)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(t, r, "1.0.0"); len(got) == 0 {
		t.Fatal("empty chart")
	}
	if unauthorized.Load() != 1 {
		t.Errorf("%d challenges; the token should be cached after the first", unauthorized.Load())
	}
}

func TestPlainHTTPRefused(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t)
	reg.Push(t, "ocm", component(d, "1.0.0"))

	// No scheme: HTTPS is tried, and the plain-HTTP registry is refused.
	r, err := oci.New(reg.Host+"/ocm", baseOpts(t.TempDir())...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.LookupComponentVersion(ctx, compName, "1.0.0")
	if !errors.Is(err, errdef.ErrInsecure) || !strings.Contains(err.Error(), "registry "+reg.Host) {
		t.Fatalf("https to a plain-HTTP registry: %v", err)
	}
	// Allowing the host explicitly works.
	r, err = oci.New(reg.Host+"/ocm", append(baseOpts(t.TempDir()), oci.WithPlainHTTP(reg.Host))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.LookupComponentVersion(ctx, compName, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	// So does an http:// spec, also as an OCM repository spec.
	r, err = oci.New(oci.Spec{Type: "OCIRegistry/v1", BaseURL: "http://" + reg.Host, SubPath: "ocm"}, baseOpts(t.TempDir())...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.LookupComponentVersion(ctx, compName, "1.0.0"); err != nil {
		t.Fatal(err)
	}

	// A descriptor cannot make the plugin speak plain HTTP to another host.
	c, err := oci.NewClient(baseOpts("")...)
	if err != nil {
		t.Fatal(err)
	}
	reg.Reset()
	_, err = c.OpenChart(ctx, "http://"+reg.Host+"/ocm/x:1")
	if !errors.Is(err, errdef.ErrInsecure) {
		t.Fatalf("http:// reference to a host not allowed: %v", err)
	}
	if n := reg.Count(nil); n != 0 {
		t.Fatalf("%d requests sent in plain HTTP to a host not allowed", n)
	}
}

func TestTLSAndCA(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t, registrytest.WithTLS())
	reg.PushTransferred(t, "ocm", component(d, "1.0.0"))

	r, err := oci.New("https://"+reg.Host+"/ocm", baseOpts(t.TempDir())...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.LookupComponentVersion(ctx, compName, "1.0.0")
	if !errors.Is(err, errdef.ErrInsecure) || !strings.Contains(err.Error(), "CA") {
		t.Fatalf("unknown CA: %v", err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, reg.CAPEM(), 0o644)
	r, err = oci.New(reg.Host+"/ocm", append(baseOpts(t.TempDir()), oci.WithRegistryOptions(registry.WithCAFile(caFile)))...)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(t, r, "1.0.0"); len(got) == 0 {
		t.Fatal("empty chart")
	}
	// Over TLS, an http:// reference to the same host is still refused.
	if _, err := r.Client().OpenChart(ctx, "http://"+reg.Host+"/ocm/"+compName+"/mychart:0.2.0"); !errors.Is(err, errdef.ErrInsecure) {
		t.Fatalf("downgrade: %v", err)
	}
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	var fail atomic.Int32
	reg := registrytest.Start(t, registrytest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && fail.Load() > 0 {
				fail.Add(-1)
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	reg.Push(t, "ocm", component(d, "1.0.0"))
	reg.Reset()
	fail.Store(2)
	r := open(t, reg, t.TempDir())
	render(t, r, "1.0.0")
	n503 := reg.Count(func(q registrytest.Request) bool { return q.Status == 503 })
	t.Logf("two 503s then success: %d requests in all, %d were 503", reg.Count(nil), n503)
	if n503 != 2 || reg.Count(nil) != 6 {
		t.Fatalf("requests: %v", reg.Requests())
	}
	// A registry that keeps failing: bounded attempts, a clear error.
	reg.Reset()
	fail.Store(1000)
	r = open(t, reg, t.TempDir())
	_, err := r.LookupComponentVersion(ctx, compName, "1.0.0")
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "registry "+reg.Host) {
		t.Fatalf("persistent 503: %v", err)
	}
	if n := reg.Count(nil); n != registry.DefaultRetries+1 {
		t.Fatalf("%d attempts, want %d", n, registry.DefaultRetries+1)
	}
}

// A registry that never answers a GET (until the test ends) is given up at
// the client's timeout: any answer at all is the timeout's doing, and the
// error says so. Not timed against a bound that a loaded machine can pass
// (it was 3 s against a registry that answered after 5 s); the minute is a
// safety net.
func TestTimeout(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	release := make(chan struct{})
	reg := registrytest.Start(t, registrytest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
			next.ServeHTTP(w, r)
		})
	}))
	t.Cleanup(func() { close(release) }) // before the registry's own cleanup
	reg.Push(t, "ocm", component(d, "1.0.0"))
	r := open(t, reg, t.TempDir(), oci.WithTimeout(300*time.Millisecond))
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := r.LookupComponentVersion(ctx, compName, "1.0.0")
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("no answer a minute after the 300 ms timeout")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "registry "+reg.Host) {
		t.Fatalf("timeout: %v", err)
	}
	t.Logf("gave up after %v", time.Since(start).Round(time.Millisecond))
}

func TestUnreachableRegistry(t *testing.T) {
	r, err := oci.New("http://127.0.0.1:1/ocm", baseOpts("")...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.LookupComponentVersion(context.Background(), compName, "1.0.0")
	if err == nil || !strings.Contains(err.Error(), "registry 127.0.0.1:1") || !strings.Contains(err.Error(), "no OCI registry answered") {
		t.Fatalf("unreachable: %v", err)
	}
}
