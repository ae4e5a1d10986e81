package policy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// Identity of the file format.
const (
	APIVersion = "argocd-ocm-plugin.io/v1alpha1"
	Kind       = "SidecarPolicy"
)

// Environment variables.
const (
	// EnvPolicy names the policy file (a mounted ConfigMap key).
	EnvPolicy = "ARGOCD_OCM_POLICY"
	// EnvProject is the Application's Argo CD project, set by the repo-server
	// (Argo CD 3.0 and later) in every generation's environment.
	EnvProject = "ARGOCD_APP_PROJECT_NAME"
	// Shorthands of the default rule when there is no policy.
	EnvPlainHTTP = "ARGOCD_OCM_PLAIN_HTTP"
	EnvSignature = "ARGOCD_OCM_SIGNATURE"
	EnvPublicKey = "ARGOCD_OCM_PUBLIC_KEY"
	// EnvAllowAddresses: addresses beyond the default (see
	// registry.AddressPolicy), comma-separated.
	EnvAllowAddresses = registry.EnvAllowAddresses

	// The tenancy switches: with or without a policy, each adds to what the
	// rule requires or allows, never takes anything away, and a misspelt
	// one is an error, not "off" (see Switches).

	// EnvRequireComponentImages "true": the image origin guard for every
	// Application (Rule.RequireComponentImages).
	EnvRequireComponentImages = "ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES"
	// EnvPlatformAllowOtherProjects "true": a platform config may give child
	// Applications another project than their parent's (and platforms render
	// on Argo CD before 3.0, which does not pass the parent's project).
	EnvPlatformAllowOtherProjects = "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_PROJECTS"
	// EnvPlatformAllowOtherDestinations "true": a platform config may send
	// child Applications to another cluster or namespace.
	EnvPlatformAllowOtherDestinations = "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_DESTINATIONS"
	// EnvProvenance "true": every object is annotated with its provenance,
	// whatever the Application asks (Rule.Provenance).
	EnvProvenance = "ARGOCD_OCM_PROVENANCE"
)

// MaxFileSize bounds the policy file.
const MaxFileSize = 1 << 20

// File is the policy file as written.
type File struct {
	APIVersion  string       `json:"apiVersion"`
	Kind        string       `json:"kind"`
	Credentials []Credential `json:"credentials,omitempty"`
	Rules       []RuleSpec   `json:"rules,omitempty"`
	Default     *RuleSpec    `json:"default,omitempty"`
	// Mirrors are the registry mirrors of upstream hosts, for every rule (mirror.go).
	Mirrors []MirrorSpec `json:"mirrors,omitempty"`
	// AllowAddresses are the addresses Applications may make the sidecar
	// connect to beyond the default, for every rule: IP addresses, CIDR
	// ranges, hosts or host:port (see registry.AddressPolicy).
	AllowAddresses []string `json:"allowAddresses,omitempty"`
}

