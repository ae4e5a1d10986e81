package transfer

import (
	"fmt"
	"regexp"
	"sync"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// Bounds of what a descriptor may name in the target. The repository name
// is relative to the target's prefix; registries refuse names much longer
// than 255 bytes anyway.
const (
	maxRepositoryName = 255
	maxTag            = 128
)

// The OCI distribution spec's grammar of a repository name and of a tag.
// The name grammar has no ".", ".." or empty segment, no leading "/", no
// backslash, "%" or upper case: a name that matches stays below the prefix
// it is joined to, whatever the registry does with the path.
var (
	repositoryNameRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`)
	})
	tagRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
	})
)

// checkRepositoryName refuses a repository name (below the target's prefix)
// that a descriptor derived and that is not an OCI repository name: every
// such name is checked before the transfer writes, or asks the target,
// anything. what says where the name came from ("referenceName").
func checkRepositoryName(what, name string) error {
	if len(name) > maxRepositoryName || !repositoryNameRE().MatchString(name) {
		return fmt.Errorf("%w: %s %s is not an OCI repository name below the target's prefix (lower-case letters and digits separated by '.', '_', '__', '-' or '/', at most %d bytes; no '..', '.', empty or absolute path)",
			errdef.ErrInvalidDescriptor, what, errdef.Quote(name), maxRepositoryName)
	}
	return nil
}

// checkTag refuses a tag that a descriptor derived and that is not an OCI
// tag (a tag is a path segment of the registry's URL too).
func checkTag(what, tag string) error {
	if len(tag) > maxTag || !tagRE().MatchString(tag) {
		return fmt.Errorf("%w: %s %s is not an OCI tag (letters, digits, '_', '.' and '-', at most %d bytes)",
			errdef.ErrInvalidDescriptor, what, errdef.Quote(tag), maxTag)
	}
	return nil
}
