package oci_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/compose/policyregistry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// authSeen records every Authorization header a server receives.
// recordingRegistry is a registry with basic auth (user ocm, password
// secret) holding d's component at 1.0.0, that records the Authorization of
// every GET.
func recordingRegistry(t *testing.T, d testData) (*registrytest.Registry, *authSeen) {
	t.Helper()
	seen := &authSeen{}
	reg := registrytest.Start(t, registrytest.WithBasicAuth("ocm", secret), registrytest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				seen.record(r)
			}
			next.ServeHTTP(w, r)
		})
	}))
	reg.Push(t, "ocm", component(d, "1.0.0"))
	return reg, seen
}

type authSeen struct {
	mu   sync.Mutex
	seen []string
	reqs int
}

func (a *authSeen) record(r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs++
	if h := r.Header.Get("Authorization"); h != "" {
		a.seen = append(a.seen, h)
	}
}

func (a *authSeen) headers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

func (a *authSeen) requests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reqs
}

func leaked(s string) bool {
	b64 := base64.StdEncoding.EncodeToString([]byte("ocm:" + secret))
	// Prefixes too: a cut credential still gives a part of it away.
	return strings.Contains(s, secret[:8]) || strings.Contains(s, b64[:12]) ||
		regexp.MustCompile(`(Basic|Bearer) [^\[]`).MatchString(s)
}

// TestRegistryEchoingAuthorization: a registry that puts the request's
// Authorization header (and the password itself) into its error body,
// message and detail. The error keeps status and OCI code, never the echo.
func TestRegistryEchoingAuthorization(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		body func(auth string) string
	}{
		{"message holds the header", func(a string) string {
			return fmt.Sprintf(`{"errors":[{"code":"DENIED","message":"denied: you sent Authorization: %s"}]}`, a)
		}},
		{"message holds the base64 alone", func(a string) string {
			return fmt.Sprintf(`{"errors":[{"code":"DENIED","message":"bad credential %s"}]}`, strings.TrimPrefix(a, "Basic "))
		}},
		{"message holds the password", func(string) string {
			return `{"errors":[{"code":"DENIED","message":"password ` + secret + ` is wrong"}]}`
		}},
		{"detail holds the header", func(a string) string {
			return fmt.Sprintf(`{"errors":[{"code":"DENIED","message":"denied","detail":{"Authorization":%q}}]}`, a)
		}},
		{"many long errors", func(a string) string {
			e := fmt.Sprintf(`{"code":"DENIED","message":"%s %s"}`, strings.Repeat("x", 300), a)
			return `{"errors":[` + strings.Repeat(e+",", 9) + e + `]}`
		}},
		{"not JSON", func(a string) string { return "<html>" + a + "</html>" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				a := r.Header.Get("Authorization")
				if a == "" {
					w.Header().Set("WWW-Authenticate", `Basic realm="echo"`)
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Echo", a)
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, c.body(a))
			}))
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			logs := &logSink{}
			r, err := oci.New("http://"+host+"/ocm", append(baseOpts("", registry.WithPlainHTTP(host),
				registry.WithCredential(host, registry.Credential{Username: "ocm", Password: secret})), oci.WithLogger(logs.logger()))...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.LookupComponentVersion(ctx, compName, "1.0.0")
			if !errors.Is(err, errdef.ErrUnauthorized) {
				t.Fatalf("got %v", err)
			}
			msg := err.Error()
			if leaked(msg) || leaked(logs.String()) {
				t.Fatalf("credential in the error: %s", msg)
			}
			if !strings.Contains(msg, "HTTP 403") || (c.name != "not JSON" && !strings.Contains(msg, "denied")) {
				t.Errorf("status or OCI code missing: %s", msg)
			}
			if len(msg) > 900 {
				t.Errorf("error is %d bytes", len(msg))
			}
		})
	}
}

