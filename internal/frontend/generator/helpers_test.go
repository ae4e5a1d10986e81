package generator_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/generator"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

const testToken = "s3cr3t-token-0123456789"

const (
	podinfo  = "example.org/apps/podinfo"
	redis    = "example.org/apps/redis"
	idp      = "example.org/platform/idp"
	idpBase  = "example.org/platform/base"
	unsigned = "example.org/apps/unsigned"
)

// app is a leaf component: one (unrendered) chart resource, so that it is
// not a platform.
func app(name, version string, labels ...ocmbuild.Label) *ocmbuild.Component {
	return &ocmbuild.Component{Name: name, Version: version, Provider: "example.org", Labels: labels, Resources: []ocmbuild.Resource{
		{Name: "chart", Type: "helmChart", MediaType: ocmbuild.MediaTypeTgz, Data: []byte("chart of " + name + ":" + version)},
	}}
}

func platformOf(name, version string, refs ...ocmbuild.Reference) *ocmbuild.Component {
	return &ocmbuild.Component{Name: name, Version: version, Provider: "example.org", References: refs}
}

// fixture is a registry with several versions of two applications, one
// signed version, and a platform whose references include a nested platform.
type fixture struct {
	reg  *registrytest.Registry
	repo string // http://127.0.0.1:PORT/ocm
	key  *rsa.PrivateKey
}

var podinfoVersions = []string{"1.0.0", "2.3.0", "2.3.1", "2.3.2-rc.1", "2.4.0", "3.0.0"}

func newFixture(t *testing.T, opts ...registrytest.Option) *fixture {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t, opts...)
	var comps []*ocmbuild.Component
	for _, v := range podinfoVersions {
		comps = append(comps, app(podinfo, v, ocmbuild.Label{Name: "team", Value: "web"}, ocmbuild.Label{Name: "tier", Value: map[string]any{"n": 1}}))
	}
	signed := app(redis, "1.0.0")
	if err := signed.Sign("release", key); err != nil {
		t.Fatal(err)
	}
	signed.Blobs = []ocmbuild.Blob{{MediaType: ocmbuild.MediaTypeTgz, Data: []byte("chart of " + redis + ":1.0.0")}}
	comps = append(comps, signed, app(redis, "1.1.0"), // newer, unsigned
		platformOf(idpBase, "1.0.0", ocmbuild.Reference{Name: "db", ComponentName: redis, Version: "1.0.0"}),
		platformOf(idp, "1.0.0",
			ocmbuild.Reference{Name: "frontend", ComponentName: podinfo, Version: "2.3.1"},
			ocmbuild.Reference{Name: "base", ComponentName: idpBase, Version: "1.0.0"}),
		platformOf(idp, "1.1.0",
			ocmbuild.Reference{Name: "frontend", ComponentName: podinfo, Version: "2.4.0"},
			ocmbuild.Reference{Name: "base", ComponentName: idpBase, Version: "1.0.0"}),
	)
	reg.Push(t, "ocm", comps...)
	return &fixture{reg: reg, repo: reg.URL + "/ocm", key: key}
}

// opener opens repositories without a disk cache, as the command does per
// request (plain HTTP for the http:// test registry).
func opener(ctx context.Context, spec string) (ocm.Repository, error) {
	return resolve.Open(spec, oci.WithCache(nil))
}

func (f *fixture) generator(t *testing.T, o generator.Options) *generator.Generator {
	t.Helper()
	if o.Open == nil {
		o.Open = opener
	}
	if o.Keys == nil && f != nil {
		o.Keys = map[string]crypto.PublicKey{"release": &f.key.PublicKey}
	}
	g, err := generator.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// serve starts the HTTP handler over g with the package's own server
// settings (timeouts, limits).
func serve(t *testing.T, g *generator.Generator, tune ...func(*http.Server)) string {
	return serveTB(t, g, tune...)
}

func serveTB(t testing.TB, g *generator.Generator, tune ...func(*http.Server)) string {
	t.Helper()
	tok := []byte(testToken)
	h := &generator.Handler{Generator: g, Token: func() ([]byte, error) { return tok, nil }}
	srv := generator.NewServer("", h)
	for _, f := range tune {
		f(srv)
	}
	ts := httptest.NewUnstartedServer(srv.Handler)
	ts.Config = srv
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL
}

type response struct {
	status int
	body   []byte
}

func (r response) params(t *testing.T) []map[string]any {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var out struct {
		Output struct {
			Parameters []map[string]any `json:"parameters"`
		} `json:"output"`
	}
	d := json.NewDecoder(bytes.NewReader(r.body))
	d.DisallowUnknownFields()
	if err := d.Decode(&out); err != nil {
		t.Fatalf("response %s: %v", r.body, err)
	}
	if out.Output.Parameters == nil {
		t.Fatalf("response %s: parameters is not a list", r.body)
	}
	return out.Output.Parameters
}

func (r response) message(t *testing.T) string {
	t.Helper()
	var e generator.ErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil || e.Message == "" {
		t.Fatalf("status %d: body %q is not an error object: %v", r.status, r.body, err)
	}
	return e.Message
}

func post(t *testing.T, url, token string, body []byte) response { return postTB(t, url, token, body) }

func postTB(t testing.TB, url, token string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+generator.PathGetParams, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, b}
}

func call(t *testing.T, url string, params map[string]any) response {
	t.Helper()
	b, err := json.Marshal(map[string]any{"applicationSetName": "test", "input": map[string]any{"parameters": params}})
	if err != nil {
		t.Fatal(err)
	}
	return post(t, url, testToken, b)
}

// column returns field k of every entry.
func column(ps []map[string]any, k string) []string {
	var out []string
	for _, p := range ps {
		s, _ := p[k].(string)
		out = append(out, s)
	}
	return out
}

func demoCTF(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../../testdata/demo/ctf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p, "artifact-index.json")); err != nil {
		t.Fatal(err)
	}
	return p
}

func joined(s []string) string { return strings.Join(s, " ") }
