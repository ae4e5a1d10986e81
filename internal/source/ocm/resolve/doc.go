// Package resolve turns what a user wrote for a component version — an exact
// version or a semantic-version constraint such as "~2.3", ">=2.0.0", "^2" or
// "2.3.x" — into one version of a repository, with the rules of the OCM CLI
// (Masterminds/semver v3): the highest listed version that satisfies the
// constraint; a prerelease is considered only by a constraint that itself has
// a prerelease. Exact versions are passed through without asking the
// repository, so pinned versions cost no listing.
//
// The caller reports the resolved version (on stderr and in the Argo CD UI)
// so users can pin it: a range is re-resolved only when Argo CD regenerates.
//
// Open turns a repository spec into a repository of its kind (an OCI
// registry or a CTF), above both repository packages; a Source does it for
// one generation through one registry client, and reads remote accesses.
package resolve
