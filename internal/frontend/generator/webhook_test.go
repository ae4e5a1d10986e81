package generator_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/generator"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

const webhookSecret = "registry-secret-0123456789abcdef"

// fakeAppSets is the Kubernetes API's part: ApplicationSets to list, and
// the refreshes asked for.
type fakeAppSets struct {
	mu        sync.Mutex
	sets      []generator.AppSet
	lists     int
	refreshed chan string
}

func newFakeAppSets(sets ...generator.AppSet) *fakeAppSets {
	return &fakeAppSets{sets: sets, refreshed: make(chan string, 100)}
}

func (f *fakeAppSets) List(context.Context) ([]generator.AppSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	return f.sets, nil
}

func (f *fakeAppSets) Refresh(_ context.Context, ns, name string) error {
	f.refreshed <- ns + "/" + name
	return nil
}

func (f *fakeAppSets) listed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

// waitRefreshed collects refreshes until want arrived or 5 s passed, then
// 200 ms more (so that unwanted ones show).
func (f *fakeAppSets) waitRefreshed(t *testing.T, want ...string) []string {
	t.Helper()
	var got []string
	deadline := time.After(5 * time.Second)
	for len(got) < len(want) {
		select {
		case n := <-f.refreshed:
			got = append(got, n)
		case <-deadline:
			t.Fatalf("refreshed %v within 5 s, want %v", got, want)
		}
	}
	settle := time.After(200 * time.Millisecond)
	for {
		select {
		case n := <-f.refreshed:
			got = append(got, n)
		case <-settle:
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("refreshed %v, want %v", got, want)
			}
			return got
		}
	}
}

func secretFile(t *testing.T, secret string) generator.TokenSource {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf := &generator.TokenFile{Path: p}
	if err := tf.Load(); err != nil {
		t.Fatal(err)
	}
	return tf.Token
}

// serveWebhook serves the generator's handler with a webhook of sources.
func serveWebhook(t *testing.T, g *generator.Generator, sets generator.AppSets, sources ...generator.WebhookSource) string {
	t.Helper()
	wh := &generator.Webhook{Sources: sources, AppSets: sets, Generator: g}
	if err := wh.Check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wh.Start(ctx)
	h := &generator.Handler{Generator: g, Token: func() ([]byte, error) { return []byte(testToken), nil }, Webhook: wh}
	srv := httptest.NewServer(generator.NewServer("", h).Handler)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A real CNCF distribution registry's notifications of a component push
// refresh exactly the ApplicationSets whose plugin generator lists that
// component (by name, prefix pattern or a templated input), and the
// generator's cached version list is forgotten, so the refresh sees the
// new version at once although the list TTL is an hour.
func TestWebhookDistributionNotificationsRefreshListingAppSets(t *testing.T) {
	const marker = "example.org/sync/marker"
	var whURL string
	var mu sync.Mutex
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The registry starts before the generator's server exists.
		mu.Lock()
		to := whURL
		mu.Unlock()
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, to+r.URL.Path, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
	})
	relay := httptest.NewServer(hook)
	t.Cleanup(relay.Close)
	f := newFixture(t, registrytest.WithNotifications(relay.URL+generator.PathWebhook+"local",
		http.Header{"Authorization": []string{"Bearer " + webhookSecret}}))
	g := f.generator(t, generator.Options{ListTTL: time.Hour})

	other := f.reg.URL + "/elsewhere"
	sets := newFakeAppSets(
		generator.AppSet{Namespace: "argocd", Name: "exact", Inputs: []map[string]any{{"repository": f.repo, "component": podinfo}}},
		generator.AppSet{Namespace: "argocd", Name: "prefix", Inputs: []map[string]any{{"repository": f.reg.Host + "/ocm", "component": "example.org/apps/*"}}},
		generator.AppSet{Namespace: "team-a", Name: "templated", Inputs: []map[string]any{{"repository": "{{ .metadata.annotations.repo }}", "component": podinfo}}},
		generator.AppSet{Namespace: "argocd", Name: "other-component", Inputs: []map[string]any{{"repository": f.repo, "component": redis}}},
		generator.AppSet{Namespace: "argocd", Name: "other-prefix", Inputs: []map[string]any{{"repository": other, "component": podinfo}}},
		generator.AppSet{Namespace: "argocd", Name: "platform-prefix", Inputs: []map[string]any{{"repository": f.repo, "component": "example.org/platform/*"}}},
		generator.AppSet{Namespace: "argocd", Name: "marker", Inputs: []map[string]any{{"repository": f.repo, "component": marker}}},
	)
	u := serveWebhook(t, g, sets, generator.WebhookSource{Name: "local", Kind: generator.SourceDistribution, Secret: secretFile(t, webhookSecret)})
	mu.Lock()
	whURL = u
	mu.Unlock()

	newest := func() string {
		t.Helper()
		q := query(t, map[string]any{"repository": f.repo, "component": podinfo})
		out, err := g.Generate(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		return out[0]["version"].(string)
	}
	if v := newest(); v != "3.0.0" {
		t.Fatalf("newest before the push: %s", v)
	}
	// The registry sends its notifications in order (one queue per
	// endpoint) and the webhook refreshes in order (one worker): once a
	// push of the marker has refreshed its ApplicationSet, the refreshes of
	// every earlier push are in. Not a quiet period: at load 30 on 2 cores
	// the fixture's own pushes were still being refreshed after 500 ms of
	// quiet.
	pushes := 0
	untilMarker := func() []string {
		t.Helper()
		pushes++
		f.reg.Push(t, "ocm", app(marker, fmt.Sprintf("1.0.%d", pushes)))
		var got []string
		safety := time.After(time.Minute)
		for {
			select {
			case n := <-sets.refreshed:
				if n == "argocd/marker" {
					slices.Sort(got)
					return got
				}
				got = append(got, n)
			case <-safety:
				t.Fatalf("the marker's push refreshed nothing within a minute (before it: %v)", got)
			}
		}
	}
	untilMarker() // the fixture's own pushes
	f.reg.Push(t, "ocm", app(podinfo, "4.0.0"))
	if got, want := untilMarker(), []string{"argocd/exact", "argocd/prefix", "team-a/templated"}; !slices.Equal(got, want) {
		t.Fatalf("refreshed %v, want %v", got, want)
	}
	if v := newest(); v != "4.0.0" {
		t.Fatalf("newest after the push's webhook: %s, want 4.0.0 (the cached list was not forgotten)", v)
	}
}

