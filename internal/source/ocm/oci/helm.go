package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// HelmAccess is a helm access specification.
type HelmAccess struct {
	// Repository is helmRepository: https://charts.example.com/stable,
	// http://… (plain HTTP, only for allowed hosts) or oci://host/path.
	Repository string
	// Chart is helmChart: "name" or "name:version".
	Chart string
	// Version of the chart; must agree with a version in Chart.
	Version string
	// CACert is PEM CA certificates trusted for this repository, in addition
	// to the client's.
	CACert string
}

// HelmAccessOf reads a helm access's fields.
func HelmAccessOf(acc ocm.Access) (HelmAccess, error) {
	if acc.Kind() != ocm.AccessHelm {
		return HelmAccess{}, fmt.Errorf("%w: %s is not a helm access", errdef.ErrUnsupportedAccess, acc.Type)
	}
	return HelmAccess{Repository: acc.String("helmRepository"), Chart: acc.String("helmChart"),
		Version: acc.String("version"), CACert: acc.String("caCert")}, nil
}

// NameVersion splits Chart and checks it against Version.
func (h HelmAccess) NameVersion() (string, string, error) {
	name, version, _ := strings.Cut(h.Chart, ":")
	switch {
	case version == "":
		version = h.Version
	case h.Version != "" && h.Version != version:
		return "", "", fmt.Errorf("%w: helm access: helmChart %s and version %s disagree", errdef.ErrInvalidInput, errdef.Quote(h.Chart), errdef.Quote(h.Version))
	}
	if name == "" || strings.ContainsAny(name, "/\\?#@ ") || name == "." || name == ".." {
		return "", "", fmt.Errorf("%w: helm access: chart name %s", errdef.ErrInvalidInput, errdef.Quote(name))
	}
	if version == "" {
		return "", "", fmt.Errorf("%w: helm access for chart %s has no version", errdef.ErrInvalidInput, name)
	}
	return name, version, nil
}

type helmIndex struct {
	Entries map[string][]helmEntry `json:"entries"`
}

type helmEntry struct {
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

// OpenHelm implements ArtifactResolver.
func (c *Client) OpenHelm(ctx context.Context, h HelmAccess) (*Chart, error) {
	name, version, err := h.NameVersion()
	if err != nil {
		return nil, err
	}
	repoURL := strings.TrimSuffix(strings.TrimSpace(h.Repository), "/")
	if strings.HasPrefix(strings.ToLower(repoURL), "oci://") {
		// Helm writes "+" of a version as "_" in OCI tags.
		return c.OpenChart(ctx, repoURL+"/"+name+":"+strings.ReplaceAll(version, "+", "_"))
	}
	base, err := url.Parse(repoURL + "/")
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("%w: helmRepository %s is not an http(s):// or oci:// URL", errdef.ErrInvalidInput, errdef.Quote(registry.Sanitize(h.Repository)))
	}
	if base.User != nil {
		return nil, fmt.Errorf("%w: helmRepository must not carry credentials; use the environment or a docker config", errdef.ErrInvalidInput)
	}
	if err := c.reg.Allow(base.Host, base.Path); err != nil {
		return nil, err
	}
	hc, err := c.reg.HTTPClientWithCA([]byte(h.CACert))
	if err != nil {
		return nil, err
	}
	opCtx, cancel := c.op(ctx)
	ch, err := c.helmChart(opCtx, hc, base, h.CACert, name, version)
	if err != nil {
		cancel()
		return nil, err
	}
	ch.cancel = cancel
	return ch, nil
}

// helmChart looks the chart version up in the index of the helm repository
// at base and opens it, through the cache when the index names its digest.
func (c *Client) helmChart(ctx context.Context, hc *http.Client, base *url.URL, caCert, name, version string) (*Chart, error) {
	idx, err := c.indexes.Do(ctx, base.String()+"\x00"+caCert, func(ctx context.Context) (*helmIndex, error) {
		return c.fetchIndex(ctx, hc, base)
	})
	if err != nil {
		return nil, err
	}
	entry, err := findHelmEntry(idx, base, name, version)
	if err != nil {
		return nil, err
	}
	u, err := base.Parse(entry.URLs[0])
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%w: helm repository %s: chart URL %s", errdef.ErrInvalidDescriptor, base.Redacted(), errdef.Quote(registry.Sanitize(entry.URLs[0])))
	}
	get := func(ctx context.Context) (io.ReadCloser, error) {
		return c.httpGet(ctx, hc, base, u, "fetch chart", name+":"+version)
	}
	ref := registry.Sanitize(u.String())
	if d, err := blob.Normalize("sha256:" + entry.Digest); err == nil {
		var rc io.ReadCloser
		if c.reg.Gated() {
			// Under a policy the shared cache must not answer for a digest
			// merely because an index names it: the index may be another
			// tenant's, naming a chart it does not serve. It answers for a
			// chart URL that served the chart (verified) to this credential
			// before; otherwise the chart is downloaded and must have that
			// digest (see Client.vouch).
			cred := "anonymous" // httpGet sends credentials to base's origin only
			if registry.SameOrigin(u, base) {
				cred = c.reg.CredentialKeyForURL(u)
			}
			rc, err = c.cache.FetchVouched(ctx, cache.Vouch{Credential: cred, Source: u.String(), Digest: d}, -1, get)
		} else {
			rc, err = c.cache.Fetch(ctx, d, -1, get)
		}
		if err != nil {
			var named *registry.Error
			if errors.Is(err, errdef.ErrDigestMismatch) && !errors.As(err, &named) {
				err = fmt.Errorf("helm repository %s: chart %s:%s: %w", base.Redacted(), name, version, err)
			}
			return nil, err
		}
		size := int64(-1)
		if f, ok := rc.(interface{ Size() int64 }); ok {
			size = f.Size()
		}
		return &Chart{ReadCloser: rc, reference: ref, digest: d, size: size}, nil
	}
	return c.readHelmChart(ctx, get, base, ref, name, version)
}

