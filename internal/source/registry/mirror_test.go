package registry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/compose/policyregistry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

const mirrorComp = "example.com/fleet/app"

type fleetData struct {
	chart []byte // the chart's artifact set (a local blob)
	tree  []byte // a directory tree (a local blob)
}

func fleetComponent(t testing.TB) (*ocmbuild.Component, fleetData) {
	t.Helper()
	tgz, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: fleet\nversion: 0.1.0\n"),
		"values.yaml":       []byte("replicas: 1\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {pad: " + strings.Repeat("x", 64<<10) + "}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	set, err := ocmbuild.ChartArtifactSet(tgz, "0.1.0", false)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := ocmbuild.TarFiles(map[string][]byte{"deploy.yaml": []byte("kind: Deployment\n")}, false)
	if err != nil {
		t.Fatal(err)
	}
	return &ocmbuild.Component{Name: mirrorComp, Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "chart", Type: "helmChart", Data: set, MediaType: ocmbuild.MediaTypeArtifactSet},
		{Name: "manifests", Type: "directoryTree", Data: tree, MediaType: ocmbuild.MediaTypeTar},
	}}, fleetData{chart: set, tree: tree}
}

func noEnv(string) (string, bool) { return "", false }

// sidecar is what one repo-server replica's sidecar holds: its own registry
// client and its own cache directory.
func sidecar(t testing.TB, upstream *registrytest.Registry, cacheDir string, logger *slog.Logger, ro ...registry.Option) *oci.Repository {
	t.Helper()
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := cache.Disabled()
	if cacheDir != "" {
		c = cache.Open(cacheDir)
	}
	ro = append([]registry.Option{registry.WithoutDockerConfig(), registry.WithEnv(noEnv), registry.WithLogger(logger),
		registry.WithBackoff(5*time.Millisecond, 20*time.Millisecond)}, ro...)
	r, err := oci.New("http://"+upstream.Host+"/ocm", oci.WithCache(c), oci.WithLogger(logger), oci.WithRegistryOptions(ro...))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// generate reads what a generation reads: the version and every resource
// that is a local blob.
func generate(ctx context.Context, r *oci.Repository, version string) (map[string][]byte, error) {
	cv, err := r.LookupComponentVersion(ctx, mirrorComp, version)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, res := range cv.Descriptor().Resources {
		b, _, err := r.OpenAccess(ctx, cv, res.Access)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(b)
		b.Close()
		if err != nil {
			return nil, err
		}
		out[res.Name] = data
	}
	return out, nil
}

func mustGenerate(t testing.TB, r *oci.Repository, d fleetData) {
	t.Helper()
	got, err := generate(context.Background(), r, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got["chart"], d.chart) || !bytes.Equal(got["manifests"], d.tree) {
		t.Fatal("content differs from what was pushed")
	}
}

// blobGETs counts the blob GETs a registry served, per path.
func blobGETs(r *registrytest.Registry) (total int, per map[string]int) {
	per = map[string]int{}
	for _, q := range r.Requests() {
		if q.IsBlob() && q.Status == http.StatusOK {
			total++
			per[q.Path]++
		}
	}
	return total, per
}

func plainMirror(m *registrytest.Registry) registry.Mirror {
	return registry.Mirror{Host: m.Host, PlainHTTP: true}
}

// Four sidecars (own client, own cache) read one component version: through
// a pull-through mirror the upstream serves every blob once; without it, once
// per sidecar.
func TestMirrorFleetReadsEachBlobFromUpstreamOnce(t *testing.T) {
	comp, d := fleetComponent(t)
	const sidecars = 4
	for _, mode := range []string{"direct", "mirror"} {
		t.Run(mode, func(t *testing.T) {
			up := registrytest.Start(t)
			up.Push(t, "ocm", comp)
			mirror := registrytest.Start(t, registrytest.WithProxy(up.URL, "", ""))
			up.Reset()
			var ro []registry.Option
			if mode == "mirror" {
				ro = append(ro, registry.WithMirrors(up.Host, plainMirror(mirror)))
			}
			for i := 0; i < sidecars; i++ {
				mustGenerate(t, sidecar(t, up, t.TempDir(), nil, ro...), d)
			}
			total, per := blobGETs(up)
			mtotal, _ := blobGETs(mirror)
			tags := up.Count(func(q registrytest.Request) bool {
				return q.IsManifest() && strings.HasSuffix(q.Path, "/manifests/1.0.0")
			})
			t.Logf("%s: %d sidecars: upstream served %d blob GETs (%d distinct blobs), %d tag resolutions; mirror served %d blob GETs; upstream requests in all %d",
				mode, sidecars, total, len(per), tags, mtotal, up.Count(nil))
			if len(per) == 0 {
				t.Fatal("no blob was read at all")
			}
			for p, n := range per {
				want := 1
				if mode == "direct" {
					want = sidecars
				}
				if n != want {
					t.Errorf("upstream served %s %d times, want %d", p, n, want)
				}
			}
			if mode == "mirror" {
				if mtotal != sidecars*len(per) {
					t.Errorf("mirror served %d blob GETs, want %d", mtotal, sidecars*len(per))
				}
				// Tags are resolved at the upstream, once per sidecar: a
				// mirror never decides which content a tag names.
				if tags < sidecars {
					t.Errorf("upstream resolved the tag %d times, want one per sidecar (%d)", tags, sidecars)
				}
				if n := mirror.Count(func(q registrytest.Request) bool { return strings.HasSuffix(q.Path, "/manifests/1.0.0") }); n != 0 {
					t.Errorf("the tag was asked of the mirror %d times", n)
				}
			}
		})
	}
}

// A mirror that cannot be reached, or that answers 404 or 5xx, hands over
// to the upstream; the generation succeeds.
func TestMirrorFailureFallsBackToUpstream(t *testing.T) {
	comp, d := fleetComponent(t)
	up := registrytest.Start(t)
	up.Push(t, "ocm", comp)
	closed, conns := registrytest.CountingListener(t, "close")
	banner, _ := registrytest.CountingListener(t, "banner")
	failing := func(status int) *registrytest.Registry {
		return registrytest.Start(t, registrytest.WithProxy(up.URL, "", ""), registrytest.WithMiddleware(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.Path, "/blobs/") || strings.Contains(r.URL.Path, "/manifests/sha256:") {
					http.Error(w, "nope", status)
					return
				}
				next.ServeHTTP(w, r)
			})
		}))
	}
	cases := []struct {
		name   string
		mirror registry.Mirror
	}{
		{"connection closed", registry.Mirror{Host: closed, PlainHTTP: true}},
		{"ssh banner", registry.Mirror{Host: banner, PlainHTTP: true}},
		{"404", plainMirror(failing(http.StatusNotFound))},
		{"503", plainMirror(failing(http.StatusServiceUnavailable))},
		{"401", plainMirror(failing(http.StatusUnauthorized))},
		{"wrong prefix", registry.Mirror{Host: registrytest.Start(t, registrytest.WithProxy(up.URL, "", "")).Host, PathPrefix: "not-there", PlainHTTP: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up.Reset()
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			mustGenerate(t, sidecar(t, up, t.TempDir(), logger, registry.WithMirrors(up.Host, c.mirror)), d)
			if total, _ := blobGETs(up); total == 0 {
				t.Fatal("the upstream served no blob: the fallback did not happen")
			}
			if !strings.Contains(logs.String(), "registry mirror failed") || !strings.Contains(logs.String(), c.mirror.Host) {
				t.Errorf("no warning naming the mirror: %s", logs.String())
			}
			if strings.Contains(logs.String(), "SSH") || strings.Contains(logs.String(), "nope") {
				t.Errorf("the log quotes what the mirror sent: %s", logs.String())
			}
		})
	}
	// A mirror that refused a connection is left out for a while: one
	// connection for the whole generation, not one per blob.
	if n := conns.Load(); n != 1 {
		t.Errorf("the closed mirror was connected to %d times, want 1", n)
	}
}