func query(t *testing.T, params map[string]any) generator.Query {
	t.Helper()
	raw := map[string]json.RawMessage{}
	for k, v := range params {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		raw[k] = b
	}
	q, err := generator.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// Every way in without the source's secret gets the same 403 before its
// body is read, whatever the source; nothing is listed or refreshed.
func TestWebhookRefusals(t *testing.T) {
	f := newFixture(t)
	g := f.generator(t, generator.Options{})
	sets := newFakeAppSets(generator.AppSet{Namespace: "argocd", Name: "exact", Inputs: []map[string]any{{"repository": f.repo, "component": podinfo}}})
	url := serveWebhook(t, g, sets,
		generator.WebhookSource{Name: "dist", Kind: generator.SourceDistribution, Secret: secretFile(t, webhookSecret)},
		generator.WebhookSource{Name: "gh", Kind: generator.SourceGHCR, Secret: secretFile(t, webhookSecret)})
	event := []byte(`{"events":[{"action":"push","target":{"repository":"ocm/component-descriptors/` + podinfo + `","tag":"9.0.0"},"request":{"host":"` + f.reg.Host + `"}}]}`)
	send := func(path string, hdr map[string]string, body []byte) (int, string) {
		t.Helper()
		return sendEvent(t, url+path, hdr, body)
	}
	const refused = `{"error":"Forbidden","message":"wrong or missing secret"}` + "\n"
	for name, c := range map[string]struct {
		path string
		hdr  map[string]string
	}{
		"no secret":                  {"/api/v1/webhook/dist", nil},
		"wrong secret":               {"/api/v1/webhook/dist", map[string]string{"Authorization": "Bearer " + webhookSecret + "x"}},
		"the secret's prefix":        {"/api/v1/webhook/dist", map[string]string{"Authorization": "Bearer " + webhookSecret[:16]}},
		"the generator's token":      {"/api/v1/webhook/dist", map[string]string{"Authorization": "Bearer " + testToken}},
		"unknown source":             {"/api/v1/webhook/nope", map[string]string{"Authorization": "Bearer " + webhookSecret}},
		"no source":                  {"/api/v1/webhook/", map[string]string{"Authorization": "Bearer " + webhookSecret}},
		"GHCR without a signature":   {"/api/v1/webhook/gh", map[string]string{"X-GitHub-Event": "package"}},
		"GHCR signed with the token": {"/api/v1/webhook/gh", map[string]string{"X-GitHub-Event": "package", "X-Hub-Signature-256": sign(event, testToken)}},
		"GHCR with a bearer secret":  {"/api/v1/webhook/gh", map[string]string{"X-GitHub-Event": "package", "Authorization": "Bearer " + webhookSecret}},
	} {
		if status, body := send(c.path, c.hdr, event); status != http.StatusForbidden || body != refused {
			t.Errorf("%s: %d %q, want 403 %q", name, status, body, refused)
		}
	}
	// The webhook's secret is no token for the parameter requests.
	if r := post(t, url+generator.PathGetParams, webhookSecret, []byte(`{"applicationSetName":"a","input":{"parameters":{}}}`)); r.status != http.StatusForbidden {
		t.Errorf("getparams with the webhook's secret: %d", r.status)
	}
	auth := map[string]string{"Authorization": "Bearer " + webhookSecret}
	if status, _ := send("/api/v1/webhook/dist", auth, bytes.Repeat([]byte(" "), generator.DefaultWebhookBodyBytes+1)); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the bound: %d, want 413", status)
	}
	hostile := []byte(`{"events": [{"action": "push", "target": {"repository": "s3cr3t-content-` + strings.Repeat("A", 100) + `"`)
	status, body := send("/api/v1/webhook/dist", auth, hostile)
	if status != http.StatusBadRequest || strings.Contains(body, "s3cr3t") || !strings.Contains(body, "not the registry's JSON") {
		t.Errorf("malformed event: %d %q, want 400 naming the problem without quoting the body", status, body)
	}
	if n := sets.listed(); n != 0 {
		t.Fatalf("refused events listed ApplicationSets %d times", n)
	}
	// The push the event names, served (the webhook refreshes once it is).
	f.reg.Push(t, "ocm", app(podinfo, "9.0.0"))
	if status, _ := send("/api/v1/webhook/dist", auth, event); status != http.StatusAccepted {
		t.Fatalf("the right secret: %d, want 202", status)
	}
	sets.waitRefreshed(t, "argocd/exact")
}

