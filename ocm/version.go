package ocm

import (
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

const buildSeparator = ".build-"

// VersionToTag maps a component version to its OCI tag: OCI tags cannot hold
// "+", so the OCM CLI writes it as ".build-".
func VersionToTag(version string) string {
	return strings.ReplaceAll(version, "+", buildSeparator)
}

// TagToVersion maps an OCI tag back to a component version: the LAST ".build-"
// becomes "+", as the OCM CLI does.
func TagToVersion(tag string) string {
	i := strings.LastIndex(tag, buildSeparator)
	if i < 0 {
		return tag
	}
	return tag[:i] + "+" + tag[i+len(buildSeparator):]
}

// DescriptorRepository is the OCI repository path (relative to a registry base
// and sub path) that holds a component's descriptors.
func DescriptorRepository(component string) string {
	return "component-descriptors/" + component
}

// SplitPinnedVersion splits "<version>@<digest>" (a version pinned to the
// digest that names its descriptor in the store: the manifest digest in the
// OCI mapping) into version and normalised digest; a plain version comes
// back with digest "". Every repository type reads a version this way.
func SplitPinnedVersion(component, s string) (version, pin string, err error) {
	version, pin, ok := strings.Cut(s, "@")
	if version == "" {
		return "", "", fmt.Errorf("%w: empty version of component %s", errdef.ErrInvalidInput, component)
	}
	if !ok {
		return version, "", nil
	}
	d, err := blob.Normalize(pin)
	if err != nil {
		return "", "", fmt.Errorf("component %s version %s: pinned digest: %w", component, version, err)
	}
	return version, d, nil
}

// PinMismatch is the error of a version whose digest is not the pinned one
// (actual "" when the store names the version by no digest at all).
func PinMismatch(component, version, pin, actual string) error {
	if actual == "" {
		return fmt.Errorf("%w: version %s of component %s is pinned to %s, but its store names it by no digest", errdef.ErrDigestMismatch, version, component, pin)
	}
	return fmt.Errorf("%w: version %s of component %s is %s, not the pinned %s", errdef.ErrDigestMismatch, version, component, actual, pin)
}