// A mirror that serves other content than the digest names is refused with
// an error naming the mirror; the upstream is not asked instead.
func TestMirrorWrongContentIsRefused(t *testing.T) {
	comp, d := fleetComponent(t)
	chartDigest := blob.Digest(d.chart)
	for _, mode := range []string{"body", "header"} {
		t.Run(mode, func(t *testing.T) {
			up := registrytest.Start(t)
			up.Push(t, "ocm", comp)
			evil := registrytest.Start(t, registrytest.WithProxy(up.URL, "", ""), registrytest.WithMiddleware(func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if !strings.HasSuffix(r.URL.Path, "/blobs/"+chartDigest) {
						next.ServeHTTP(w, r)
						return
					}
					other := bytes.Repeat([]byte{'A'}, len(d.chart)) // same size, other bytes
					w.Header().Set("Content-Length", fmt.Sprint(len(other)))
					if mode == "header" {
						w.Header().Set("Docker-Content-Digest", blob.Digest(other))
					} else {
						w.Header().Set("Docker-Content-Digest", chartDigest) // lies
					}
					w.Write(other)
				})
			}))
			up.Reset()
			_, err := generate(context.Background(), sidecar(t, up, t.TempDir(), nil, registry.WithMirrors(up.Host, plainMirror(evil))), "1.0.0")
			if err == nil {
				t.Fatal("content a mirror substituted was accepted")
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			if !errors.Is(err, errdef.ErrDigestMismatch) || !strings.Contains(msg, evil.Host) || !strings.Contains(msg, "mirror of "+up.Host) || !strings.Contains(msg, chartDigest) {
				t.Errorf("error does not name the mirror, the upstream and the digest as a digest mismatch: %v", err)
			}
			if strings.Count(msg, "\n") > 0 {
				t.Errorf("error spans lines: %q", msg)
			}
			_, per := blobGETs(up)
			for p, n := range per {
				if strings.HasSuffix(p, chartDigest) {
					t.Errorf("the upstream was asked for the refused blob %d times: it must not be substituted silently", n)
				}
			}
		})
	}
}

