package ocm

import "strings"

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
