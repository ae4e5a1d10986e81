// Package policy is the sidecar policy: what the Applications of each Argo CD
// project may make the plugin do. One sidecar serves every Application of an
// Argo CD instance; the policy is how its operator keeps one team's
// Applications to that team's repositories and credentials.
//
// Design notes: docs/design.md, section policy.
package policy