// authLog records the basic-auth user names a registry received.
type authLog struct {
	mu    sync.Mutex
	users map[string]int
}

func (a *authLog) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, _, ok := r.BasicAuth(); ok {
			a.mu.Lock()
			if a.users == nil {
				a.users = map[string]int{}
			}
			a.users[u]++
			a.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (a *authLog) has(u string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[u] > 0
}

// The upstream's credential goes to the upstream only, the mirror's to the
// mirror only; the mirror reads the upstream with its own (the operator's).
func TestMirrorCredentialsStayWithTheirHost(t *testing.T) {
	comp, d := fleetComponent(t)
	var upLog, mLog authLog
	up := registrytest.Start(t, registrytest.WithBasicAuth("upstream-user", "upstream-pass-XYZ123"), registrytest.WithMiddleware(upLog.middleware))
	up.Push(t, "ocm", comp)
	// The proxy authenticates to the upstream with an upstream account of
	// its own (here the same as the sidecar's).
	mirror2 := registrytest.Start(t, registrytest.WithBasicAuth("mirror-user", "mirror-pass-ABC789"), registrytest.WithMiddleware(mLog.middleware),
		registrytest.WithProxy(up.URL, "upstream-user", "upstream-pass-XYZ123"))
	up.Reset()
	for _, source := range []string{"options", "environment"} {
		t.Run(source, func(t *testing.T) {
			var ro []registry.Option
			switch source {
			case "options":
				ro = []registry.Option{
					registry.WithCredential(up.Host, registry.Credential{Username: "upstream-user", Password: "upstream-pass-XYZ123"}),
					registry.WithMirrors(up.Host, registry.Mirror{Host: mirror2.Host, PlainHTTP: true, CredentialName: "m",
						Credential: func(context.Context) (registry.Credential, error) {
							return registry.Credential{Username: "mirror-user", Password: "mirror-pass-ABC789"}, nil
						}}),
					registry.WithPlainHTTP(up.Host),
				}
			case "environment":
				env := map[string]string{
					"ARGOCD_OCM_PLAIN_HTTP": up.Host,
					registry.EnvPrefix + registry.EnvName(up.Host) + "_USERNAME":                  "upstream-user",
					registry.EnvPrefix + registry.EnvName(up.Host) + "_PASSWORD":                  "upstream-pass-XYZ123",
					registry.EnvPrefix + registry.EnvName(up.Host) + registry.EnvMirrorsSuffix:    "http://" + mirror2.Host,
					registry.EnvPrefix + registry.EnvName(mirror2.Host) + "_USERNAME":             "mirror-user",
					registry.EnvPrefix + registry.EnvName(mirror2.Host) + "_PASSWORD":             "mirror-pass-ABC789",
					registry.EnvPrefix + registry.EnvName(up.Host) + registry.EnvMirrorTagsSuffix: "false",
				}
				ro = []registry.Option{registry.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }), registry.WithPlainHTTP(up.Host)}
			}
			mustGenerate(t, sidecar(t, up, t.TempDir(), nil, ro...), d)
			if total, _ := blobGETs(mirror2); total == 0 {
				t.Fatal("the mirror served nothing")
			}
			if mLog.has("upstream-user") {
				t.Error("the upstream's credential was sent to the mirror")
			}
			if upLog.has("mirror-user") {
				t.Error("the mirror's credential was sent to the upstream")
			}
			if !mLog.has("mirror-user") || !upLog.has("upstream-user") {
				t.Errorf("credentials not used where they belong: mirror %v, upstream %v", mLog.users, upLog.users)
			}
		})
	}
}

