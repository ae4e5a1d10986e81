package oci

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Repository types of an OCM repository spec (the "/v1" suffix and other
// spellings are accepted, see ParseSpec).
const (
	TypeOCIRegistry = "OCIRegistry"
	TypeCTF         = "CommonTransportFormat"
)

// maxSpecLen bounds a repository spec; real ones are a few hundred bytes.
const maxSpecLen = 64 << 10

// Spec is an OCM repository specification.
type Spec struct {
	// Type is TypeOCIRegistry or TypeCTF (normalised by ParseSpec).
	Type string `json:"type"`
	// BaseURL of an OCI registry: host[:port], optionally with a scheme
	// (http:// selects plain HTTP, as the OCM CLI writes it) and a path.
	BaseURL string `json:"baseUrl,omitempty"`
	// SubPath is the repository prefix below BaseURL.
	SubPath string `json:"subPath,omitempty"`
	// ComponentNameMapping must be "urlPath" (or empty); "sha256-digest" is
	// not supported.
	ComponentNameMapping string `json:"componentNameMapping,omitempty"`
	// FilePath of a CTF or component archive (directory, tar or tgz).
	FilePath string `json:"filePath,omitempty"`
}

// ParseSpec accepts a repository as
//
//   - an OCM repository spec in YAML or JSON:
//     {type: OCIRegistry, baseUrl: ghcr.io, subPath: org/ocm} (also
//     "OCIRegistry/v1", "ociRegistry", "OCI/v1") or
//     {type: CommonTransportFormat/v1, filePath: ./bundle.ctf} (also "CTF");
//   - a URL-ish string: "ghcr.io/org/ocm", "https://ghcr.io/org/ocm",
//     "http://127.0.0.1:5000/ocm" (plain HTTP), "oci://ghcr.io/org/ocm";
//   - a local path of a CTF or component archive: one starting with "/", "./",
//     "../" or "file://", any string naming an existing file or directory,
//     and any other string that does not look like a registry (see
//     LooksLikeRegistry), so that a mistyped path says it does not exist
//     instead of becoming a DNS lookup;
//   - the OCM CLI's "<type>::<rest>" prefix form ("OCIRegistry::ghcr.io/org",
//     "ctf::./bundle").
func ParseSpec(s string) (Spec, error) {
	return ParseSpecIn(s, func(name string) bool { _, err := os.Stat(name); return err == nil })
}

// ParseSpecIn is ParseSpec with exists deciding whether a bare name is an
// existing file or directory: an Argo CD Application's names are looked up
// inside its directory only (see package confine), never on the sidecar's disk.
func ParseSpecIn(s string, exists func(name string) bool) (Spec, error) {
	if len(s) > maxSpecLen {
		return Spec{}, fmt.Errorf("%w: repository spec is longer than %d bytes", errdef.ErrInvalidInput, maxSpecLen)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return Spec{}, fmt.Errorf("%w: empty repository", errdef.ErrInvalidInput)
	}
	if strings.HasPrefix(s, "{") || strings.Contains(s, "\n") || strings.HasPrefix(s, "type:") {
		if sp, ok := parsePlainJSONSpec(s); ok {
			return sp.normalize()
		}
		return parseSpecDocument(s)
	}
	// (A type has no "/" and no "[": "[fd00::1]:5000/x" is a registry.)
	if t, rest, ok := strings.Cut(s, "::"); ok && !strings.ContainsAny(t, "/[") {
		typ, err := normalizeType(t)
		if err != nil {
			return Spec{}, err
		}
		if typ == TypeCTF {
			return Spec{Type: TypeCTF, FilePath: rest}.normalize()
		}
		return Spec{Type: TypeOCIRegistry, BaseURL: rest}.normalize()
	}
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "http://"), strings.HasPrefix(lower, "https://"), strings.HasPrefix(lower, "oci://"):
		return Spec{Type: TypeOCIRegistry, BaseURL: s}.normalize()
	case strings.HasPrefix(lower, "file://"):
		return Spec{Type: TypeCTF, FilePath: s[len("file://"):]}.normalize()
	case strings.HasPrefix(s, "/"), strings.HasPrefix(s, "./"), strings.HasPrefix(s, "../"), s == ".", s == "..":
		return Spec{Type: TypeCTF, FilePath: s}.normalize()
	}
	if exists(s) || !LooksLikeRegistry(s) {
		return Spec{Type: TypeCTF, FilePath: s}.normalize()
	}
	return Spec{Type: TypeOCIRegistry, BaseURL: s}.normalize()
}

