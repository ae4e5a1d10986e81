package generator

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// PathWebhook is where registries send push events: POST
// /api/v1/webhook/<source name>.
const PathWebhook = "/api/v1/webhook/"

// Kinds of webhook sources: what the registry sends and how it proves who
// it is.
const (
	// SourceDistribution: CNCF distribution notifications
	// (application/vnd.docker.distribution.events.v2+json), the secret in
	// the endpoint's headers as "Authorization: Bearer <secret>".
	SourceDistribution = "distribution"
	// SourceHarbor: a Harbor webhook policy (PUSH_ARTIFACT), the secret as
	// its auth header ("<secret>" or "Bearer <secret>").
	SourceHarbor = "harbor"
	// SourceGHCR: a GitHub "package" webhook (ghcr.io), signed with the
	// webhook's secret (X-Hub-Signature-256).
	SourceGHCR = "ghcr"
)

// Defaults of Webhook.
const (
	// DefaultWebhookBodyBytes bounds an event body: distribution batches a
	// few events of about 1 KiB, GitHub's package events are 10–30 KiB.
	DefaultWebhookBodyBytes = 1 << 20
	// maxPushesPerEvent bounds the pushes one body may name.
	maxPushesPerEvent = 256
	// webhookQueue bounds the event batches waiting for their refresh.
	webhookQueue = 64
	// refreshTimeout bounds listing and refreshing the ApplicationSets of a batch.
	refreshTimeout = 30 * time.Second
	// settleTimeout bounds how long a batch waits for the registry to
	// serve its pushed tags (see Webhook.refresh).
	settleTimeout = 10 * time.Second
)

// WebhookSource is a registry that may send push events, with its own
// secret (a registry's secret never authorizes another source, nor the
// parameter requests).
type WebhookSource struct {
	// Name is the last path segment of its endpoint.
	Name string
	// Kind is SourceDistribution, SourceHarbor or SourceGHCR.
	Kind string
	// Secret returns the source's secret (see TokenFile; at least MinTokenLen bytes).
	Secret TokenSource
	// Host is the registry's host[:port] as ApplicationSets name it in their
	// repository parameter. Empty: the host the event names (distribution's
	// request host, Harbor's resource URL, ghcr.io).
	Host string
}

// Push is a tag pushed to a registry repository.
type Push struct {
	Host, Repository, Tag string
}

// AppSet is an ApplicationSet with the input parameters of each of its
// plugin generators (nested in matrix and merge generators too) that ask
// this generator.
type AppSet struct {
	Namespace, Name string
	Inputs          []map[string]any
}

// AppSets lists the ApplicationSets that use this generator and asks Argo
// CD to refresh one (argocd.argoproj.io/application-set-refresh: its
// controller then asks the generator at once, without waiting for
// requeueAfterSeconds).
type AppSets interface {
	List(ctx context.Context) ([]AppSet, error)
	Refresh(ctx context.Context, namespace, name string) error
}

// Webhook turns registry push events into ApplicationSet refreshes: a push
// of a component version forgets what the generator cached of that
// component and refreshes the ApplicationSets whose plugin generator lists
// it, so that the new version becomes an Application within seconds
// without polling.
//
// Events are authenticated per source before their body is parsed (the
// GHCR signature covers the body, which is read first, bounded); a refused
// request learns nothing but "wrong or missing secret", whether the source
// exists or not. Refreshes run after the answer (202), one batch at a time.
type Webhook struct {
	Sources   []WebhookSource
	AppSets   AppSets
	Generator *Generator // its caches of a pushed component are dropped; nil: none
	// MaxBodyBytes: see DefaultWebhookBodyBytes (0 keeps it).
	MaxBodyBytes int64
	Log          *slog.Logger

	once  sync.Once
	queue chan []target
	done  chan struct{}
}

// target is a component in a registry repository prefix, as a push names it.
type target struct {
	host, prefix, component, tag string
}