// Tags are resolved at the upstream. When it cannot be reached, only a
// mirror allowed to resolve tags answers them; by digest, mirrors serve
// without the upstream.
func TestMirrorTagResolution(t *testing.T) {
	comp, d := fleetComponent(t)
	var down bool
	var mu sync.Mutex
	up := registrytest.Start(t, registrytest.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			isDown := down
			mu.Unlock()
			if isDown {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	pushed := up.Push(t, "ocm", comp)
	mirror := registrytest.Start(t, registrytest.WithProxy(up.URL, "", ""))
	// Warm the mirror through one sidecar while the upstream is up: a mirror
	// that may resolve tags is asked by tag, so it learns the tag.
	learn := plainMirror(mirror)
	learn.ResolveTags = true
	mustGenerate(t, sidecar(t, up, t.TempDir(), nil, registry.WithMirrors(up.Host, learn)), d)
	if n := mirror.Count(func(q registrytest.Request) bool { return strings.HasSuffix(q.Path, "/manifests/1.0.0") }); n != 1 {
		t.Fatalf("the mirror allowed to resolve tags was asked for the tag %d times, want 1", n)
	}
	mu.Lock()
	down = true
	mu.Unlock()

	t.Run("digest only (default)", func(t *testing.T) {
		_, err := generate(context.Background(), sidecar(t, up, t.TempDir(), nil, registry.WithMirrors(up.Host, plainMirror(mirror))), "1.0.0")
		if err == nil || !strings.Contains(err.Error(), "503") {
			t.Fatalf("a tag was resolved without the upstream by a mirror not allowed to: %v", err)
		}
	})
	t.Run("pinned by digest", func(t *testing.T) {
		_, err := generate(context.Background(), sidecar(t, up, t.TempDir(), nil, registry.WithMirrors(up.Host, plainMirror(mirror))), "1.0.0@"+pushed[0].ManifestDigest)
		if err != nil {
			t.Fatalf("a pinned version needs no upstream when the mirror holds it: %v", err)
		}
	})
	t.Run("resolveTags", func(t *testing.T) {
		var logs bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		m := plainMirror(mirror)
		m.ResolveTags = true
		mustGenerate(t, sidecar(t, up, t.TempDir(), logger, registry.WithMirrors(up.Host, m)), d)
		if !strings.Contains(logs.String(), "tag resolved by a mirror") {
			t.Errorf("no warning that a mirror resolved the tag: %s", logs.String())
		}
	})
}

// A Harbor-style mirror keeps the upstream's repositories below a project
// (path prefix).
func TestMirrorPathPrefix(t *testing.T) {
	comp, d := fleetComponent(t)
	up := registrytest.Start(t)
	up.Push(t, "ocm", comp)
	harbor := registrytest.Start(t)
	harbor.Push(t, "ghcr-proxy/ocm", comp) // what the proxy project holds after a first pull
	up.Reset()
	harbor.Reset()
	mustGenerate(t, sidecar(t, up, t.TempDir(), nil, registry.WithMirrors(up.Host, registry.Mirror{Host: harbor.Host, PathPrefix: "ghcr-proxy", PlainHTTP: true})), d)
	if total, _ := blobGETs(up); total != 0 {
		t.Errorf("the upstream served %d blobs", total)
	}
	for _, q := range harbor.Requests() {
		if !strings.HasPrefix(q.Path, "/v2/ghcr-proxy/ocm/") && q.Path != "/v2/" {
			t.Errorf("mirror request outside the prefix: %s", q)
		}
	}
	if total, _ := blobGETs(harbor); total == 0 {
		t.Error("the mirror served no blob")
	}
}

// The policy's repository rules apply to the upstream name, before any
// connection to a mirror; mirrors come from the policy file, with their own
// credential, and not from the environment.
func TestMirrorPolicy(t *testing.T) {
	comp, d := fleetComponent(t)
	up := registrytest.Start(t)
	pushed := up.Push(t, "ocm", comp)
	var mLog authLog
	mirror := registrytest.Start(t, registrytest.WithProxy(up.URL, "", ""), registrytest.WithBasicAuth("mirror-user", "mirror-pass-ABC789"), registrytest.WithMiddleware(mLog.middleware))
	envMirror, envConns := registrytest.CountingListener(t, "close")
	dir := t.TempDir()
	writeFile(t, dir+"/user", "mirror-user\n")
	writeFile(t, dir+"/pass", "mirror-pass-ABC789\n")
	pol, err := policy.Parse([]byte(fmt.Sprintf(`apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
credentials:
- name: cache
  host: %[2]s
  usernameFile: %[3]s/user
  passwordFile: %[3]s/pass
mirrors:
- upstream: %[1]s
  endpoints:
  - host: %[2]s
    plainHTTP: true
    credential: cache
rules:
- name: team-a
  projects: [team-a]
  repositories:
  - host: %[1]s
    pathPrefix: ocm
  plainHTTP: [%[1]s]
`, up.Host, mirror.Host, dir)), "test")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{registry.EnvPrefix + registry.EnvName(up.Host) + registry.EnvMirrorsSuffix: "http://" + envMirror}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	none := func(string) (string, bool) { return "", false }
	t.Run("allowed", func(t *testing.T) {
		up.Reset()
		mustGenerate(t, sidecar(t, up, t.TempDir(), nil, append(policyregistry.For(pol.Rule("team-a"), none), registry.WithEnv(none))...), d)
		if total, _ := blobGETs(mirror); total == 0 || !mLog.has("mirror-user") {
			t.Errorf("the policy's mirror was not used with its credential (%d blob GETs, users %v)", total, mLog.users)
		}
	})
	t.Run("environment mirrors under a policy", func(t *testing.T) {
		// They would be ignored: refused, as ARGOCD_OCM_PLAIN_HTTP is with
		// a policy, before any connection.
		_, err := generate(context.Background(), sidecar(t, up, t.TempDir(), nil, append(policyregistry.For(pol.Rule("team-a"), lookup), registry.WithEnv(lookup))...), "1.0.0")
		if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), registry.EnvPrefix+registry.EnvName(up.Host)+registry.EnvMirrorsSuffix) || !strings.Contains(err.Error(), "policy") {
			t.Errorf("environment mirrors under a policy: %v", err)
		}
		if n := envConns.Load(); n != 0 {
			t.Errorf("the environment's mirror was connected to %d times under a policy", n)
		}
	})
	t.Run("warm cache", func(t *testing.T) {
		// A new process with a warm cache: by tag, the upstream answers the
		// tag's HEAD and the mirror the manifest; pinned by digest, under a
		// policy, the cached manifest and blobs are served on the vouch of
		// the first generation's downloads (oci.Client.vouch): neither the
		// upstream nor the mirror sees a request.
		dir := t.TempDir()
		opts := append(policyregistry.For(pol.Rule("team-a"), none), registry.WithEnv(none))
		mustGenerate(t, sidecar(t, up, dir, nil, opts...), d)
		up.Reset()
		mirror.Reset()
		mustGenerate(t, sidecar(t, up, dir, nil, opts...), d)
		for _, q := range up.Requests() {
			if q.Path != "/v2/" && !(q.Method == http.MethodHead && strings.HasSuffix(q.Path, "/manifests/1.0.0")) {
				t.Errorf("warm generation by tag: upstream request %s (want only the tag's HEAD)", q)
			}
		}
		if total, _ := blobGETs(mirror); total != 0 {
			t.Errorf("warm generation: %d blob GETs at the mirror", total)
		}
		up.Reset()
		mirror.Reset()
		if _, err := generate(context.Background(), sidecar(t, up, dir, nil, opts...), "1.0.0@"+pushed[0].ManifestDigest); err != nil {
			t.Fatal(err)
		}
		if n := up.Count(nil); n != 0 {
			t.Errorf("pinned, warm: %d upstream requests: %v", n, up.Requests())
		}
		if n := mirror.Count(nil); n != 0 {
			t.Errorf("pinned, warm: %d mirror requests: %v", n, mirror.Requests())
		}
	})
	t.Run("refused upstream", func(t *testing.T) {
		mirror.Reset()
		_, err := generate(context.Background(), sidecar(t, up, t.TempDir(), nil, policyregistry.For(pol.Rule("team-b"), lookup)...), "1.0.0")
		if !errors.Is(err, errdef.ErrForbidden) {
			t.Fatalf("want the policy's refusal, got %v", err)
		}
		if n := mirror.Count(nil); n != 0 {
			t.Errorf("a refused repository cost %d mirror requests", n)
		}
	})
}

