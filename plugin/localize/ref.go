package localize

import (
	"fmt"
	"regexp"
	"strings"
)

// DefaultRegistry is the registry of image references that name none, as
// container runtimes resolve them.
const DefaultRegistry = "docker.io"

// Ref is a parsed OCI image reference.
type Ref struct {
	Registry   string // host[:port]; DefaultRegistry when the reference names none
	Repository string // path inside the registry, e.g. "stefanprodan/podinfo" ("library/x" on Docker Hub)
	Tag        string // "" when absent
	Digest     string // "algorithm:hex", "" when absent
}

var (
	pathComponentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	tagRE           = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestRE        = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$`)
	hostRE          = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?$|^\[[0-9a-fA-F:]+\](?::[0-9]+)?$`)
)

// ParseRef parses an image reference: [scheme://][registry/]repository[:tag][@digest].
// A first path component is a registry when it contains a dot or a colon or
// is "localhost"; otherwise the registry is docker.io and one-component
// repositories get the "library/" prefix, as container runtimes do. A scheme
// (http://, https://, oci://), as the OCM CLI writes for plain-HTTP
// registries, is dropped.
func ParseRef(s string) (Ref, error) {
	orig := s
	if len(s) > 4096 {
		return Ref{}, fmt.Errorf("image reference is %d characters long", len(s))
	}
	for _, scheme := range []string{"http://", "https://", "oci://"} {
		s = strings.TrimPrefix(s, scheme)
	}
	if s == "" {
		return Ref{}, fmt.Errorf("empty image reference")
	}
	var r Ref
	if i := strings.IndexByte(s, '@'); i >= 0 {
		r.Digest = s[i+1:]
		s = s[:i]
		if !digestRE.MatchString(r.Digest) {
			return Ref{}, fmt.Errorf("image reference %q: %q is not a digest (algorithm:hex)", orig, r.Digest)
		}
	}
	// A tag follows the last colon after the last slash (a colon before it is a port).
	if i := strings.LastIndexByte(s, ':'); i >= 0 && i > strings.LastIndexByte(s, '/') {
		r.Tag = s[i+1:]
		s = s[:i]
		if !tagRE.MatchString(r.Tag) {
			return Ref{}, fmt.Errorf("image reference %q: %q is not a valid tag", orig, r.Tag)
		}
	}
	first, rest, hasSlash := strings.Cut(s, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost" || strings.HasPrefix(first, "[")) {
		if !hostRE.MatchString(first) {
			return Ref{}, fmt.Errorf("image reference %q: %q is not a registry host", orig, first)
		}
		r.Registry, r.Repository = first, rest
	} else {
		r.Registry, r.Repository = DefaultRegistry, s
	}
	if r.Registry == "index.docker.io" || r.Registry == "registry-1.docker.io" {
		r.Registry = DefaultRegistry
	}
	if r.Registry == DefaultRegistry && !strings.Contains(r.Repository, "/") {
		r.Repository = "library/" + r.Repository
	}
	if r.Repository == "" {
		return Ref{}, fmt.Errorf("image reference %q has no repository", orig)
	}
	for _, c := range strings.Split(r.Repository, "/") {
		if !pathComponentRE.MatchString(c) {
			return Ref{}, fmt.Errorf("image reference %q: repository component %q is not valid (lower-case letters, digits and separators)", orig, c)
		}
	}
	return r, nil
}

// Name is registry/repository.
func (r Ref) Name() string { return r.Registry + "/" + r.Repository }

// String is the full reference: name[:tag][@digest].
func (r Ref) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// pathSuffixLen counts the trailing repository path components a and b share.
func pathSuffixLen(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	n := 0
	for n < len(as) && n < len(bs) && as[len(as)-1-n] == bs[len(bs)-1-n] {
		n++
	}
	return n
}

// trimLibrary drops Docker Hub's implicit "library/" for comparisons.
func trimLibrary(r Ref) string {
	if r.Registry == DefaultRegistry {
		return strings.TrimPrefix(r.Repository, "library/")
	}
	return r.Repository
}