// TestRedirectToAnotherOriginDropsAuthorization: a registry (basic auth)
// redirects blob downloads to another port of its host, to another host
// name of the loopback, and a classic Helm repository redirects its index
// and chart the same way. The second server must never see credentials.
func TestRedirectToAnotherOriginDropsAuthorization(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	target := &authSeen{}
	// The target serves what it is asked for: a blob, proxied from the
	// registry (with the test's own credentials), or fixed content.
	blobs := map[string][]byte{}
	var blobsMu sync.Mutex
	var regHost string
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target.record(r)
		if p := r.URL.Query().Get("p"); p != "" {
			req, _ := http.NewRequest(http.MethodGet, "http://"+regHost+p, nil)
			req.SetBasicAuth("ocm", secret)
			req.Header.Set("X-Direct", "1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, resp.Body)
			return
		}
		blobsMu.Lock()
		b, ok := blobs[r.URL.Query().Get("d")]
		blobsMu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Write(b)
	}))
	defer second.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(second.URL, "http://"))

	for _, to := range []struct{ name, base string }{
		{"other port", "http://127.0.0.1:" + port},
		{"other host name", "http://localhost:" + port},
	} {
		t.Run("oci "+to.name, func(t *testing.T) {
			reg := registrytest.Start(t, registrytest.WithBasicAuth("ocm", secret), registrytest.WithMiddleware(func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if strings.Contains(r.URL.Path, "/blobs/sha256:") && r.Method == http.MethodGet && r.Header.Get("Authorization") != "" && r.Header.Get("X-Direct") == "" {
						http.Redirect(w, r, to.base+"/blob?p="+url.QueryEscape(r.URL.Path), http.StatusTemporaryRedirect)
						return
					}
					next.ServeHTTP(w, r)
				})
			}))
			reg.Push(t, "ocm", component(d, "1.0.0"))
			regHost = reg.Host
			host := reg.Host
			target.mu.Lock()
			target.seen, target.reqs = nil, 0
			target.mu.Unlock()
			r, err := oci.New("http://"+host+"/ocm", baseOpts("", registry.WithPlainHTTP(host, "127.0.0.1:"+port, "localhost:"+port),
				registry.WithCredential(host, registry.Credential{Username: "ocm", Password: secret}),
				registry.WithCredential("127.0.0.1:"+port, registry.Credential{Username: "other", Password: "other-secret"}),
			)...)
			if err != nil {
				t.Fatal(err)
			}
			cv, err := r.LookupComponentVersion(ctx, compName, "1.0.0")
			if err != nil {
				t.Fatal(err)
			}
			res, _ := cv.Descriptor().Resource(ocm.Identity{"name": "chart"})
			b, _, err := r.OpenAccess(ctx, cv, res.Access)
			if err := readBlobMaybe(b, err); err != nil {
				t.Fatal(err)
			}
			if target.requests() == 0 {
				t.Fatal("the redirect was not followed: the test proves nothing")
			}
			if h := target.headers(); len(h) != 0 {
				t.Fatalf("the redirect target received Authorization: %q", h)
			}
		})
	}

	for _, to := range []struct{ name, base string }{
		{"other port", "http://127.0.0.1:" + port},
		{"https to http", "http://127.0.0.1:" + port},
	} {
		t.Run("helm "+to.name, func(t *testing.T) {
			blobsMu.Lock()
			blobs["index"] = []byte(fmt.Sprintf("apiVersion: v1\nentries:\n  mychart:\n  - version: 0.2.0\n    urls: [mychart-0.2.0.tgz]\n    digest: %s\n", strings.TrimPrefix(blob.Digest(d.chartTgz), "sha256:")))
			blobs["chart"] = d.chartTgz
			blobsMu.Unlock()
			target.mu.Lock()
			target.seen, target.reqs = nil, 0
			target.mu.Unlock()
			repo := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") == "" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				what := "chart"
				if strings.HasSuffix(r.URL.Path, "index.yaml") {
					what = "index"
				}
				http.Redirect(w, r, to.base+"/x?d="+what, http.StatusFound)
			}))
			repo.Config.ErrorLog = log.New(io.Discard, "", 0)
			scheme := "http"
			if to.name == "https to http" {
				repo.StartTLS()
				scheme = "https"
			} else {
				repo.Start()
			}
			defer repo.Close()
			host := strings.TrimPrefix(strings.TrimPrefix(repo.URL, "http://"), "https://")
			opts := []registry.Option{registry.WithPlainHTTP(host, "127.0.0.1:"+port),
				registry.WithCredential(host, registry.Credential{Username: "ocm", Password: secret})}
			if repo.TLS != nil {
				opts = append(opts, registry.WithTransport(&http.Transport{TLSClientConfig: &tls.Config{RootCAs: repo.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}))
			}
			c, err := oci.NewClient(baseOpts("", opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := c.OpenHelm(ctx, oci.HelmAccess{Repository: scheme + "://" + host + "/charts", Chart: "mychart", Version: "0.2.0"})
			if err == nil {
				io.Copy(io.Discard, ch)
				ch.Close()
			}
			if target.requests() == 0 {
				t.Fatalf("the redirect was not followed (%v): the test proves nothing", err)
			}
			if h := target.headers(); len(h) != 0 {
				t.Fatalf("the redirect target received Authorization: %q", h)
			}
		})
	}
}