func TestParseMirror(t *testing.T) {
	cases := []struct {
		in   string
		want registry.Mirror
		err  bool
	}{
		{in: "harbor.acme.example/ghcr-proxy", want: registry.Mirror{Host: "harbor.acme.example", PathPrefix: "ghcr-proxy"}},
		{in: "https://Harbor.Acme.Example:8443/ghcr-proxy/", want: registry.Mirror{Host: "harbor.acme.example:8443", PathPrefix: "ghcr-proxy"}},
		{in: "http://zot.cache.svc:5000", want: registry.Mirror{Host: "zot.cache.svc:5000", PlainHTTP: true}},
		{in: " 127.0.0.1:5001 ", want: registry.Mirror{Host: "127.0.0.1:5001"}},
		{in: "", err: true},
		{in: "ftp://x.example", err: true},
		{in: "https://user:pass@x.example", err: true},
		{in: "x.example?token=abc", err: true},
		{in: "x.example#f", err: true},
		{in: "x.example:port", err: true},
		{in: "x.example:", err: true},
		{in: "x.example/a/../b", err: true},
		{in: "x.example/a//b", err: true},
		{in: "x.example/UPPER", err: true},
		{in: "*.example", err: true},
		{in: "x example", err: true},
	}
	for _, c := range cases {
		got, err := registry.ParseMirror(c.in)
		if c.err {
			if err == nil {
				t.Errorf("%q: got %+v, want an error", c.in, got)
			}
			if err != nil && strings.Contains(err.Error(), "pass") {
				t.Errorf("%q: error quotes the credential: %v", c.in, err)
			}
			continue
		}
		if err != nil || got.Host != c.want.Host || got.PathPrefix != c.want.PathPrefix || got.PlainHTTP != c.want.PlainHTTP {
			t.Errorf("%q: got %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// A malformed mirror variable is a configuration error that names the
// variable and the entry, never its value.
func TestMirrorEnvErrors(t *testing.T) {
	for _, v := range []map[string]string{
		{"ARGOCD_OCM_REGISTRY_GHCR_IO_MIRRORS": "https://harbor.example/p,https://u:s3cr3tPassw0rd@zot.example"},
		{"ARGOCD_OCM_REGISTRY_GHCR_IO_MIRRORS": "harbor.example", "ARGOCD_OCM_REGISTRY_GHCR_IO_MIRRORS_RESOLVE_TAGS": "sometimes"},
	} {
		c, err := registry.NewClient(registry.WithoutDockerConfig(), registry.WithEnv(func(k string) (string, bool) { s, ok := v[k]; return s, ok }))
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := imageref.Parse("ghcr.io/acme/app:1.0.0")
		_, err = c.Repository(ref)
		if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "ARGOCD_OCM_REGISTRY_GHCR_IO_MIRRORS") || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%v: got %v", v, err)
		}
	}
	// Without the _HOST variable an ambiguous host's variables are not its own.
	c, _ := registry.NewClient(registry.WithoutDockerConfig(), registry.WithEnv(func(k string) (string, bool) {
		if k == "ARGOCD_OCM_REGISTRY_REGISTRY_EXAMPLE_TEST_MIRRORS" {
			return "mirror.example", true
		}
		return "", false
	}))
	if ms, err := c.Mirrors("registry-example.test"); err != nil || len(ms) != 0 {
		t.Errorf("registry-example.test took registry.example.test's mirrors: %v %v", ms, err)
	}
	if ms, err := c.Mirrors("registry.example.test"); err != nil || len(ms) != 1 || ms[0].Host != "mirror.example" {
		t.Errorf("registry.example.test: %v %v", ms, err)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

const fleetHelperEnv = "ARGOCD_OCM_MIRROR_FLEET_HELPER"

// TestMirrorFleetHelperProcess is one sidecar process of
// TestMirrorFleetProcesses: the mirror comes from its environment
// (ARGOCD_OCM_REGISTRY_<HOST>_MIRRORS), as in a sidecar without a policy.
func TestMirrorFleetHelperProcess(t *testing.T) {
	if os.Getenv(fleetHelperEnv) == "" {
		t.Skip("helper process for TestMirrorFleetProcesses")
	}
	r, err := oci.New("http://"+os.Getenv("UPSTREAM")+"/ocm", oci.WithCache(cache.Open(os.Getenv("CACHE_DIR"))),
		oci.WithRegistryOptions(registry.WithoutDockerConfig(), registry.WithPlainHTTP(os.Getenv("UPSTREAM"))))
	if err == nil {
		_, err = generate(context.Background(), r, "1.0.0")
	}
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("OK")
	os.Exit(0)
}

// Sidecar processes, each with its own cache directory and the mirror in its
// environment, one after another: the upstream serves each blob once.
func TestMirrorFleetProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	comp, _ := fleetComponent(t)
	up := registrytest.Start(t)
	up.Push(t, "ocm", comp)
	mirror := registrytest.Start(t, registrytest.WithProxy(up.URL, "", ""))
	up.Reset()
	const n = 3
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMirrorFleetHelperProcess$")
		cmd.Env = append(os.Environ(), fleetHelperEnv+"=1", "UPSTREAM="+up.Host, "CACHE_DIR="+t.TempDir(),
			registry.EnvPrefix+registry.EnvName(up.Host)+registry.EnvMirrorsSuffix+"=http://"+mirror.Host)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "OK") {
			t.Fatalf("process %d: %v: %s", i, err, out)
		}
	}
	total, per := blobGETs(up)
	mtotal, _ := blobGETs(mirror)
	t.Logf("%d processes: upstream served %d blob GETs for %d blobs, the mirror %d", n, total, len(per), mtotal)
	if total != len(per) || len(per) == 0 || mtotal != n*len(per) {
		t.Errorf("upstream served %d blob GETs for %d blobs (want one each), mirror %d (want %d)", total, len(per), mtotal, n*len(per))
	}
}

// The render server's clients share what they learnt about a mirror that is
// down (Shared): the next generation does not connect to it again.
func TestMirrorPauseIsShared(t *testing.T) {
	comp, d := fleetComponent(t)
	up := registrytest.Start(t)
	up.Push(t, "ocm", comp)
	closed, conns := registrytest.CountingListener(t, "close")
	var shared registry.Shared
	for i := 0; i < 3; i++ {
		mustGenerate(t, sidecar(t, up, t.TempDir(), nil, registry.WithShared(&shared), registry.WithMirrors(up.Host, registry.Mirror{Host: closed, PlainHTTP: true})), d)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("3 generations connected to the down mirror %d times, want 1", n)
	}
}

// A writer (transfer) reaches registries itself: with WithoutMirrors neither
// WithMirrors nor the environment's mirrors are used.
func TestWithoutMirrorsIgnoresEveryMirror(t *testing.T) {
	env := map[string]string{"ARGOCD_OCM_REGISTRY_GHCR_IO_MIRRORS": "https://harbor.example/p"}
	lookup := func(k string) (string, bool) { s, ok := env[k]; return s, ok }
	with, err := registry.NewClient(registry.WithoutDockerConfig(), registry.WithEnv(lookup))
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := with.Mirrors("ghcr.io"); err != nil || len(ms) != 1 {
		t.Fatalf("control: mirrors %v, %v; want the environment's one", ms, err)
	}
	without, err := registry.NewClient(registry.WithoutDockerConfig(), registry.WithEnv(lookup), registry.WithoutMirrors(),
		registry.WithMirrors("ghcr.io", registry.Mirror{Host: "zot.example"}))
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := without.Mirrors("ghcr.io"); err != nil || len(ms) != 0 {
		t.Errorf("WithoutMirrors: mirrors %v, %v; want none", ms, err)
	}
}