// findHelmEntry is the index entry of the chart version (a leading "v"
// aside); its error lists the versions the index has.
func findHelmEntry(idx *helmIndex, base *url.URL, name, version string) (*helmEntry, error) {
	var entry *helmEntry
	var known []string
	for i, e := range idx.Entries[name] {
		known = append(known, e.Version)
		if e.Version == version || strings.TrimPrefix(e.Version, "v") == strings.TrimPrefix(version, "v") {
			entry = &idx.Entries[name][i]
			break
		}
	}
	if entry == nil || len(entry.URLs) == 0 {
		if len(known) == 0 {
			return nil, fmt.Errorf("chart %s %w in helm repository %s", name, errdef.ErrNotFound, base.Redacted())
		}
		SortVersions(known)
		return nil, fmt.Errorf("chart %s version %s %w in helm repository %s (available: %s)", name, version, errdef.ErrNotFound, base.Redacted(), errdef.Cut(strings.Join(known, ", ")))
	}
	return entry, nil
}

// readHelmChart reads a chart the index names no digest of (bounded), to
// name it by its content, and stores it in the cache.
func (c *Client) readHelmChart(ctx context.Context, get func(context.Context) (io.ReadCloser, error), base *url.URL, ref, name, version string) (*Chart, error) {
	rc, err := get(ctx)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(rc, c.o.maxBlob+1))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("helm repository %s: chart %s:%s: %w", base.Redacted(), name, version, err)
	}
	if int64(len(b)) > c.o.maxBlob {
		return nil, fmt.Errorf("%w: chart %s:%s is more than %d bytes", errdef.ErrLimitExceeded, name, version, c.o.maxBlob)
	}
	d := blob.Digest(b)
	_ = c.cache.Put(ctx, d, bytes.NewReader(b))
	return &Chart{ReadCloser: io.NopCloser(bytes.NewReader(b)), reference: ref, digest: d, size: int64(len(b))}, nil
}

func (c *Client) fetchIndex(ctx context.Context, hc *http.Client, base *url.URL) (*helmIndex, error) {
	u, _ := base.Parse("index.yaml")
	rc, err := c.httpGet(ctx, hc, base, u, "fetch chart index", "index.yaml")
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, c.o.maxIndex+1))
	if err != nil {
		return nil, fmt.Errorf("helm repository %s: index.yaml: %w", base.Redacted(), err)
	}
	if int64(len(b)) > c.o.maxIndex {
		return nil, fmt.Errorf("%w: helm repository %s: index.yaml is more than %d bytes", errdef.ErrLimitExceeded, base.Redacted(), c.o.maxIndex)
	}
	var idx helmIndex
	if err := yaml.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%w: helm repository %s: index.yaml: %v", errdef.ErrInvalidDescriptor, base.Redacted(), err)
	}
	return &idx, nil
}

// httpGet GETs u, after the registry client's gate allowed it.
func (c *Client) httpGet(ctx context.Context, hc *http.Client, base, u *url.URL, op, what string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, op, err)
	}
	// The gate is asked for every URL, the index's chart URLs included: they
	// are content the plugin reads, not a protocol step of an allowed server.
	if err := c.reg.Allow(u.Host, u.Path); err != nil {
		return nil, err
	}
	// Credentials of the repository's origin go to that origin only (chart
	// URLs may point elsewhere, e.g. release downloads); redirects to another
	// origin lose them (see registry.SameOrigin).
	if registry.SameOrigin(u, base) {
		cred, err := c.reg.CredentialForURL(ctx, u)
		if err != nil {
			return nil, err
		}
		switch {
		case cred.AccessToken != "":
			req.Header.Set("Authorization", "Bearer "+cred.AccessToken)
		case cred.Username != "" || cred.Password != "":
			req.SetBasicAuth(cred.Username, cred.Password)
		}
	}
	ref := imageref.Reference{Registry: u.Host, Repository: strings.TrimPrefix(base.Path, "/"), Tag: what}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, c.reg.Wrap(err, op, ref)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		e := &registry.Error{Op: op, Registry: u.Host, Repository: ref.Repository, Reference: what, StatusCode: resp.StatusCode}
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			e.Kind = errdef.ErrUnauthorized
		case http.StatusNotFound:
			e.Kind = errdef.ErrNotFound
		}
		return nil, e
	}
	return resp.Body, nil
}