// sendEvent posts body with the headers; it returns the status and body.
func sendEvent(t *testing.T, url string, hdr map[string]string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := new(bytes.Buffer)
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func sign(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Harbor's PUSH_ARTIFACT (its auth header as configured) and GitHub's
// signed package events refresh; other events of theirs are acknowledged
// and refresh nothing. A source's host overrides the event's (ghcr.io
// behind a name the ApplicationSets use, a registry behind a proxy).
func TestWebhookHarborAndGHCR(t *testing.T) {
	f := newFixture(t)
	g := f.generator(t, generator.Options{})
	sets := newFakeAppSets(
		generator.AppSet{Namespace: "argocd", Name: "harbor", Inputs: []map[string]any{{"repository": "harbor.example.org/team/ocm", "component": podinfo}}},
		generator.AppSet{Namespace: "argocd", Name: "ghcr", Inputs: []map[string]any{{"repository": "ghcr.io/acme/ocm", "component": podinfo}}},
		generator.AppSet{Namespace: "argocd", Name: "mirror", Inputs: []map[string]any{{"repository": "oci://registry.internal:5000/ocm", "component": redis}}},
	)
	url := serveWebhook(t, g, sets,
		generator.WebhookSource{Name: "harbor", Kind: generator.SourceHarbor, Secret: secretFile(t, webhookSecret)},
		generator.WebhookSource{Name: "ghcr", Kind: generator.SourceGHCR, Secret: secretFile(t, webhookSecret)},
		generator.WebhookSource{Name: "internal", Kind: generator.SourceDistribution, Secret: secretFile(t, webhookSecret), Host: "registry.internal:5000"})
	send := func(path string, hdr map[string]string, body string) int {
		t.Helper()
		status, _ := sendEvent(t, url+path, hdr, []byte(body))
		return status
	}
	harbor := `{"type":"PUSH_ARTIFACT","occur_at":1700000000,"operator":"robot$ci","event_data":{"resources":[{"digest":"sha256:aa","tag":"2.0.0","resource_url":"harbor.example.org/team/ocm/component-descriptors/` + podinfo + `:2.0.0"}],"repository":{"name":"ocm/component-descriptors/` + podinfo + `","namespace":"team","repo_full_name":"team/ocm/component-descriptors/` + podinfo + `","repo_type":"private"}}}`
	if s := send("/api/v1/webhook/harbor", map[string]string{"Authorization": webhookSecret}, harbor); s != http.StatusAccepted {
		t.Fatalf("Harbor push: %d", s)
	}
	sets.waitRefreshed(t, "argocd/harbor")
	if s := send("/api/v1/webhook/harbor", map[string]string{"Authorization": webhookSecret}, strings.Replace(harbor, "PUSH_ARTIFACT", "PULL_ARTIFACT", 1)); s != http.StatusOK {
		t.Fatalf("Harbor pull: %d, want 200", s)
	}

	ghcr := `{"action":"published","package":{"name":"ocm%2Fcomponent-descriptors%2F` + strings.ReplaceAll(podinfo, "/", "%2F") + `","package_type":"CONTAINER","owner":{"login":"Acme"},"package_version":{"container_metadata":{"tag":{"name":"2.0.0","digest":"sha256:aa"}}}}}`
	if s := send("/api/v1/webhook/ghcr", map[string]string{"X-GitHub-Event": "package", "X-Hub-Signature-256": sign([]byte(ghcr), webhookSecret)}, ghcr); s != http.StatusAccepted {
		t.Fatalf("GHCR package published: %d", s)
	}
	sets.waitRefreshed(t, "argocd/ghcr")
	ping := `{"zen":"Keep it logically awesome."}`
	if s := send("/api/v1/webhook/ghcr", map[string]string{"X-GitHub-Event": "ping", "X-Hub-Signature-256": sign([]byte(ping), webhookSecret)}, ping); s != http.StatusOK {
		t.Fatalf("GitHub ping: %d, want 200", s)
	}
	npm := strings.Replace(ghcr, "CONTAINER", "npm", 1)
	if s := send("/api/v1/webhook/ghcr", map[string]string{"X-GitHub-Event": "package", "X-Hub-Signature-256": sign([]byte(npm), webhookSecret)}, npm); s != http.StatusOK {
		t.Fatalf("GitHub npm package: %d, want 200", s)
	}

	// Distribution behind another name: the source's host is what counts.
	dist := `{"events":[{"action":"push","target":{"repository":"ocm/component-descriptors/` + redis + `","tag":"1.2.0"},"request":{"host":"10.0.0.7:5000"}},` +
		`{"action":"pull","target":{"repository":"ocm/component-descriptors/` + podinfo + `","tag":"1.0.0"},"request":{"host":"10.0.0.7:5000"}}]}`
	if s := send("/api/v1/webhook/internal", map[string]string{"Authorization": "Bearer " + webhookSecret}, dist); s != http.StatusAccepted {
		t.Fatalf("distribution push behind a proxy: %d", s)
	}
	sets.waitRefreshed(t, "argocd/mirror")
}

// Sources are checked at start: names, kinds, hosts, one secret each.
func TestWebhookSourceCheck(t *testing.T) {
	sec := func() ([]byte, error) { return []byte(webhookSecret), nil }
	for name, src := range map[string]generator.WebhookSource{
		"no name":        {Kind: generator.SourceHarbor, Secret: sec},
		"path in a name": {Name: "a/b", Kind: generator.SourceHarbor, Secret: sec},
		"upper case":     {Name: "Harbor", Kind: generator.SourceHarbor, Secret: sec},
		"unknown kind":   {Name: "q", Kind: "quay", Secret: sec},
		"no secret":      {Name: "h", Kind: generator.SourceHarbor},
		"host with path": {Name: "h", Kind: generator.SourceHarbor, Secret: sec, Host: "harbor.example.org/x"},
	} {
		if err := (&generator.Webhook{Sources: []generator.WebhookSource{src}}).Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	twice := []generator.WebhookSource{{Name: "h", Kind: generator.SourceHarbor, Secret: sec}, {Name: "h", Kind: generator.SourceGHCR, Secret: sec}}
	if err := (&generator.Webhook{Sources: twice}).Check(); err == nil {
		t.Error("a name twice: accepted")
	}
}

// A registry may notify a push before it serves it: distribution sends the
// event when the manifest is stored, then links the tag into the tag list,
// then points the tag at the manifest. The registry here is held in those
// states (by a middleware, not by timing) while the webhook's event is
// handled: the webhook refreshes only once the pushed tag is served, and
// forgets the cached list only then, so that a request in between (the
// ApplicationSet's own poll, which caches the list without the version for
// the list TTL) cannot hide the version; and a request that finds the tag
// listed but not served says so, instead of "version X not found
// (available: …, X)". TestFleetWebhook (test/e2e) failed once with that
// message at load 45: the refresh came before the tag.
func TestWebhookRefreshesOnceThePushedTagIsServed(t *testing.T) {
	const pushed = "4.0.0"
	const (
		normal     = iota
		stored     // the manifest stored and notified; the tag not written
		listedOnly // the tag listed, not pointing at its manifest yet
	)
	var phase atomic.Int32
	refused := make(chan struct{}, 1000)
	manifest := "/v2/ocm/component-descriptors/" + podinfo + "/manifests/" + pushed
	tagList := "/v2/ocm/component-descriptors/" + podinfo + "/tags/list"
	mw := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := phase.Load()
			switch {
			case p != normal && r.URL.Path == manifest && (r.Method == http.MethodGet || r.Method == http.MethodHead):
				refused <- struct{}{}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprintf(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{"Tag":%q}}]}`, pushed)
			case p == stored && r.URL.Path == tagList && r.Method == http.MethodGet:
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r)
				var list struct {
					Name string   `json:"name"`
					Tags []string `json:"tags"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				list.Tags = slices.DeleteFunc(list.Tags, func(s string) bool { return s == pushed })
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(list)
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
	f := newFixture(t, registrytest.WithMiddleware(mw))
	g := f.generator(t, generator.Options{ListTTL: time.Hour})
	q := query(t, map[string]any{"repository": f.repo, "component": podinfo})
	newest := func(g *generator.Generator) (string, error) {
		out, err := g.Generate(context.Background(), q)
		if err != nil {
			return "", err
		}
		return out[0]["version"].(string), nil
	}
	// The ApplicationSet controller asks the generator as soon as it is
	// refreshed: so does this one, and keeps what it got.
	type outcome struct {
		version string
		err     error
	}
	outcomes := make(chan outcome, 10)
	sets := &generatingAppSets{fakeAppSets: newFakeAppSets(generator.AppSet{Namespace: "argocd", Name: "exact",
		Inputs: []map[string]any{{"repository": f.repo, "component": podinfo}}}),
		generate: func() { v, err := newest(g); outcomes <- outcome{v, err} }}
	u := serveWebhook(t, g, sets, generator.WebhookSource{Name: "local", Kind: generator.SourceDistribution, Secret: secretFile(t, webhookSecret)})
	if v, err := newest(g); err != nil || v != "3.0.0" {
		t.Fatalf("newest before the push: %s %v", v, err)
	}

	phase.Store(stored)
	f.reg.Push(t, "ocm", app(podinfo, pushed))
	event := `{"events":[{"action":"push","target":{"repository":"ocm/component-descriptors/` + podinfo + `","tag":"` + pushed + `"},"request":{"host":"` + f.reg.Host + `"}}]}`
	if status, body := sendEvent(t, u+generator.PathWebhook+"local", map[string]string{"Authorization": "Bearer " + webhookSecret}, []byte(event)); status != http.StatusAccepted {
		t.Fatalf("event: %d %s", status, body)
	}
	select {
	case <-refused: // the webhook asked for the pushed tag, and was refused
	case o := <-outcomes:
		t.Fatalf("the ApplicationSet was refreshed before the registry served the pushed tag (newest %q, %v)", o.version, o.err)
	case <-time.After(time.Minute):
		t.Fatal("the webhook neither asked for the pushed tag nor refreshed within a minute")
	}
	// The ApplicationSet's poll in between: the registry does not list
	// the version yet, and the generator keeps that list for an hour.
	if v, err := newest(g); err != nil || v != "3.0.0" {
		t.Fatalf("newest while the tag is not written: %s %v, want 3.0.0", v, err)
	}
	// The tag listed, not served: the message says what is so.
	phase.Store(listedOnly)
	_, err := newest(f.generator(t, generator.Options{ListTTL: -1}))
	if err == nil || errors.Is(err, errdef.ErrNotFound) || !strings.Contains(err.Error(), "lists its tag "+pushed+" but serves no manifest for it") ||
		strings.Contains(err.Error(), "not found") {
		t.Fatalf("a tag listed but not served: %v, want an error that is no ErrNotFound and says the tag is listed but not served", err)
	}
	select {
	case o := <-outcomes:
		t.Fatalf("the ApplicationSet was refreshed before the registry served the pushed tag (newest %q, %v)", o.version, o.err)
	default:
	}

	phase.Store(normal)
	select {
	case o := <-outcomes:
		if o.err != nil || o.version != pushed {
			t.Fatalf("the refresh's request: newest %q, %v; want %s", o.version, o.err, pushed)
		}
	case <-time.After(time.Minute):
		t.Fatal("no refresh within a minute of the registry serving the pushed tag")
	}
}

// generatingAppSets asks the generator on each refresh, as the
// ApplicationSet controller does.
type generatingAppSets struct {
	*fakeAppSets
	generate func()
}

func (s *generatingAppSets) Refresh(ctx context.Context, ns, name string) error {
	s.generate()
	return s.fakeAppSets.Refresh(ctx, ns, name)
}
