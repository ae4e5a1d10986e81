package localize

import (
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
)

// DefaultRegistry is the registry of image references that name none, as
// container runtimes resolve them (and imageref.Parse reads them).
const DefaultRegistry = "docker.io"

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
func trimLibrary(r imageref.Reference) string {
	if r.Registry == DefaultRegistry {
		return strings.TrimPrefix(r.Repository, "library/")
	}
	return r.Repository
}
