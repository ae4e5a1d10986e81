package oci_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/compose/policyregistry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// spanLog records when each request of a registry arrived and ended; every
// request is answered after delay, so that requests issued together overlap.
type spanLog struct {
	delay time.Duration
	mu    sync.Mutex
	spans []span
}

type span struct {
	start, end time.Time
	what       string
}

func (l *spanLog) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		t0 := time.Now()
		time.Sleep(l.delay)
		next.ServeHTTP(w, q)
		l.mu.Lock()
		l.spans = append(l.spans, span{t0, time.Now(), q.Method + " " + q.URL.Path})
		l.mu.Unlock()
	})
}

func (l *spanLog) reset() {
	l.mu.Lock()
	l.spans = nil
	l.mu.Unlock()
}

// rounds groups the requests into round trips: a request that arrived after
// every earlier one ended starts a new one (what bench/harness counts).
func (l *spanLog) rounds() [][]string {
	l.mu.Lock()
	s := slices.Clone(l.spans)
	l.mu.Unlock()
	slices.SortFunc(s, func(a, b span) int { return a.start.Compare(b.start) })
	var out [][]string
	var end time.Time
	for _, x := range s {
		if len(out) == 0 || !x.start.Before(end) {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], x.what)
		if x.end.After(end) {
			end = x.end
		}
	}
	return out
}

// TestColdRoundTripsIndexChart: a cold render (new client, empty cache) of a
// Helm chart kept in the version's image index (OCM CLI v0.13) waits on
// three round trips, the format's minimum: the tag (the index), the
// manifests it names (descriptor and chart), the blobs they name (config,
// descriptor layer, chart layer). A registry that wants credentials adds
// one, the challenge of the first request, and no request after it is
// challenged again.
func TestColdRoundTripsIndexChart(t *testing.T) {
	for _, authed := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "storage")
		if err := registrytest.CopyDir(fixtures.V2Path(t, "registry-storage"), dir); err != nil {
			t.Fatal(err)
		}
		log := &spanLog{delay: 30 * time.Millisecond}
		opts := []registrytest.Option{registrytest.WithStorageDir(dir), registrytest.WithMiddleware(log.middleware)}
		if authed {
			opts = append(opts, registrytest.WithBasicAuth("ocm", secret))
		}
		reg := registrytest.Start(t, opts...)
		for _, cached := range []bool{true, false} {
			cacheDir := ""
			if cached {
				cacheDir = t.TempDir()
			}
			var extra []registry.Option
			if authed {
				extra = append(extra, registry.WithPlainHTTP(reg.Host), registry.WithCredential(reg.Host, registry.Credential{Username: "ocm", Password: secret}))
			}
			log.reset()
			reg.Reset()
			coldRender(t, "http://"+reg.Host+"/fx-localblob", baseOpts(cacheDir, extra...))
			time.Sleep(100 * time.Millisecond) // the handlers' logging ends after the client read the last response
			rounds := log.rounds()
			var lines []string
			for i, rt := range rounds {
				lines = append(lines, strings.Join(append([]string{"round", string(rune('1' + i))}, rt...), " "))
			}
			t.Logf("auth %v, cache %v: %d round trips:\n%s", authed, cached, len(rounds), strings.Join(lines, "\n"))
			want, unauthorized := 3, 0
			if authed {
				want, unauthorized = 4, 1
			}
			if len(rounds) > want {
				t.Errorf("auth %v, cache %v: %d round trips, want at most %d", authed, cached, len(rounds), want)
			}
			if n := reg.Count(func(q registrytest.Request) bool { return q.Status == http.StatusUnauthorized }); n != unauthorized {
				t.Errorf("auth %v, cache %v: %d requests challenged, want %d", authed, cached, n, unauthorized)
			}
		}
	}
}

// coldRender looks helm-dir:1.0.0 up in repo and reads its chart as a
// render does.
func coldRender(t *testing.T, repo string, opts []oci.Option) {
	t.Helper()
	ctx := context.Background()
	r, err := oci.New(repo, opts...)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := r.LookupComponentVersion(ctx, "ocm.example/fixtures/helm-dir", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cv.Descriptor().Resource(ocm.Identity{"name": "chart"})
	if err != nil {
		t.Fatal(err)
	}
	content, err := (&access.Resolver{Artifacts: sourceOf(r)}).Read(ctx, cv, res)
	if err != nil {
		t.Fatal(err)
	}
	if content.ManifestDigest != "sha256:"+res.Digest.Value {
		t.Fatalf("manifest %s, descriptor %s", content.ManifestDigest, res.Digest.Value)
	}
}

// TestIndexChartReadAheadCached: the chart layer read ahead is in the cache
// once the render used it, so that the next process asks for nothing but
// the tag; under a sidecar policy too (the read ahead vouches for it like
// a download through the cache). A read ahead of a chart the render does
// not use writes nothing.
func TestIndexChartReadAheadCached(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "storage")
	if err := registrytest.CopyDir(fixtures.V2Path(t, "registry-storage"), dir); err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t, registrytest.WithStorageDir(dir))
	const chartLayer = "sha256:53b3cbd202fd3a33d085d7f9249b5d00767b12bd1e14ba21bd09583ae5f48eb7"
	p, err := policy.Parse([]byte(fmt.Sprintf("apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\ndefault:\n  repositories: [{host: %q, pathPrefix: fx-localblob}]\n  plainHTTP: [%q]\n", reg.Host, reg.Host)), "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, gated := range []bool{false, true} {
		cacheDir := t.TempDir()
		opts := func() []oci.Option {
			if gated {
				return baseOpts(cacheDir, policyregistry.For(p.Rule("x"), noEnv)...)
			}
			return baseOpts(cacheDir)
		}
		// Lookup only: the chart is read ahead, and not kept.
		r, err := oci.New("http://"+reg.Host+"/fx-localblob", opts()...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.LookupComponentVersion(context.Background(), "ocm.example/fixtures/helm-dir", "1.0.0"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if f, ok := r.Client().Cache().Get(chartLayer, -1); ok {
			f.Close()
			t.Errorf("policy %v: a chart read ahead and not used is in the cache", gated)
		}
		reg.Reset()
		coldRender(t, "http://"+reg.Host+"/fx-localblob", opts())
		if n := reg.Count(func(q registrytest.Request) bool { return strings.HasSuffix(q.Path, chartLayer) }); n != 1 {
			t.Errorf("policy %v: the chart layer was downloaded %d times, want once", gated, n)
		}
		reg.Reset()
		coldRender(t, "http://"+reg.Host+"/fx-localblob", opts())
		var lines []string
		for _, q := range reg.Requests() {
			lines = append(lines, q.String())
		}
		if len(lines) != 1 || !strings.Contains(lines[0], "/manifests/1.0.0") {
			t.Errorf("policy %v: the next process asked %v, want only the tag", gated, lines)
		}
	}
}
