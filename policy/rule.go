package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
)

// Rule is the resolved rule of one generation: what the Application may
// make the plugin do. It implements registry.Gate.
type Rule struct {
	// Name of the rule ("default" for the default rule), and the project
	// it was resolved for ("" when Argo CD did not pass one).
	Name, Project string
	// Source is where the rule comes from: "sidecar policy FILE" or "environment".
	Source string
	// Repositories the Application may use (unless anyRepository).
	Repositories []RepositoryPattern
	// Credentials the rule names; nothing else is sent (unless DefaultCredentials).
	Credentials []Credential
	// DefaultCredentials: the sidecar's own credentials (ARGOCD_OCM_REGISTRY_*,
	// Docker config), each for its exact host: the rule without a policy.
	DefaultCredentials bool
	// PlainHTTP are the hosts reached without TLS, with credentials.
	PlainHTTP []string
	// StrictPlainHTTP: no other host over plain HTTP, even when the
	// Application writes http:// (with a policy).
	StrictPlainHTTP bool
	// LocalArchives: CTFs and component archives of the Application's checkout.
	LocalArchives bool
	// Signatures that must verify.
	Signatures []Signature
	// ChartSignatures: charts read from a registry need a cosign signature
	// one of these verifies.
	ChartSignatures []ChartSignature
	// RequireComponentImages turns on the image origin guard (package guard).
	RequireComponentImages bool
	// Platform: may children leave the parent's project and destination.
	Platform Platform
	// Provenance: every object is annotated with its provenance, whatever
	// the Application asks (EnvProvenance).
	Provenance bool
	// AllowAddresses are what Applications may reach beyond the default
	// (loopback, link-local, metadata and the like are refused; see
	// registry.AddressPolicy).
	AllowAddresses []string
	// AnyAddress lifts that refusal: for commands a person runs (render),
	// not for generations on an Application's behalf.
	AnyAddress bool

	// Mirrors are the policy's registry mirrors, for every rule, and
	// MirrorCredentials the credentials their endpoints name, by name
	// (whatever the rule's own Credentials).
	Mirrors           []MirrorSpec
	MirrorCredentials map[string]Credential

	anyRepository           bool
	legacyNames, legacyKeys []string
}

var _ registry.Gate = (*Rule)(nil)

// AllowsAnyRepository reports whether the rule allows every repository (the
// rule without a policy).
func (r *Rule) AllowsAnyRepository() bool { return r.anyRepository }

// AllowRepository implements registry.Gate: host (host[:port]) and path
// (an OCI repository, or a Helm repository's URL path) must match one of the
// rule's patterns. The refusal names only what was asked for, so it is the
// same whatever is listening there.
func (r *Rule) AllowRepository(host, p string) error {
	if r.anyRepository {
		return nil
	}
	host = registry.CanonicalHost(host)
	p = strings.Trim(p, "/")
	if r.matches(host, p) {
		return nil
	}
	what := host
	if p != "" {
		what += "/" + p
	}
	return fmt.Errorf("%w: repository %s is not allowed for project %s (rule %s)", errdef.ErrForbidden, errdef.Quote(what), errdef.Quote(r.Project), r.Name)
}

func (r *Rule) matches(host, p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." || (seg == "" && p != "") {
			return false // never normalised here: the server might not agree
		}
	}
	h := strings.TrimSuffix(host, ":443")
	for _, rp := range r.Repositories {
		pat := strings.TrimSuffix(strings.ToLower(rp.Host), ":443")
		if ok, _ := path.Match(pat, h); !ok {
			continue
		}
		if prefixMatch(rp.PathPrefix, p) {
			return true
		}
	}
	return false
}

// prefixMatch matches p against a prefix of whole segments, each a glob.
func prefixMatch(prefix, p string) bool {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return true
	}
	want := strings.Split(prefix, "/")
	got := strings.Split(p, "/")
	if p == "" || len(got) < len(want) {
		return false
	}
	for i, w := range want {
		if ok, _ := path.Match(w, got[i]); !ok {
			return false
		}
	}
	return true
}

// AllowLocalArchive refuses a CTF or component archive when the rule does
// not allow them.
func (r *Rule) AllowLocalArchive() error {
	if r.LocalArchives {
		return nil
	}
	return fmt.Errorf("%w: local CTFs and component archives are not allowed for project %s (rule %s)", errdef.ErrForbidden, errdef.Quote(r.Project), r.Name)
}

// ForPerson is r for a command a person runs (render, verify, convert,
// transfer), not a generation on an Application's behalf: connections may
// go to any address. What else a person decides instead of the rule is the
// caller's (argocdocm.Person).
func (r *Rule) ForPerson() *Rule {
	p := *r
	p.AnyAddress = true
	return &p
}

// SignatureFlags are the signature names with their public key files and
// root CA files, as the --signature, --public-key and --root-ca flags take
// them: with a policy one entry of each per name ("" where the policy names
// none); without a policy ARGOCD_OCM_SIGNATURE and ARGOCD_OCM_PUBLIC_KEY (one
// key per name, or one for every name; a CA certificate there is a root by
// its content) and no root CA files.
func (r *Rule) SignatureFlags() (names, keys, roots []string) {
	if r.Source == "environment" {
		return r.legacyNames, r.legacyKeys, nil
	}
	for _, s := range r.Signatures {
		names, keys, roots = append(names, s.Name), append(keys, s.PublicKey), append(roots, s.RootCA)
	}
	return names, keys, roots
}