// parseSpecDocument parses a spec written as a YAML or JSON document.
func parseSpecDocument(s string) (Spec, error) {
	var sp Spec
	if err := yaml.Unmarshal([]byte(s), &sp); err != nil {
		return Spec{}, fmt.Errorf("%w: repository spec: %s", errdef.ErrInvalidInput, errdef.Cut(err.Error()))
	}
	return sp.normalize()
}

// parsePlainJSONSpec parses, without the YAML decoder, the specs a render
// makes for its registry (json.Marshal of a Spec; see argocdocm's
// location.open) and most people write: one JSON object of the Spec's
// fields, each at most once and spelt as in Spec's tags, with string values
// of printable ASCII and no escapes. ok is false for anything else, which
// parseSpecDocument then reads: for what it accepts, the YAML decoder
// reads the same strings into the same fields (TestPlainJSONSpecIsTheDocuments).
func parsePlainJSONSpec(s string) (sp Spec, ok bool) {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '\\' {
			return Spec{}, false
		}
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Spec{}, false
	}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		key, isString := k.(string)
		if err != nil || !isString || seen[key] {
			return Spec{}, false
		}
		seen[key] = true
		v, err := dec.Token()
		value, isString := v.(string)
		if err != nil || !isString {
			return Spec{}, false
		}
		switch key {
		case "type":
			sp.Type = value
		case "baseUrl":
			sp.BaseURL = value
		case "subPath":
			sp.SubPath = value
		case "componentNameMapping":
			sp.ComponentNameMapping = value
		case "filePath":
			sp.FilePath = value
		default:
			return Spec{}, false
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return Spec{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return Spec{}, false
	}
	return sp, true
}

// RegistryHint says, after a bare name that is not a file, why it was not
// taken for a registry.
const RegistryHint = "a registry has a dot or a port in its host, or is localhost, or has a scheme"

// LooksLikeRegistry reports whether a repository without a scheme names a
// registry, as Docker tells a registry host from a path component: its host
// (up to the first "/") has a dot or a port, or is localhost. A host alone
// ending like an archive (bundle.tgz, ctf.tar) is a file name, not a registry.
func LooksLikeRegistry(s string) bool {
	host, rest, hasPath := strings.Cut(s, "/")
	lower := strings.ToLower(host)
	switch {
	case lower == "localhost" || strings.HasPrefix(lower, "localhost:"):
		return true
	case strings.Contains(host, ":"):
		return true
	case !strings.Contains(host, "."):
		return false
	}
	if !hasPath || rest == "" {
		for _, ext := range []string{".tar", ".tgz", ".tar.gz", ".ctf"} {
			if strings.HasSuffix(lower, ext) {
				return false
			}
		}
	}
	return true
}

func normalizeType(t string) (string, error) {
	base := t
	if i := strings.Index(base, "/"); i >= 0 {
		base = base[:i]
	}
	switch strings.ToLower(base) {
	case "ociregistry", "oci":
		return TypeOCIRegistry, nil
	case "commontransportformat", "ctf":
		return TypeCTF, nil
	case "":
		return "", fmt.Errorf("%w: repository spec has no type", errdef.ErrInvalidInput)
	default:
		return "", fmt.Errorf("%w: repository type %s is not supported (want %s or %s)", errdef.ErrInvalidInput, errdef.Quote(t), TypeOCIRegistry, TypeCTF)
	}
}

