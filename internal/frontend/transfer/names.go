package transfer

import (
	"fmt"

	orasregistry "oras.land/oras-go/v2/registry"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Bounds of what a descriptor may name in the target. The repository name
// is relative to the target's prefix; registries refuse names much longer
// than 255 bytes anyway.
const (
	maxRepositoryName = 255
	maxTag            = 128
)

// Names are checked with oras-go's validation of the OCI distribution
// grammar: a repository name has no ".", ".." or empty segment, no leading
// "/", no backslash, "%" or upper case, so one that passes stays below the
// prefix it is joined to, whatever the registry does with the path.
// checkRepositoryName refuses a repository name (below the target's prefix)
// that a descriptor derived and that is not an OCI repository name: every
// such name is checked before the transfer writes, or asks the target,
// anything. what says where the name came from ("referenceName").
func checkRepositoryName(what, name string) error {
	if len(name) > maxRepositoryName || (orasregistry.Reference{Repository: name}).ValidateRepository() != nil {
		return fmt.Errorf("%w: %s %s is not an OCI repository name below the target's prefix (lower-case letters and digits separated by '.', '_', '__', '-' or '/', at most %d bytes; no '..', '.', empty or absolute path)",
			errdef.ErrInvalidDescriptor, what, errdef.Quote(name), maxRepositoryName)
	}
	return nil
}

// checkTag refuses a tag that a descriptor derived and that is not an OCI
// tag (a tag is a path segment of the registry's URL too).
func checkTag(what, tag string) error {
	if len(tag) > maxTag || (orasregistry.Reference{Reference: tag}).ValidateReferenceAsTag() != nil {
		return fmt.Errorf("%w: %s %s is not an OCI tag (letters, digits, '_', '.' and '-', at most %d bytes)",
			errdef.ErrInvalidDescriptor, what, errdef.Quote(tag), maxTag)
	}
	return nil
}