func readBlobMaybe(b ocm.Blob, err error) error {
	if err != nil {
		return err
	}
	defer b.Close()
	_, err = io.Copy(io.Discard, b)
	return err
}

// TestPlainHTTPWithoutAllowance: an http:// repository URL the operator did
// not allow (ARGOCD_OCM_PLAIN_HTTP, WithPlainHTTP) is reached without
// credentials, whatever source holds them; with a strict client (the
// policy) it is not reached at all.
func TestPlainHTTPWithoutAllowance(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg, seen := recordingRegistry(t, d)
	envHost := func(k string) (string, bool) {
		switch k {
		case registry.EnvPrefix + registry.EnvName(reg.Host) + "_USERNAME":
			return "ocm", true
		case registry.EnvPrefix + registry.EnvName(reg.Host) + "_PASSWORD":
			return secret, true
		}
		return "", false
	}
	for _, c := range []struct {
		name string
		opts []registry.Option
	}{
		{"client options", []registry.Option{registry.WithCredential(reg.Host, registry.Credential{Username: "ocm", Password: secret})}},
		{"environment", []registry.Option{registry.WithEnv(envHost)}},
		{"scoped credential", []registry.Option{registry.WithCredentialScopes(registry.CredentialScope{Name: "s", Host: reg.Host,
			Get: func(context.Context) (registry.Credential, error) {
				return registry.Credential{Username: "ocm", Password: secret}, nil
			}})}},
		{"plain HTTP allowed for another host", []registry.Option{registry.WithPlainHTTP("other.example:5000"), registry.WithCredential(reg.Host, registry.Credential{Username: "ocm", Password: secret})}},
	} {
		t.Run(c.name, func(t *testing.T) {
			seen.mu.Lock()
			seen.seen, seen.reqs = nil, 0
			seen.mu.Unlock()
			r, err := oci.New("http://"+reg.Host+"/ocm", baseOpts("", c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.LookupComponentVersion(ctx, compName, "1.0.0")
			if !errors.Is(err, errdef.ErrUnauthorized) || !strings.Contains(err.Error(), "no credentials are sent over plain HTTP") {
				t.Fatalf("got %v", err)
			}
			if seen.requests() == 0 {
				t.Fatal("no request reached the registry: the test proves nothing")
			}
			if h := seen.headers(); len(h) != 0 {
				t.Fatalf("credentials went over plain HTTP: %q", h)
			}
		})
	}
	t.Run("strict", func(t *testing.T) {
		seen.mu.Lock()
		seen.reqs = 0
		seen.mu.Unlock()
		r, err := oci.New("http://"+reg.Host+"/ocm", baseOpts("", registry.WithStrictPlainHTTP(),
			registry.WithCredential(reg.Host, registry.Credential{Username: "ocm", Password: secret}))...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.LookupComponentVersion(ctx, compName, "1.0.0")
		if !errors.Is(err, errdef.ErrInsecure) || seen.requests() != 0 {
			t.Fatalf("got %v after %d requests", err, seen.requests())
		}
	})
}

// TestPolicyRefusesBeforeAnyConnection: a repository the policy forbids
// gets the same error for an open port with a banner, a closed port, a TLS
// port and a real registry, and no connection is made to any of them. The
// same holds for what a descriptor names (ociArtifact, helm).
func TestPolicyRefusesBeforeAnyConnection(t *testing.T) {
	ctx := context.Background()
	p, err := policy.Parse([]byte("apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\ndefault:\n  repositories: [{host: ghcr.io, pathPrefix: acme}]\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	rule := p.Rule("team-x")
	banner, bannerN := registrytest.CountingListener(t, "banner")
	tlsAddr, tlsN := registrytest.CountingListener(t, "tls")
	closedL, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := closedL.Addr().String()
	closedL.Close()
	reg := registrytest.Start(t)
	var regN atomic.Int32
	reg.Reset()

	portRe := regexp.MustCompile(`127\.0\.0\.1:\d+`)
	var first string
	for _, target := range []string{banner, tlsAddr, closed, reg.Host} {
		for _, scheme := range []string{"http://", "https://", ""} {
			r, err := oci.New(scheme+target+"/x", baseOpts("", policyregistry.For(rule, noEnv)...)...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.LookupComponentVersion(ctx, compName, "1.0.0")
			if !errors.Is(err, errdef.ErrForbidden) {
				t.Fatalf("%s%s: %v", scheme, target, err)
			}
			msg := portRe.ReplaceAllString(err.Error(), "127.0.0.1:PORT")
			if first == "" {
				first = msg
			} else if msg != first {
				t.Errorf("errors differ:\n%s\n%s", first, msg)
			}
		}
	}
	c, err := oci.NewClient(baseOpts("", policyregistry.For(rule, noEnv)...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, acc := range []ocm.Access{
		{Type: "ociArtifact", Fields: map[string]any{"type": "ociArtifact", "imageReference": "http://" + banner + "/x/chart:1"}},
		{Type: "ociArtifact", Fields: map[string]any{"type": "ociArtifact", "imageReference": reg.Host + "/x/chart:1"}},
		{Type: "ociBlob", Fields: map[string]any{"type": "ociBlob", "ref": tlsAddr + "/x", "digest": blob.Digest([]byte("x"))}},
		{Type: "helm/v1", Fields: map[string]any{"type": "helm/v1", "helmRepository": "http://" + banner + "/charts", "helmChart": "c:1.0.0"}},
		{Type: "helm/v1", Fields: map[string]any{"type": "helm/v1", "helmRepository": "oci://" + tlsAddr + "/charts", "helmChart": "c:1.0.0"}},
		// allowed host, other path; and a lookalike host
		{Type: "ociArtifact", Fields: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/evil/chart:1"}},
		{Type: "ociArtifact", Fields: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io.evil.example/acme/chart:1"}},
	} {
		_, _, err := c.OpenAccess(ctx, nil, acc)
		if !errors.Is(err, errdef.ErrForbidden) {
			t.Errorf("%v: %v", acc.Fields, err)
		}
	}
	if n := bannerN.Load() + tlsN.Load() + regN.Load() + int32(len(reg.Requests())); n != 0 {
		t.Fatalf("%d connections or requests were made", n)
	}
}

// TestSharedCachesDoNotCrossCredentials: the disk cache is content-addressed
// and shared by every generation, and the render server shares tag
// resolutions. Under a policy, a project whose rule allows a repository but
// names no credential for it must not read what another project fetched
// with its credential, by digest or by tag.
func TestSharedCachesDoNotCrossCredentials(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t, registrytest.WithBasicAuth("ocm", secret))
	reg.Push(t, "ocm", component(d, "1.0.0"))
	p := twoTenantPolicy(t, reg.Host, reg.Host, "ocm")
	envA := envCreds(map[string][2]string{"A": {"ocm", secret}})
	cacheDir := t.TempDir()
	tags := oci.NewTagResolutions(time.Minute)
	client := func(project string) *oci.Client {
		opts := append(baseOpts(cacheDir, policyregistry.For(p.Rule(project), envA)...), oci.WithRecentTags(tags))
		c, err := oci.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	descriptors := reg.Host + "/ocm/component-descriptors/" + compName
	art, err := client("a").FetchArtifact(ctx, descriptors+":1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	pinned := descriptors + "@" + art.Reference.Digest
	// Project a itself: the cache answers (a's vouch, from the tag's read).
	if _, err := client("a").FetchArtifact(ctx, pinned); err != nil {
		t.Fatalf("a, pinned: %v", err)
	}
	for _, ref := range []string{pinned, descriptors + ":1.0.0"} {
		_, err := client("b").FetchArtifact(ctx, ref)
		if !errors.Is(err, errdef.ErrUnauthorized) {
			t.Errorf("b read %s with a's credential's results: %v", ref, err)
		}
	}
}

// TestPolicyChecksChartURLsOfAnIndex: an allowed classic Helm repository
// whose index.yaml points the chart at another host (an internal service):
// the chart URL is refused before a connection, like any name the plugin
// reads from content.
func TestPolicyChecksChartURLsOfAnIndex(t *testing.T) {
	ctx := context.Background()
	internal, internalN := registrytest.CountingListener(t, "banner")
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "apiVersion: v1\nentries:\n  c:\n  - version: 1.0.0\n    urls: [http://%s/c-1.0.0.tgz]\n", internal)
	}))
	defer index.Close()
	host := strings.TrimPrefix(index.URL, "http://")
	p, err := policy.Parse([]byte(fmt.Sprintf("apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\ndefault:\n  repositories: [{host: %q, pathPrefix: charts}]\n  plainHTTP: [%q, %q]\n", host, host, internal)), "test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := oci.NewClient(baseOpts("", policyregistry.For(p.Rule("x"), noEnv)...)...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.OpenHelm(ctx, oci.HelmAccess{Repository: "http://" + host + "/charts", Chart: "c", Version: "1.0.0"})
	if !errors.Is(err, errdef.ErrForbidden) || internalN.Load() != 0 {
		t.Fatalf("got %v after %d connections to the chart URL's host", err, internalN.Load())
	}
	// The index itself under another path: refused too.
	_, err = c.OpenHelm(ctx, oci.HelmAccess{Repository: "http://" + host + "/other", Chart: "c", Version: "1.0.0"})
	if !errors.Is(err, errdef.ErrForbidden) {
		t.Fatalf("other path: %v", err)
	}
}

// TestCredentialFoldingAgainstARegistry: credentials configured for
// registry.example.test (by the folded variable names) reach a registry
// under that name, and never under the names that fold alike. Every name
// is dialled to the same real registry, which records what it is sent.
func TestCredentialFoldingAgainstARegistry(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg, seen := recordingRegistry(t, d)
	_, port, _ := net.SplitHostPort(reg.Host)
	dial := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, reg.Host)
	}}
	folded := registry.EnvPrefix + registry.EnvName("registry.example.test:"+port)
	env := func(k string) (string, bool) {
		switch k {
		case folded + "_USERNAME":
			return "ocm", true
		case folded + "_PASSWORD":
			return secret, true
		}
		return "", false
	}
	for _, c := range []struct {
		host string
		gets bool
	}{
		{"registry.example.test", true},
		{"REGISTRY.EXAMPLE.TEST", true},
		{"registry-example.test", false},
		{"registry_example.test", false},
		{"REGISTRY-EXAMPLE.TEST", false},
	} {
		t.Run(c.host, func(t *testing.T) {
			seen.mu.Lock()
			seen.seen, seen.reqs = nil, 0
			seen.mu.Unlock()
			host := c.host + ":" + port
			r, err := oci.New("http://"+host+"/ocm", baseOpts("", registry.WithEnv(env), registry.WithTransport(dial), registry.WithPlainHTTP(host))...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.LookupComponentVersion(ctx, compName, "1.0.0")
			if seen.requests() == 0 {
				t.Fatalf("no request reached the registry (%v)", err)
			}
			if c.gets != (err == nil) || c.gets != (len(seen.headers()) > 0) {
				t.Fatalf("%s: err %v, Authorization sent %d times; want credentials=%v", host, err, len(seen.headers()), c.gets)
			}
		})
	}
}

// TestSharedCacheLayersNeedTheirRepository: the blobs a manifest names are
// read through the shared disk cache by digest. Under a policy, project b
// points an ociArtifact at a registry its rule allows that serves a
// manifest naming the layer of project a's private chart (its digest is
// no secret) without holding it: b gets an error, never a's chart, while a
// still reads its chart from the cache (a's vouch; see
// TestSharedCacheLyingRegistry for a registry that claims to hold it).
func TestSharedCacheLayersNeedTheirRepository(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t, registrytest.WithBasicAuth("ocm", secret))
	layer := reg.PushBlob(t, "ocm/chart", d.chartTgz)
	layer.MediaType = oci.MediaTypeHelmChart
	config := reg.PushBlob(t, "ocm/chart", []byte(`{"name":"private","version":"1.0.0"}`))
	config.MediaType = oci.MediaTypeHelmConfig
	manifest, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: config, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	reg.PushManifest(t, "ocm/chart", "1.0.0", ocispec.MediaTypeImageManifest, manifest)

	// b's registry: any manifest it is asked for names a's layer; it holds no blob.
	var blobRequests atomic.Int32
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case strings.Contains(r.URL.Path, "/manifests/"):
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			w.Header().Set("Docker-Content-Digest", digest.FromBytes(manifest).String())
			w.Header().Set("Content-Length", fmt.Sprint(len(manifest)))
			if r.Method != http.MethodHead {
				w.Write(manifest)
			}
		default:
			blobRequests.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown to registry"}]}`)
		}
	}))
	defer hostile.Close()
	evil := strings.TrimPrefix(hostile.URL, "http://")
	p := twoTenantPolicy(t, reg.Host, evil, "evil")
	envA := envCreds(map[string][2]string{"A": {"ocm", secret}})
	cacheDir := t.TempDir()
	client := func(project string) *oci.Client {
		c, err := oci.NewClient(baseOpts(cacheDir, policyregistry.For(p.Rule(project), envA)...)...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	read := func(project, ref string) ([]byte, error) {
		ch, err := client(project).OpenChart(ctx, ref)
		if err != nil {
			return nil, err
		}
		defer ch.Close()
		return io.ReadAll(ch)
	}
	for range 2 { // fetched, then from the cache
		if got, err := read("a", reg.Host+"/ocm/chart:1.0.0"); err != nil || !bytes.Equal(got, d.chartTgz) {
			t.Fatalf("a: %d bytes, %v", len(got), err)
		}
	}
	got, err := read("b", evil+"/evil/chart:1.0.0")
	if err == nil || bytes.Equal(got, d.chartTgz) {
		t.Fatalf("b read a's chart through a manifest of its own registry (%d bytes, %v)", len(got), err)
	}
	if !errors.Is(err, errdef.ErrNotFound) || blobRequests.Load() == 0 {
		t.Fatalf("b: %v after %d blob requests, want not found from its registry", err, blobRequests.Load())
	}
}

// TestSharedCacheHelmChartsNeedTheirRepository: a classic Helm repository's
// index names a chart by digest, and without a policy the shared cache
// answers for that digest. Under a policy, project b's index (a repository
// its rule allows) naming project a's private chart by its digest gets b
// an error, never a's chart.
func TestSharedCacheHelmChartsNeedTheirRepository(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	sum := strings.TrimPrefix(blob.Digest(d.chartTgz), "sha256:")
	helmRepo := func(serves bool) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case strings.HasSuffix(r.URL.Path, "/index.yaml"):
				fmt.Fprintf(w, "apiVersion: v1\nentries:\n  c:\n  - version: 1.0.0\n    digest: %s\n    urls: [c-1.0.0.tgz]\n", sum)
			case serves && strings.HasSuffix(r.URL.Path, "/c-1.0.0.tgz"):
				w.Write(d.chartTgz)
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(s.Close)
		return s
	}
	private, evil := helmRepo(true), helmRepo(false)
	hostA, hostB := strings.TrimPrefix(private.URL, "http://"), strings.TrimPrefix(evil.URL, "http://")
	p, err := policy.Parse([]byte(fmt.Sprintf(`apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
rules:
- {name: a, projects: [a], repositories: [{host: %q, pathPrefix: charts}], plainHTTP: [%q]}
- {name: b, projects: [b], repositories: [{host: %q, pathPrefix: charts}], plainHTTP: [%q]}
`, hostA, hostA, hostB, hostB)), "test")
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	read := func(project, repo string) ([]byte, error) {
		c, err := oci.NewClient(baseOpts(cacheDir, policyregistry.For(p.Rule(project), noEnv)...)...)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := c.OpenHelm(ctx, oci.HelmAccess{Repository: repo + "/charts", Chart: "c", Version: "1.0.0"})
		if err != nil {
			return nil, err
		}
		defer ch.Close()
		return io.ReadAll(ch)
	}
	for range 2 {
		if got, err := read("a", private.URL); err != nil || !bytes.Equal(got, d.chartTgz) {
			t.Fatalf("a: %d bytes, %v", len(got), err)
		}
	}
	got, err := read("b", evil.URL)
	if err == nil || bytes.Equal(got, d.chartTgz) {
		t.Fatalf("b read a's chart through its own index (%d bytes, %v)", len(got), err)
	}
	if !errors.Is(err, errdef.ErrNotFound) {
		t.Fatalf("b: %v, want not found from its repository", err)
	}
}