func (s Spec) normalize() (Spec, error) {
	t, err := normalizeType(s.Type)
	if err != nil {
		return Spec{}, err
	}
	s.Type = t
	switch t {
	case TypeCTF:
		if s.FilePath == "" {
			return Spec{}, fmt.Errorf("%w: %s repository spec has no filePath", errdef.ErrInvalidInput, TypeCTF)
		}
		return s, nil
	default:
		if s.BaseURL == "" {
			return Spec{}, fmt.Errorf("%w: %s repository spec has no baseUrl", errdef.ErrInvalidInput, TypeOCIRegistry)
		}
		switch s.ComponentNameMapping {
		case "", "urlPath":
		default:
			return Spec{}, fmt.Errorf("%w: componentNameMapping %s is not supported (only urlPath)", errdef.ErrInvalidInput, errdef.Quote(s.ComponentNameMapping))
		}
		if _, err := s.location(); err != nil {
			return Spec{}, err
		}
		return s, nil
	}
}

// location is where an OCIRegistry spec points: scheme ("http", "https" or
// ""), registry host[:port] and the repository prefix (base path + subPath).
type location struct {
	scheme string
	host   string
	prefix string
}

func (s Spec) location() (location, error) {
	var l location
	u := strings.TrimSpace(s.BaseURL)
	if i := strings.Index(u, "://"); i >= 0 {
		switch sc := strings.ToLower(u[:i]); sc {
		case "http", "https":
			l.scheme = sc
		case "oci":
		default:
			return l, fmt.Errorf("%w: baseUrl %s: unsupported scheme %s", errdef.ErrInvalidInput, errdef.Quote(s.BaseURL), errdef.Quote(sc))
		}
		u = u[i+3:]
	}
	host, p, _ := strings.Cut(u, "/")
	if host == "" {
		return l, fmt.Errorf("%w: baseUrl %s has no host", errdef.ErrInvalidInput, errdef.Quote(s.BaseURL))
	}
	if strings.Contains(host, "@") {
		return l, fmt.Errorf("%w: baseUrl must not carry credentials; use the environment or a docker config", errdef.ErrInvalidInput)
	}
	if strings.ContainsAny(host, "?#\\ ") || strings.ContainsAny(p, "?#\\ :@") {
		return l, fmt.Errorf("%w: baseUrl %s is not host[:port][/path]", errdef.ErrInvalidInput, errdef.Quote(s.BaseURL))
	}
	l.host = strings.ToLower(host)
	parts := []string{}
	for _, seg := range []string{p, s.SubPath} {
		seg = strings.Trim(seg, "/")
		if seg == "" {
			continue
		}
		if strings.ContainsAny(seg, "?#\\ :@") {
			return l, fmt.Errorf("%w: subPath %s is not a repository path", errdef.ErrInvalidInput, errdef.Quote(seg))
		}
		for _, e := range strings.Split(seg, "/") {
			if e == "" || e == "." || e == ".." {
				return l, fmt.Errorf("%w: repository path %s has an empty, . or .. segment", errdef.ErrInvalidInput, errdef.Quote(seg))
			}
		}
		parts = append(parts, seg)
	}
	l.prefix = path.Join(parts...)
	return l, nil
}

// String is the spec in URL-ish form ("http://127.0.0.1:5000/ocm",
// "ghcr.io/org/ocm") or the CTF path.
func (s Spec) String() string {
	if s.Type == TypeCTF {
		return s.FilePath
	}
	l, err := s.location()
	if err != nil {
		return s.BaseURL
	}
	out := l.host
	if l.prefix != "" {
		out += "/" + l.prefix
	}
	if l.scheme != "" {
		out = l.scheme + "://" + out
	}
	return out
}
