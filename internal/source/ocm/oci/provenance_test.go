package oci_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/compose/policyregistry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// pushChartArtifact pushes chart as an OCI Helm chart at repo:1.0.0 and
// returns its manifest and chart layer.
func pushChartArtifact(t *testing.T, reg *registrytest.Registry, repo string, chart []byte) ([]byte, ocispec.Descriptor) {
	t.Helper()
	layer := reg.PushBlob(t, repo, chart)
	layer.MediaType = oci.MediaTypeHelmChart
	config := reg.PushBlob(t, repo, []byte(`{"name":"private","version":"1.0.0"}`))
	config.MediaType = oci.MediaTypeHelmConfig
	manifest, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: config, Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatal(err)
	}
	reg.PushManifest(t, repo, "1.0.0", ocispec.MediaTypeImageManifest, manifest)
	return manifest, layer
}

// TestSharedCacheLyingRegistry: under a policy, project b points at a
// registry its rule allows that answers every HEAD and GET by digest with
// 200 (and the digest asked for), serving other bytes: a manifest naming
// the layer of project a's private chart, that layer by ociBlob, a's
// manifest pinned by digest. b gets a digest mismatch every time, never
// a's content, although the shared cache holds all of it.
func TestSharedCacheLyingRegistry(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	reg := registrytest.Start(t, registrytest.WithBasicAuth("ocm", secret))
	manifest, layer := pushChartArtifact(t, reg, "ocm/chart", d.chartTgz)
	mdigest := digest.FromBytes(manifest)

	var lies atomic.Int32
	liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case strings.Contains(r.URL.Path, "/manifests/") && !strings.HasPrefix(ref, "sha256:"):
			// By tag: a's manifest (its bytes are no secret).
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			w.Header().Set("Docker-Content-Digest", mdigest.String())
			w.Header().Set("Content-Length", fmt.Sprint(len(manifest)))
			if r.Method != http.MethodHead {
				w.Write(manifest)
			}
		default:
			// By digest: "yes, here it is", with other bytes.
			lies.Add(1)
			size := layer.Size
			if strings.Contains(r.URL.Path, "/manifests/") {
				size = int64(len(manifest))
				w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			} else {
				w.Header().Set("Content-Type", "application/octet-stream")
			}
			w.Header().Set("Docker-Content-Digest", ref)
			w.Header().Set("Content-Length", fmt.Sprint(size))
			if r.Method != http.MethodHead {
				w.Write(bytes.Repeat([]byte{'#'}, int(size)))
			}
		}
	}))
	defer liar.Close()
	evil := strings.TrimPrefix(liar.URL, "http://")
	p := twoTenantPolicy(t, reg.Host, evil, "evil")
	env := envCreds(map[string][2]string{"A": {"ocm", secret}})
	cacheDir := t.TempDir()
	client := func(project string) *oci.Client {
		c, err := oci.NewClient(baseOpts(cacheDir, policyregistry.For(p.Rule(project), env)...)...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if ch, err := client("a").OpenChart(ctx, reg.Host+"/ocm/chart:1.0.0"); err != nil {
		t.Fatal(err)
	} else if got := readBlob(t, ch, nil); !bytes.Equal(got, d.chartTgz) {
		t.Fatal("a: wrong chart")
	}

	mismatch := func(what string, got []byte, err error) {
		t.Helper()
		if bytes.Equal(got, d.chartTgz) || bytes.Equal(got, manifest) {
			t.Fatalf("%s: b read a's content through a lying registry", what)
		}
		if !errors.Is(err, errdef.ErrDigestMismatch) {
			t.Fatalf("%s: %v, want a digest mismatch", what, err)
		}
		if leaked(err.Error()) || !strings.Contains(err.Error(), evil) {
			t.Fatalf("%s: %q should name the registry and nothing secret", what, err)
		}
	}
	_, err := client("b").FetchArtifact(ctx, evil+"/evil/chart@"+mdigest.String())
	mismatch("manifest pinned by digest", nil, err)

	ch, err := client("b").OpenChart(ctx, evil+"/evil/chart:1.0.0")
	var got []byte
	if err == nil {
		got, err = io.ReadAll(ch)
		ch.Close()
	}
	mismatch("a layer its manifest names", got, err)

	b, err := client("b").OpenBlob(ctx, evil+"/evil/chart", layer.Digest.String(), layer.Size, "application/octet-stream")
	got = nil
	if err == nil {
		got, err = io.ReadAll(b)
		b.Close()
	}
	mismatch("ociBlob", got, err)
	if lies.Load() < 3 {
		t.Fatalf("%d requests by digest reached the lying registry, want the three GETs", lies.Load())
	}
	// a's content is still cached and served to a.
	reg.Reset()
	if ch, err := client("a").OpenChart(ctx, reg.Host+"/ocm/chart:1.0.0"); err != nil {
		t.Fatal(err)
	} else if got := readBlob(t, ch, nil); !bytes.Equal(got, d.chartTgz) {
		t.Fatal("a: wrong chart")
	}
	if n := reg.Count(registrytest.Request.IsBlob); n != 0 {
		t.Fatalf("a: %d blob requests after b's lies, want 0 (%v)", n, reg.Requests())
	}
}

// TestSharedCacheProofOfPossession: project c has its own credential to a
// registry that really holds the same chart as project a's. Under a policy
// c downloads each blob it finds in the cache once (the proof), then its
// warm generations make no blob request, also after a restart (a new
// process: new client, the cache opened again from its directory).
func TestSharedCacheProofOfPossession(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	regA := registrytest.Start(t, registrytest.WithBasicAuth("ocm", secret))
	regC := registrytest.Start(t, registrytest.WithBasicAuth("c", "c-password"))
	pushChartArtifact(t, regA, "ocm/chart", d.chartTgz)
	_, layer := pushChartArtifact(t, regC, "team-c/chart", d.chartTgz)
	p, err := policy.Parse([]byte(fmt.Sprintf(`apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
credentials:
- {name: a, host: %q, pathPrefix: ocm, env: A}
- {name: c, host: %q, pathPrefix: team-c, env: C}
rules:
- {name: a, projects: [a], repositories: [{host: %q, pathPrefix: ocm}], credentials: [a], plainHTTP: [%q]}
- {name: c, projects: [c], repositories: [{host: %q, pathPrefix: team-c}], credentials: [c], plainHTTP: [%q]}
`, regA.Host, regC.Host, regA.Host, regA.Host, regC.Host, regC.Host)), "test")
	if err != nil {
		t.Fatal(err)
	}
	env := envCreds(map[string][2]string{"A": {"ocm", secret}, "C": {"c", "c-password"}})
	cacheDir := t.TempDir()
	generation := func(project, ref string) {
		t.Helper()
		// baseOpts opens the cache directory anew: each generation is a
		// process of its own.
		c, err := oci.NewClient(baseOpts(cacheDir, policyregistry.For(p.Rule(project), env)...)...)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := c.OpenChart(ctx, ref)
		if err != nil {
			t.Fatalf("%s: %v", project, err)
		}
		if got := readBlob(t, ch, nil); !bytes.Equal(got, d.chartTgz) {
			t.Fatalf("%s: wrong chart", project)
		}
		b, err := c.OpenBlob(ctx, strings.TrimSuffix(ref, ":1.0.0"), layer.Digest.String(), layer.Size, "application/octet-stream")
		if got := readBlob(t, b, err); !bytes.Equal(got, d.chartTgz) {
			t.Fatalf("%s: wrong ociBlob", project)
		}
	}
	generation("a", regA.Host+"/ocm/chart:1.0.0")
	refC := regC.Host + "/team-c/chart:1.0.0"
	generation("c", refC)
	if n := regC.Count(registrytest.Request.IsBlob); n != 1 {
		t.Fatalf("c, cold: %d blob GETs, want 1 (the chart layer, cached by a; %v)", n, regC.Requests())
	}
	for i := range 3 {
		regC.Reset()
		generation("c", refC)
		heads := regC.Count(func(r registrytest.Request) bool {
			return r.Method == http.MethodHead && !strings.Contains(r.Path, "/manifests/")
		})
		if n := regC.Count(registrytest.Request.IsBlob); n != 0 || heads != 0 {
			t.Fatalf("c, warm generation %d: %d blob GETs and %d blob HEADs, want none (%v)", i, n, heads, regC.Requests())
		}
	}
}

// TestSharedCacheHelmChartsProofOfPossession: a classic Helm chart an index
// names by digest. A lying repository (the index names a's chart, the
// chart URL serves other bytes) gets a digest mismatch; an honest one
// serving the same chart downloads it once, then warm generations only
// read the index.
func TestSharedCacheHelmChartsProofOfPossession(t *testing.T) {
	ctx := context.Background()
	d := makeData(t)
	sum := strings.TrimPrefix(blob.Digest(d.chartTgz), "sha256:")
	helmRepo := func(chart []byte) (*httptest.Server, *atomic.Int32) {
		var charts atomic.Int32
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case strings.HasSuffix(r.URL.Path, "/index.yaml"):
				fmt.Fprintf(w, "apiVersion: v1\nentries:\n  c:\n  - version: 1.0.0\n    digest: %s\n    urls: [c-1.0.0.tgz]\n", sum)
			case strings.HasSuffix(r.URL.Path, "/c-1.0.0.tgz"):
				charts.Add(1)
				w.Write(chart)
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(s.Close)
		return s, &charts
	}
	private, _ := helmRepo(d.chartTgz)
	liar, _ := helmRepo(bytes.Repeat([]byte{'#'}, len(d.chartTgz)))
	honest, honestCharts := helmRepo(d.chartTgz)
	var rules strings.Builder
	for _, s := range []*httptest.Server{private, liar, honest} {
		h := strings.TrimPrefix(s.URL, "http://")
		fmt.Fprintf(&rules, "- {name: %q, projects: [%q], repositories: [{host: %q, pathPrefix: charts}], plainHTTP: [%q]}\n", h, h, h, h)
	}
	p, err := policy.Parse([]byte("apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\nrules:\n"+rules.String()), "test")
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	read := func(s *httptest.Server) ([]byte, error) {
		project := strings.TrimPrefix(s.URL, "http://")
		c, err := oci.NewClient(baseOpts(cacheDir, policyregistry.For(p.Rule(project), noEnv)...)...)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := c.OpenHelm(ctx, oci.HelmAccess{Repository: s.URL + "/charts", Chart: "c", Version: "1.0.0"})
		if err != nil {
			return nil, err
		}
		defer ch.Close()
		return io.ReadAll(ch)
	}
	if got, err := read(private); err != nil || !bytes.Equal(got, d.chartTgz) {
		t.Fatalf("a: %d bytes, %v", len(got), err)
	}
	got, err := read(liar)
	if bytes.Equal(got, d.chartTgz) || !errors.Is(err, errdef.ErrDigestMismatch) {
		t.Fatalf("lying repository: %d bytes of a's chart?, %v; want a digest mismatch", len(got), err)
	}
	for i := range 4 {
		if got, err := read(honest); err != nil || !bytes.Equal(got, d.chartTgz) {
			t.Fatalf("honest %d: %d bytes, %v", i, len(got), err)
		}
		if n := honestCharts.Load(); n != 1 {
			t.Fatalf("honest generation %d: %d chart downloads in all, want 1", i, n)
		}
	}
}

// TestRequestCountsUnderAPolicy: what a generation asks the registry under
// a sidecar policy, from the cache's point of view as in TestRequestCounts:
// the first process to read a blob with a credential and repository
// downloads it; later processes (the cache opened again) read the vouch
// and ask nothing but the tag.
func TestRequestCountsUnderAPolicy(t *testing.T) {
	d := makeData(t)
	for _, mode := range []string{"localBlob", "ociArtifact"} {
		t.Run(mode, func(t *testing.T) {
			reg := registrytest.Start(t)
			var pushed []registrytest.Pushed
			if mode == "localBlob" {
				pushed = reg.Push(t, "ocm", component(d, "1.0.0"))
			} else {
				pushed = reg.PushTransferred(t, "ocm", component(d, "1.0.0"))
			}
			p, err := policy.Parse([]byte(fmt.Sprintf("apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\ndefault:\n  repositories: [{host: %q, pathPrefix: ocm}]\n  plainHTTP: [%q]\n", reg.Host, reg.Host)), "test")
			if err != nil {
				t.Fatal(err)
			}
			cacheDir := t.TempDir()
			count := func(name, version string, want int) {
				t.Helper()
				reg.Reset()
				r, err := oci.New("http://"+reg.Host+"/ocm", baseOpts(cacheDir, policyregistry.For(p.Rule("x"), noEnv)...)...)
				if err != nil {
					t.Fatal(err)
				}
				if len(render(t, r, version)) == 0 {
					t.Fatal("no chart")
				}
				var lines []string
				for _, q := range reg.Requests() {
					lines = append(lines, q.String())
				}
				t.Logf("%-11s %-28s %d request(s) %v", mode, name, len(lines), lines)
				if len(lines) != want {
					t.Errorf("%s: %d requests, want %d", name, len(lines), want)
				}
			}
			cold := 4
			if mode == "ociArtifact" {
				cold = 5
			}
			count("cold, by tag", "1.0.0", cold)
			count("warm, by tag, new process", "1.0.0", 1)
			count("warm, pinned by digest", "1.0.0@"+pushed[0].ManifestDigest, 0)
		})
	}
}

// An artifact that is no Helm chart is refused with one bounded line: its
// config and layer media types (the registry's, a tenant's choice) are
// quoted and cut, however many layers it lists.
func TestNotAChartRefusalIsBounded(t *testing.T) {
	reg := registrytest.Start(t)
	repo := "ocm/notachart"
	config := reg.PushBlob(t, repo, []byte(`{}`))
	config.MediaType = "application/vnd.example.config+json"
	layer := reg.PushBlob(t, repo, []byte("x"))
	layer.MediaType = "application/vnd.example." + strings.Repeat("x", 200)
	layers := make([]ocispec.Descriptor, 500)
	for i := range layers {
		layers[i] = layer
	}
	manifest, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: config, Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	reg.PushManifest(t, repo, "1.0.0", ocispec.MediaTypeImageManifest, manifest)
	c, err := oci.NewClient(baseOpts("", registry.WithPlainHTTP(reg.Host))...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.OpenChart(context.Background(), reg.Host+"/"+repo+":1.0.0")
	if !errors.Is(err, errdef.ErrUnsupportedMediaType) {
		t.Fatalf("got %v, want ErrUnsupportedMediaType", err)
	}
	if msg := err.Error(); len(msg) > 2*errdef.MaxMessage || !strings.Contains(msg, "application/vnd.example.") {
		t.Errorf("refusal of %d bytes, want a bounded line naming the media types: %.300s…", len(msg), msg)
	}
}