// Start starts the refresh worker; it ends with ctx. ServeHTTP starts it
// (with a background context) when Start was not called.
func (wh *Webhook) Start(ctx context.Context) {
	wh.once.Do(func() {
		if wh.MaxBodyBytes <= 0 {
			wh.MaxBodyBytes = DefaultWebhookBodyBytes
		}
		if wh.Log == nil {
			wh.Log = slog.New(slog.DiscardHandler)
		}
		wh.queue = make(chan []target, webhookQueue)
		wh.done = make(chan struct{})
		go wh.work(ctx)
	})
}

// Check validates the sources: names, kinds, hosts; each secret is read
// when a request comes (a rotated Secret is in force without a restart).
func (wh *Webhook) Check() error {
	seen := map[string]bool{}
	for _, s := range wh.Sources {
		if s.Name == "" || len(s.Name) > 63 || strings.Trim(s.Name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return fmt.Errorf("%w: webhook source name %s: want lower-case letters, digits and '-' (at most 63)", errdef.ErrInvalidInput, errdef.Quote(s.Name))
		}
		if seen[s.Name] {
			return fmt.Errorf("%w: webhook source %s is listed twice", errdef.ErrInvalidInput, s.Name)
		}
		seen[s.Name] = true
		switch s.Kind {
		case SourceDistribution, SourceHarbor, SourceGHCR:
		default:
			return fmt.Errorf("%w: webhook source %s: kind %s: want %s, %s or %s", errdef.ErrInvalidInput, s.Name, errdef.Quote(s.Kind), SourceDistribution, SourceHarbor, SourceGHCR)
		}
		if s.Secret == nil {
			return fmt.Errorf("%w: webhook source %s has no secret", errdef.ErrInvalidInput, s.Name)
		}
		if strings.ContainsAny(s.Host, "/@?# ") {
			return fmt.Errorf("%w: webhook source %s: host %s is not host[:port]", errdef.ErrInvalidInput, s.Name, errdef.Quote(s.Host))
		}
	}
	return nil
}

var errWebhookAuth = errors.New("wrong or missing secret")

