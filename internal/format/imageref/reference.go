package imageref

import (
	_ "crypto/sha512" // sha384 and sha512 digests for go-digest
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"
	orasregistry "oras.land/oras-go/v2/registry"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Reference is a parsed OCI artifact reference.
type Reference struct {
	// Scheme as written: "http", "https", or "" (none; "oci://" also gives "").
	Scheme string
	// Registry is host[:port].
	Registry string
	// Repository is the path inside the registry.
	Repository string
	// Tag and Digest as written; either, both or neither may be set.
	Tag    string
	Digest string
}

// hostRE is the reference grammar's domain: dot-separated components of
// letters, digits and inner hyphens, or a bracketed IPv6 address, with an
// optional port.
var hostRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?$|^\[[0-9a-fA-F:]+\](?::[0-9]+)?$`)
})

// maxReferenceLen bounds what is parsed; real references are far shorter.
const maxReferenceLen = 4096

// Parse parses [scheme://]host[:port]/repository[:tag][@digest]:
// the one reader of image and artifact references in the plugin (registry
// accesses, localisation, the image guard, CEL's image functions).
// Accepted schemes are http://, https:// and oci://. A reference whose first
// path segment is not a host (no ".", no ":" and not "localhost") is a Docker
// Hub short name, as Docker reads it: "nginx:1" is docker.io/library/nginx:1;
// index.docker.io and registry-1.docker.io are read as docker.io.
//
// Tag and digest follow the distribution reference grammar as
// distribution/reference.Parse applies it: a tag is 1 to 128 of
// [A-Za-z0-9_.-], not starting with '.' or '-', so "app:" is refused (an
// empty tag is not "no tag"); a digest is algorithm:hex of an algorithm
// go-digest knows (sha256, sha384, sha512) with the length of that
// algorithm, lower-case, so "sha384:<96 hex>" parses and "md5:…" does not.
// Parsing a sha384 digest does not mean content can be verified by it:
// package blob verifies sha256 and sha512 and says so for others.
func Parse(s string) (Reference, error) {
	var r Reference
	orig := s
	if len(s) > maxReferenceLen {
		return Reference{}, fmt.Errorf("%w: reference is longer than %d bytes", errdef.ErrInvalidInput, maxReferenceLen)
	}
	if strings.TrimSpace(s) != s || s == "" {
		return Reference{}, fmt.Errorf("%w: reference %s is empty or has surrounding space", errdef.ErrInvalidInput, errdef.Quote(orig))
	}
	if i := strings.Index(s, "://"); i >= 0 {
		switch scheme := strings.ToLower(s[:i]); scheme {
		case "http", "https":
			r.Scheme = scheme
		case "oci":
		default:
			return Reference{}, fmt.Errorf("%w: reference %s: unsupported scheme %s", errdef.ErrInvalidInput, errdef.Quote(orig), errdef.Quote(scheme))
		}
		s = s[i+3:]
	}
	host, path, ok := strings.Cut(s, "/")
	if !ok || path == "" {
		if r.Scheme != "" {
			return Reference{}, fmt.Errorf("%w: reference %s has no repository", errdef.ErrInvalidInput, errdef.Quote(orig))
		}
		host, path = "docker.io", "library/"+s
	} else if !strings.ContainsAny(host, ".:") && host != "localhost" {
		if r.Scheme != "" {
			return Reference{}, fmt.Errorf("%w: reference %s: %s is not a registry host", errdef.ErrInvalidInput, errdef.Quote(orig), errdef.Quote(host))
		}
		host, path = "docker.io", s
	}
	if host == "index.docker.io" || host == "registry-1.docker.io" {
		host = "docker.io" // aliases of Docker Hub, as Docker and package localize read them
	}
	if host == "docker.io" && !strings.Contains(strings.SplitN(path, "@", 2)[0], "/") {
		path = "library/" + path
	}
	if !hostRE().MatchString(host) {
		return Reference{}, fmt.Errorf("%w: reference %s: invalid registry %s", errdef.ErrInvalidInput, errdef.Quote(orig), errdef.Quote(host))
	}
	r.Registry = host
	if at := strings.Index(path, "@"); at >= 0 {
		d, err := digest.Parse(path[at+1:])
		if err != nil {
			return Reference{}, fmt.Errorf("%w: reference %s: bad digest", errdef.ErrInvalidInput, errdef.Quote(orig))
		}
		r.Digest = d.String()
		path = path[:at]
	}
	if c := strings.LastIndex(path, ":"); c >= 0 {
		r.Tag = path[c+1:]
		path = path[:c]
		if r.Tag == "" {
			return Reference{}, fmt.Errorf("%w: reference %s: empty tag after ':'", errdef.ErrInvalidInput, errdef.Quote(orig))
		}
	}
	r.Repository = path
	o := orasregistry.Reference{Registry: r.Registry, Repository: r.Repository, Reference: r.Tag}
	if err := o.ValidateRegistry(); err != nil {
		return Reference{}, fmt.Errorf("%w: reference %s: invalid registry %s", errdef.ErrInvalidInput, errdef.Quote(orig), errdef.Quote(r.Registry))
	}
	if err := o.ValidateRepository(); err != nil {
		return Reference{}, fmt.Errorf("%w: reference %s: invalid repository %s", errdef.ErrInvalidInput, errdef.Quote(orig), errdef.Quote(r.Repository))
	}
	if r.Tag != "" {
		if err := o.ValidateReferenceAsTag(); err != nil {
			return Reference{}, fmt.Errorf("%w: reference %s: invalid tag %s", errdef.ErrInvalidInput, errdef.Quote(orig), errdef.Quote(r.Tag))
		}
	}
	return r, nil
}

// Ref is what to ask the registry for: the digest when there is one (a tag
// next to it is informational), else the tag.
func (r Reference) Ref() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// Name is registry/repository.
func (r Reference) Name() string { return r.Registry + "/" + r.Repository }

// String is registry/repository[:tag][@digest], without a scheme.
func (r Reference) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Validate checks registry, repository and tag (the digest is checked by
// Parse).
func (r Reference) Validate() error {
	o := orasregistry.Reference{Registry: r.Registry, Repository: r.Repository, Reference: r.Tag}
	if err := o.ValidateRegistry(); err != nil {
		return fmt.Errorf("%w: invalid registry %s", errdef.ErrInvalidInput, errdef.Quote(r.Registry))
	}
	if err := o.ValidateRepository(); err != nil {
		return fmt.Errorf("%w: invalid repository %s", errdef.ErrInvalidInput, errdef.Quote(r.Repository))
	}
	if r.Tag != "" {
		if err := o.ValidateReferenceAsTag(); err != nil {
			return fmt.Errorf("%w: invalid tag %s", errdef.ErrInvalidInput, errdef.Quote(r.Tag))
		}
	}
	return nil
}