// Credential is a named credential for one exact host[:port], optionally
// only below a repository path prefix. Exactly one source is set; the values
// themselves stay in Secrets.
type Credential struct {
	Name       string `json:"name"`
	Host       string `json:"host"`
	PathPrefix string `json:"pathPrefix,omitempty"`
	// Env is a label: ARGOCD_OCM_REGISTRY_<Env>_USERNAME, _PASSWORD, _TOKEN
	// (each also as _FILE) of the sidecar's environment.
	Env string `json:"env,omitempty"`
	// Files holding the values (mounted Secret keys).
	UsernameFile string `json:"usernameFile,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
	TokenFile    string `json:"tokenFile,omitempty"`
	// DockerConfig is a Docker config file whose "auths" entry for Host is used.
	DockerConfig string `json:"dockerConfig,omitempty"`
}

// RuleSpec is one rule as written.
type RuleSpec struct {
	Name string `json:"name,omitempty"`
	// Projects are path.Match patterns of Argo CD project names (not for the default rule).
	Projects     []string            `json:"projects,omitempty"`
	Repositories []RepositoryPattern `json:"repositories,omitempty"`
	// Credentials names entries of File.Credentials.
	Credentials []string `json:"credentials,omitempty"`
	// PlainHTTP lists exact host[:port] that may be reached without TLS.
	PlainHTTP []string `json:"plainHTTP,omitempty"`
	// LocalArchives: CTFs and component archives of the Application's own
	// checkout may be read (default true).
	LocalArchives *bool       `json:"localArchives,omitempty"`
	Signatures    []Signature `json:"signatures,omitempty"`
	// ChartSignatures: every Helm chart read from an OCI registry (not
	// stored in the component version) must carry a cosign signature that
	// one of these verifies.
	ChartSignatures []ChartSignature `json:"chartSignatures,omitempty"`
	// RequireComponentImages turns on the image origin guard.
	RequireComponentImages bool     `json:"requireComponentImages,omitempty"`
	Platform               Platform `json:"platform,omitempty"`
}

// RepositoryPattern allows repositories: a host pattern (path.Match: "*"
// matches within the host, e.g. "*.example.com"; the port is part of the
// host, ":443" is ignored) and a path prefix of whole segments, each
// segment a path.Match pattern ("" allows the whole host).
type RepositoryPattern struct {
	Host       string `json:"host"`
	PathPrefix string `json:"pathPrefix,omitempty"`
}

// Signature is a signature that must verify: with its public key file (a
// PEM public key or certificate, or an armored OpenPGP public key for GPG
// signatures), and/or the root CA file that the certificate embedded in a
// PEM signature must chain to; or, keyless (OCM's Sigstore/v1alpha1), with a
// Sigstore trusted root file and who must have signed. At least one.
type Signature struct {
	Name      string `json:"name"`
	PublicKey string `json:"publicKey,omitempty"`
	// RootCA: PEM CA certificate(s); a leaf certificate is refused.
	RootCA string `json:"rootCA,omitempty"`
	// TrustedRoot is a Sigstore trusted_root.json (cosign's
	// --trusted-root): the Fulcio CAs, logs and timestamp authorities of
	// the public-good or a private Sigstore.
	TrustedRoot string `json:"trustedRoot,omitempty"`
	// Who must have signed, as in OCM's SigstoreVerificationConfiguration
	// (and cosign's flags of the same names): the certificate's identity and
	// OIDC issuer, each exact or a regular expression that must match the
	// whole value; an identity and an issuer are required with TrustedRoot.
	CertificateIdentity         string `json:"certificateIdentity,omitempty"`
	CertificateIdentityRegexp   string `json:"certificateIdentityRegexp,omitempty"`
	CertificateOIDCIssuer       string `json:"certificateOIDCIssuer,omitempty"`
	CertificateOIDCIssuerRegexp string `json:"certificateOIDCIssuerRegexp,omitempty"`
	// PrivateInfrastructure: the signature has no transparency log entry;
	// an RFC 3161 timestamp of the trusted root's timestamp authority is
	// required instead (OCM's privateInfrastructure, cosign's
	// --insecure-ignore-tlog).
	PrivateInfrastructure bool `json:"privateInfrastructure,omitempty"`
}

// ChartSignature is who may sign the charts a component references in a
// registry with cosign: a cosign public key, or keyless with a trusted root
// and identity (as in Signature).
type ChartSignature struct {
	PublicKey                   string `json:"publicKey,omitempty"`
	TrustedRoot                 string `json:"trustedRoot,omitempty"`
	CertificateIdentity         string `json:"certificateIdentity,omitempty"`
	CertificateIdentityRegexp   string `json:"certificateIdentityRegexp,omitempty"`
	CertificateOIDCIssuer       string `json:"certificateOIDCIssuer,omitempty"`
	CertificateOIDCIssuerRegexp string `json:"certificateOIDCIssuerRegexp,omitempty"`
	PrivateInfrastructure       bool   `json:"privateInfrastructure,omitempty"`
}

// Keyless is the entry as a keyless signature entry (no name).
func (c ChartSignature) Keyless() Signature {
	return Signature{TrustedRoot: c.TrustedRoot, CertificateIdentity: c.CertificateIdentity, CertificateIdentityRegexp: c.CertificateIdentityRegexp,
		CertificateOIDCIssuer: c.CertificateOIDCIssuer, CertificateOIDCIssuerRegexp: c.CertificateOIDCIssuerRegexp, PrivateInfrastructure: c.PrivateInfrastructure}
}

// check refuses an entry that is not exactly one of a key and a trusted
// root, and otherwise what Signature.check refuses.
func (c ChartSignature) check() error {
	if (c.PublicKey == "") == (c.TrustedRoot == "") {
		return errors.New("exactly one of publicKey (a cosign public key) and trustedRoot is required")
	}
	s := c.Keyless()
	s.Name, s.PublicKey = "chart", c.PublicKey
	return s.check()
}

// Identity is who must have signed a keyless signature.
func (s Signature) Identity() signing.Identity {
	return signing.Identity{Subject: s.CertificateIdentity, SubjectRegexp: s.CertificateIdentityRegexp,
		Issuer: s.CertificateOIDCIssuer, IssuerRegexp: s.CertificateOIDCIssuerRegexp}
}

// check refuses a signature entry that cannot verify anything.
func (s Signature) check() error {
	keyless := s.Identity() != (signing.Identity{}) || s.PrivateInfrastructure
	switch {
	case s.Name == "":
		return errors.New("name is required")
	case s.PublicKey == "" && s.RootCA == "" && s.TrustedRoot == "":
		return errors.New("publicKey, rootCA or trustedRoot is required")
	case keyless && s.TrustedRoot == "":
		return errors.New("certificateIdentity, certificateOIDCIssuer and privateInfrastructure need a trustedRoot")
	case s.TrustedRoot != "":
		return s.Identity().Check()
	}
	return nil
}

// Platform are the switches of platforms (app-of-apps): by default child
// Applications inherit the parent's project and destination.
type Platform struct {
	AllowOtherProjects     bool `json:"allowOtherProjects,omitempty"`
	AllowOtherDestinations bool `json:"allowOtherDestinations,omitempty"`
}

// Policy is a parsed, validated policy file.
type Policy struct {
	file   File
	source string
	creds  map[string]Credential
}

// Load reads and parses the policy file at p.
func Load(p string) (*Policy, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%w: sidecar policy %s: cannot open it", errdef.ErrInvalidInput, p)
	}
	defer f.Close()
	// A directory or a FIFO where the file should be would fail or block
	// every generation's read.
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: sidecar policy %s: not a regular file", errdef.ErrInvalidInput, p)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: sidecar policy %s: cannot read it", errdef.ErrInvalidInput, p)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%w: sidecar policy %s is larger than %d bytes", errdef.ErrLimitExceeded, p, MaxFileSize)
	}
	return Parse(b, p)
}

// Parse parses a policy; source names it in errors, which give the line of
// each problem (see Check).
func Parse(b []byte, source string) (*Policy, error) {
	p, problems := Check(b)
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: sidecar policy %s: %s", errdef.ErrInvalidInput, source, problemsText(problems))
	}
	p.source = source
	return p, nil
}

func (p *Policy) validate() error {
	f := p.file
	if f.APIVersion != APIVersion || f.Kind != Kind {
		return fmt.Errorf("apiVersion %s and kind %s are required", APIVersion, Kind)
	}
	for i, c := range f.Credentials {
		where := fmt.Sprintf("credentials[%d]", i)
		if c.Name == "" {
			return fmt.Errorf("%s: name is required", where)
		}
		if _, dup := p.creds[c.Name]; dup {
			return fmt.Errorf("%s: credential %s is defined twice", where, errdef.Quote(c.Name))
		}
		if err := exactHost(c.Host); err != nil {
			return fmt.Errorf("%s (%s): host: %w", where, c.Name, err)
		}
		if err := pathPattern(c.PathPrefix, false); err != nil {
			return fmt.Errorf("%s (%s): pathPrefix: %w", where, c.Name, err)
		}
		sources := 0
		if c.Env != "" {
			sources++
			if strings.Trim(c.Env, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
				return fmt.Errorf("%s (%s): env %s: want upper-case letters, digits and _", where, c.Name, errdef.Quote(c.Env))
			}
		}
		if c.UsernameFile != "" || c.PasswordFile != "" || c.TokenFile != "" {
			sources++
			if (c.UsernameFile == "") != (c.PasswordFile == "") {
				return fmt.Errorf("%s (%s): usernameFile and passwordFile go together", where, c.Name)
			}
		}
		if c.DockerConfig != "" {
			sources++
		}
		if sources != 1 {
			return fmt.Errorf("%s (%s): give exactly one of env, usernameFile/passwordFile/tokenFile, dockerConfig", where, c.Name)
		}
		p.creds[c.Name] = c
	}
	if _, err := registry.NewAddressPolicy(p.file.AllowAddresses...); err != nil {
		return fmt.Errorf("allowAddresses: %w", err)
	}
	if err := p.validateMirrors(); err != nil {
		return err
	}
	names := map[string]bool{}
	for i, r := range f.Rules {
		where := fmt.Sprintf("rules[%d]", i)
		if r.Name != "" {
			where += " (" + r.Name + ")"
			if names[r.Name] {
				return fmt.Errorf("%s: rule name is used twice", where)
			}
			names[r.Name] = true
		}
		if len(r.Projects) == 0 {
			return fmt.Errorf("%s: projects is required (the default rule is written under default)", where)
		}
		for _, pat := range r.Projects {
			if _, err := path.Match(pat, ""); err != nil || pat == "" {
				return fmt.Errorf("%s: project pattern %s is not a glob", where, errdef.Quote(pat))
			}
		}
		if err := p.validateRule(r, where); err != nil {
			return err
		}
	}
	if f.Default != nil {
		if len(f.Default.Projects) > 0 {
			return errors.New("default: projects has no meaning in the default rule")
		}
		if err := p.validateRule(*f.Default, "default"); err != nil {
			return err
		}
	}
	return nil
}

func (p *Policy) validateRule(r RuleSpec, where string) error {
	for j, rp := range r.Repositories {
		if rp.Host == "" || strings.ContainsAny(rp.Host, "/@ ") || strings.Contains(rp.Host, "://") {
			return fmt.Errorf("%s: repositories[%d]: host %s: want a host[:port] pattern without scheme or path", where, j, errdef.Quote(rp.Host))
		}
		if _, err := path.Match(rp.Host, ""); err != nil {
			return fmt.Errorf("%s: repositories[%d]: host %s is not a glob", where, j, errdef.Quote(rp.Host))
		}
		if err := pathPattern(rp.PathPrefix, true); err != nil {
			return fmt.Errorf("%s: repositories[%d]: pathPrefix: %w", where, j, err)
		}
	}
	for _, name := range r.Credentials {
		if _, ok := p.creds[name]; !ok {
			return fmt.Errorf("%s: credential %s is not defined under credentials", where, errdef.Quote(name))
		}
	}
	for _, h := range r.PlainHTTP {
		if err := exactHost(h); err != nil {
			return fmt.Errorf("%s: plainHTTP: %w", where, err)
		}
	}
	for j, s := range r.Signatures {
		if err := s.check(); err != nil {
			return fmt.Errorf("%s: signatures[%d]: %w", where, j, err)
		}
	}
	for j, c := range r.ChartSignatures {
		if err := c.check(); err != nil {
			return fmt.Errorf("%s: chartSignatures[%d]: %w", where, j, err)
		}
	}
	return nil
}

// exactHost checks a host[:port] without pattern characters.
func exactHost(h string) error {
	if h == "" {
		return errors.New("empty")
	}
	if strings.ContainsAny(h, "*?[]/@ \\") || strings.Contains(h, "://") {
		return fmt.Errorf("%s: want an exact host[:port], no scheme, path or pattern", errdef.Quote(h))
	}
	if name, port, err := net.SplitHostPort(h); err == nil {
		if name == "" || port == "" || strings.Trim(port, "0123456789") != "" {
			return fmt.Errorf("%s: bad port", errdef.Quote(h))
		}
	}
	return nil
}

// pathPattern checks a path prefix: segments, no "." or "..", each a glob
// when patterns are allowed.
func pathPattern(p string, patterns bool) error {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%s has an empty, . or .. segment", errdef.Quote(p))
		}
		if !patterns && strings.ContainsAny(seg, "*?[]") {
			return fmt.Errorf("%s: patterns are not allowed here", errdef.Quote(p))
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("%s is not a glob", errdef.Quote(p))
		}
	}
	return nil
}

// Rule resolves the rule of an Argo CD project: the first rule with a
// matching project pattern, else the default rule, else a rule that allows
// nothing.
func (p *Policy) Rule(project string) *Rule {
	spec, name := RuleSpec{}, "(no default rule)"
	matched := false
	if project != "" {
		for i, r := range p.file.Rules {
			for _, pat := range r.Projects {
				if ok, _ := path.Match(pat, project); ok {
					spec, matched = r, true
					name = r.Name
					if name == "" {
						name = fmt.Sprintf("rules[%d]", i)
					}
					break
				}
			}
			if matched {
				break
			}
		}
	}
	if !matched && p.file.Default != nil {
		spec, name = *p.file.Default, p.file.Default.Name
		if name == "" {
			name = "default"
		}
	}
	r := &Rule{
		Name:                   name,
		Project:                project,
		Source:                 "sidecar policy " + p.source,
		Repositories:           spec.Repositories,
		PlainHTTP:              spec.PlainHTTP,
		StrictPlainHTTP:        true,
		LocalArchives:          spec.LocalArchives == nil || *spec.LocalArchives,
		Signatures:             spec.Signatures,
		RequireComponentImages: spec.RequireComponentImages,
		ChartSignatures:        spec.ChartSignatures,
		Platform:               spec.Platform,
	}
	for _, n := range spec.Credentials {
		r.Credentials = append(r.Credentials, p.creds[n])
	}
	r.Mirrors = p.file.Mirrors
	r.AllowAddresses = p.file.AllowAddresses
	for _, m := range r.Mirrors {
		for _, e := range m.Endpoints {
			if c, ok := p.creds[e.Credential]; ok && e.Credential != "" {
				if r.MirrorCredentials == nil {
					r.MirrorCredentials = map[string]Credential{}
				}
				r.MirrorCredentials[e.Credential] = c
			}
		}
	}
	return r
}

// FromEnvironment is the rule of one generation: from the policy file
// ARGOCD_OCM_POLICY names, for the project ARGOCD_APP_PROJECT_NAME names, or
// without a policy the default rule of today's variables (see the package
// documentation). With a policy, ARGOCD_OCM_PLAIN_HTTP, ARGOCD_OCM_SIGNATURE
// and ARGOCD_OCM_PUBLIC_KEY are refused: they would say something the policy
// may contradict.
//
// The tenancy switches (EnvRequireComponentImages, EnvPlatformAllowOther*,
// EnvProvenance) are read first, so that a misspelt one is the error a
// generation reports, and added to the rule, with or without a policy.
func FromEnvironment(getenv func(string) string) (*Rule, error) {
	sw, err := readSwitches(getenv)
	if err != nil {
		return nil, err
	}
	r, err := fromEnvironment(getenv)
	if err != nil {
		return nil, err
	}
	sw.apply(r)
	return r, nil
}

func fromEnvironment(getenv func(string) string) (*Rule, error) {
	file := strings.TrimSpace(getenv(EnvPolicy))
	project := getenv(EnvProject)
	if file == "" {
		r := Legacy(getenv, project)
		if _, err := registry.NewAddressPolicy(r.AllowAddresses...); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvAllowAddresses, err)
		}
		return r, nil
	}
	for _, v := range []string{EnvPlainHTTP, EnvSignature, EnvPublicKey, EnvAllowAddresses} {
		if strings.TrimSpace(getenv(v)) != "" {
			return nil, fmt.Errorf("%w: %s is set together with %s: say it in the policy instead", errdef.ErrInvalidInput, v, EnvPolicy)
		}
	}
	p, err := Load(file)
	if err != nil {
		return nil, err
	}
	return p.Rule(project), nil
}

// Legacy is the default rule of the variables without a policy: any
// repository, the sidecar's own credentials for their exact hosts, plain HTTP
// with credentials for ARGOCD_OCM_PLAIN_HTTP's hosts (an http:// URL reaches
// any other host without credentials), ARGOCD_OCM_SIGNATURE with
// ARGOCD_OCM_PUBLIC_KEY (one key for every name, or one per name).
func Legacy(getenv func(string) string, project string) *Rule {
	r := &Rule{
		Name:               "default",
		Project:            project,
		Source:             "environment",
		anyRepository:      true,
		DefaultCredentials: true,
		PlainHTTP:          splitComma(getenv(EnvPlainHTTP)),
		AllowAddresses:     splitComma(getenv(EnvAllowAddresses)),
		LocalArchives:      true,
	}
	r.legacyNames, r.legacyKeys = splitComma(getenv(EnvSignature)), splitComma(getenv(EnvPublicKey))
	return r
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