// ServeHTTP answers POST /api/v1/webhook/<source>: 202 once the event is
// authenticated, parsed and queued (200 for an event that names no
// component push), 403 for a wrong or missing secret or an unknown source,
// 400 for a malformed event, 413 for a body over the bound, 503 when the
// queue is full.
func (wh *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	wh.Start(context.Background())
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		refuse(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	name := strings.TrimPrefix(r.URL.Path[strings.Index(r.URL.Path, PathWebhook):], PathWebhook)
	var src *WebhookSource
	for i := range wh.Sources {
		if wh.Sources[i].Name == name {
			src = &wh.Sources[i]
		}
	}
	if src == nil {
		wh.Log.Warn("webhook refused: no such source", "remote", r.RemoteAddr)
		refuse(w, http.StatusForbidden, errWebhookAuth.Error())
		return
	}
	secret, err := src.Secret()
	if err != nil || len(secret) == 0 {
		if err != nil {
			wh.Log.Error("webhook source without a usable secret: its events are refused", "source", src.Name, "cause", err.Error())
		}
		refuse(w, http.StatusForbidden, errWebhookAuth.Error())
		return
	}
	// Header secrets before the body: an unauthenticated caller gets no
	// body read and no parsing.
	if src.Kind != SourceGHCR && !headerSecret(r.Header.Get("Authorization"), secret) {
		wh.Log.Warn("webhook refused: wrong or missing secret", "source", src.Name, "remote", r.RemoteAddr)
		refuse(w, http.StatusForbidden, errWebhookAuth.Error())
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wh.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("event body larger than %d bytes", wh.MaxBodyBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "reading the event body failed")
		return
	}
	if src.Kind == SourceGHCR && !signedBy(r.Header.Get("X-Hub-Signature-256"), body, secret) {
		wh.Log.Warn("webhook refused: wrong or missing signature", "source", src.Name, "remote", r.RemoteAddr)
		refuse(w, http.StatusForbidden, errWebhookAuth.Error())
		return
	}
	pushes, err := parseEvent(src.Kind, r.Header, body)
	if err != nil {
		wh.Log.Warn("webhook event refused", "source", src.Name, "error", err.Error())
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	targets := componentTargets(pushes, src.Host)
	if len(targets) == 0 {
		wh.Log.Info("webhook event: no component version pushed", "source", src.Name, "pushes", len(pushes))
		w.WriteHeader(http.StatusOK)
		return
	}
	select {
	case wh.queue <- targets:
		wh.Log.Info("webhook event accepted", "source", src.Name, "component", targets[0].component, "tag", targets[0].tag, "pushes", len(targets))
		w.WriteHeader(http.StatusAccepted)
	default:
		wh.Log.Warn("webhook event dropped: the refresh queue is full", "source", src.Name)
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "too many events waiting; retry later")
	}
}

// headerSecret compares an Authorization header with the secret, as
// "Bearer <secret>" or the bare secret (Harbor sends its auth header as
// configured), in constant time over SHA-256 digests: neither the secret
// nor its length shows in the time taken.
func headerSecret(header string, secret []byte) bool {
	got := strings.TrimSpace(header)
	if scheme, rest, ok := strings.Cut(got, " "); ok && strings.EqualFold(scheme, "Bearer") {
		got = strings.TrimSpace(rest)
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256(secret)
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// signedBy checks GitHub's X-Hub-Signature-256 (HMAC-SHA256 of the body).
func signedBy(header string, body, secret []byte) bool {
	got, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil))
}

// componentTargets keeps the pushes of OCM component descriptors
// (<prefix>/component-descriptors/<component>, tagged), each once.
func componentTargets(pushes []Push, host string) []target {
	marker := ocm.DescriptorRepository("")
	seen := map[target]bool{}
	var out []target
	for _, p := range pushes {
		repo := strings.Trim(p.Repository, "/")
		var prefix, comp string
		if c, ok := strings.CutPrefix(repo, marker); ok {
			comp = c
		} else if i := strings.Index(repo, "/"+marker); i >= 0 {
			prefix, comp = repo[:i], repo[i+1+len(marker):]
		}
		if comp == "" || p.Tag == "" {
			continue
		}
		t := target{host: strings.ToLower(p.Host), prefix: prefix, component: comp, tag: p.Tag}
		if host != "" {
			t.host = strings.ToLower(host)
		}
		if t.host == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

// work refreshes the ApplicationSets of each queued batch.
func (wh *Webhook) work(ctx context.Context) {
	defer close(wh.done)
	for {
		select {
		case <-ctx.Done():
			return
		case batch := <-wh.queue:
			wh.refresh(ctx, batch)
		}
	}
}

// refresh waits until the registry serves the pushed tags, then forgets
// what the generator cached of their components and refreshes the
// ApplicationSets that list them.
//
// The wait comes first because a registry may notify a push before it
// serves it: distribution sends its event when the manifest is stored,
// before it writes the tag, and links the tag into the tag list before it
// points the tag at the manifest. A refresh at once could list the version
// and then fail to resolve it (the ApplicationSet controller then retries
// only minutes later), or list the versions without it and keep that list
// for the list TTL; and a forget before the tag is served would let any
// request in between cache that list again.
func (wh *Webhook) refresh(ctx context.Context, batch []target) {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	start := time.Now()
	sets, err := wh.AppSets.List(ctx)
	if err != nil {
		wh.forget(batch)
		wh.Log.Error("webhook: listing ApplicationSets failed; they refresh at their next poll", "error", err.Error())
		return
	}
	type hit struct {
		set AppSet
		t   *target
	}
	var hits []hit
	// The repository of each listed target as an ApplicationSet names it:
	// what its refresh will read.
	repos := map[int]string{}
	for _, s := range sets {
		var first *target
		for _, in := range s.Inputs {
			for i := range batch {
				if !lists(in, batch[i]) {
					continue
				}
				if first == nil {
					first = &batch[i]
				}
				if repo, _ := in["repository"].(string); !templated(repo) && repos[i] == "" {
					repos[i] = repo
				} else if _, ok := repos[i]; !ok {
					repos[i] = ""
				}
			}
		}
		if first != nil {
			hits = append(hits, hit{s, first})
		}
	}
	wh.awaitServed(ctx, batch, repos)
	wh.forget(batch)
	for _, h := range hits {
		if err := wh.AppSets.Refresh(ctx, h.set.Namespace, h.set.Name); err != nil {
			wh.Log.Error("webhook: refreshing an ApplicationSet failed; it refreshes at its next poll", "applicationSet", h.set.Namespace+"/"+h.set.Name, "error", err.Error())
			continue
		}
		wh.Log.Info("webhook: ApplicationSet refreshed", "applicationSet", h.set.Namespace+"/"+h.set.Name,
			"component", h.t.component, "tag", h.t.tag, "ms", time.Since(start).Milliseconds())
	}
}

func (wh *Webhook) forget(batch []target) {
	if wh.Generator == nil {
		return
	}
	for _, t := range batch {
		wh.Generator.Forget(t.host, t.prefix, t.component)
	}
}

// awaitServed waits, at most settleTimeout for the batch, until the
// registry serves each pushed tag that an ApplicationSet lists, asking it
// again after 20 ms, 40 ms, … at most every 500 ms. repos holds the listed
// targets (by index in batch) and the repository an ApplicationSet names
// each by ("": only templated ones; then the registry and prefix of the
// event). A repository that cannot tell (refused by the gate, unreachable)
// is not waited for.
func (wh *Webhook) awaitServed(ctx context.Context, batch []target, repos map[int]string) {
	if wh.Generator == nil || len(repos) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for i, t := range batch {
		repo, listed := repos[i]
		if !listed {
			continue
		}
		if repo == "" {
			repo = t.host
			if t.prefix != "" {
				repo += "/" + t.prefix
			}
		}
		for delay := 20 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
			err := wh.Generator.served(ctx, repo, t.component, t.tag)
			if err == nil {
				break
			}
			if !errors.Is(err, errdef.ErrNotFound) || ctx.Err() != nil {
				wh.Log.Warn("webhook: cannot tell whether the registry serves the pushed tag; refreshing now", "component", t.component, "tag", t.tag, "error", err.Error())
				break
			}
			select {
			case <-time.After(delay):
				continue
			case <-ctx.Done():
			}
			wh.Log.Warn("webhook: the registry does not serve the pushed tag yet; refreshing now", "component", t.component, "tag", t.tag, "waited", settleTimeout.String())
			return
		}
	}
}

// lists reports whether a plugin generator's input parameters may list the
// pushed component: its repository is that registry and prefix (a
// templated one, from a matrix's first generator, may be any) and its
// component that name or a prefix pattern over it (templated: any).
func lists(in map[string]any, t target) bool {
	repo, _ := in["repository"].(string)
	comp, _ := in["component"].(string)
	if repo == "" || comp == "" {
		return false
	}
	if !templated(repo) {
		sp, err := oci.ParseSpecIn(repo, func(string) bool { return false })
		if err != nil || sp.Type != oci.TypeOCIRegistry {
			return false
		}
		where := sp.String()
		if _, after, ok := strings.Cut(where, "://"); ok {
			where = after
		}
		host, prefix, _ := strings.Cut(where, "/")
		if !strings.EqualFold(host, t.host) || prefix != t.prefix {
			return false
		}
	}
	switch {
	case templated(comp):
		return true
	case strings.HasSuffix(comp, "/*"):
		return strings.HasPrefix(t.component, strings.TrimSuffix(comp, "*"))
	default:
		return comp == t.component
	}
}

func templated(s string) bool { return strings.Contains(s, "{{") }
