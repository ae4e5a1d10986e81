package policy

import (
	"errors"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
)

// MirrorSpec names the pull-through caches (registry mirrors) of one
// upstream registry host, in the order they are asked. Mirrors are the
// operator's: they apply to every rule, an Application cannot name or
// change them, and the rules' repository patterns are matched against the
// upstream name, never the mirror's.
type MirrorSpec struct {
	// Upstream is the exact host[:port] Applications and descriptors name.
	Upstream  string           `json:"upstream"`
	Endpoints []MirrorEndpoint `json:"endpoints"`
}

// MirrorEndpoint is one mirror of an upstream.
type MirrorEndpoint struct {
	// Host is the mirror's exact host[:port].
	Host string `json:"host"`
	// PathPrefix is where the mirror keeps the upstream's repositories
	// (a Harbor proxy project, a Zot sync destination); "" for a
	// distribution registry in proxy mode.
	PathPrefix string `json:"pathPrefix,omitempty"`
	// PlainHTTP reaches the mirror without TLS.
	PlainHTTP bool `json:"plainHTTP,omitempty"`
	// ResolveTags lets the mirror answer tags when the upstream cannot be
	// reached; by default it serves content by digest only.
	ResolveTags bool `json:"resolveTags,omitempty"`
	// Credential names an entry of credentials for exactly this host; none:
	// the mirror is read anonymously.
	Credential string `json:"credential,omitempty"`
}

func (p *Policy) validateMirrors() error {
	seen := map[string]bool{}
	for i, m := range p.file.Mirrors {
		where := fmt.Sprintf("mirrors[%d]", i)
		if err := exactHost(m.Upstream); err != nil {
			return fmt.Errorf("%s: upstream: %w", where, err)
		}
		up := registry.CanonicalHost(m.Upstream)
		where += " (" + up + ")"
		if seen[up] {
			return fmt.Errorf("%s: the upstream is listed twice: give one ordered list of endpoints", where)
		}
		seen[up] = true
		if len(m.Endpoints) == 0 {
			return fmt.Errorf("%s: endpoints is required", where)
		}
		for j, e := range m.Endpoints {
			ew := fmt.Sprintf("%s: endpoints[%d]", where, j)
			if err := exactHost(e.Host); err != nil {
				return fmt.Errorf("%s: host: %w", ew, err)
			}
			if err := pathPattern(e.PathPrefix, false); err != nil {
				return fmt.Errorf("%s: pathPrefix: %w", ew, err)
			}
			if _, err := registry.ParseMirror(e.Host + "/" + e.PathPrefix); err != nil {
				return fmt.Errorf("%s: %w", ew, err)
			}
			if registry.CanonicalHost(e.Host) == up && e.PathPrefix == "" {
				return fmt.Errorf("%s: the mirror is the upstream itself", ew)
			}
			if e.Credential == "" {
				continue
			}
			c, ok := p.creds[e.Credential]
			if !ok {
				return fmt.Errorf("%s: credential %s is not defined under credentials", ew, errdef.Quote(e.Credential))
			}
			if registry.CanonicalHost(c.Host) != registry.CanonicalHost(e.Host) {
				return errors.New(ew + ": credential " + errdef.Quote(c.Name) + " is for host " + errdef.Quote(c.Host) + ", not the mirror's: credentials go to exactly their host")
			}
			if !registry.PathHasPrefix(e.PathPrefix, c.PathPrefix) {
				return fmt.Errorf("%s: credential %s is for path %s, which does not cover the mirror's pathPrefix", ew, errdef.Quote(c.Name), errdef.Quote(c.PathPrefix))
			}
		}
	}
	return nil
}
