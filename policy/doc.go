// Package policy is the sidecar policy: what the Applications of each Argo CD
// project may make the plugin do. One sidecar serves every Application of an
// Argo CD instance; the policy is how its operator keeps one team's
// Applications to that team's repositories and credentials.
//
// # File
//
// One YAML file (ARGOCD_OCM_POLICY names it; a mounted ConfigMap), decoded
// strictly: an unknown or repeated field is an error, as is a reference to a
// credential that is not defined. docs/schema/sidecarpolicy-v1alpha1.schema.json
// is its JSON schema; docs/security.md explains it with a worked example.
//
//	apiVersion: argocd-ocm-plugin.io/v1alpha1
//	kind: SidecarPolicy
//	credentials:                 # named; the values stay in Secrets
//	- name: team-a
//	  host: ghcr.io              # exact host[:port]
//	  pathPrefix: acme/team-a    # optional, whole segments
//	  env: TEAM_A                # ARGOCD_OCM_REGISTRY_TEAM_A_USERNAME/_PASSWORD/_TOKEN[_FILE]
//	rules:
//	- name: team-a
//	  projects: [team-a, "team-a-*"]
//	  repositories:
//	  - {host: ghcr.io, pathPrefix: acme/team-a}
//	  credentials: [team-a]
//	default:                     # every other project
//	  repositories: []
//
// # Rules
//
// The rule of an Application is the first rule, in file order, one of whose
// project patterns (path.Match globs) matches the Application's Argo CD
// project (ARGOCD_APP_PROJECT_NAME); when none matches, or the project is not
// known (Argo CD before 3.0 does not pass it), the default rule. A policy
// without a default rule refuses every repository to the other projects.
// First match, rather than most specific, so that the order in the file is
// the whole story: put narrow patterns first.
//
// A rule says which OCI repositories and Helm repositories an Application may
// name, directly or through the descriptors it reads (host pattern plus path
// prefix); which named credentials apply (each bound to an exact host and an
// optional path prefix; nothing else is sent anywhere); which hosts may be
// reached over plain HTTP; whether CTFs and component archives of the
// Application's own checkout may be read; which signatures must verify, with
// which keys or root CAs (docs/signatures.md); whether workload images must
// be images of the component (requireComponentImages); and whether platform
// children may leave the parent's project and destination (default: no).
//
// # Without a policy
//
// FromEnvironment builds the default rule of today's variables: any
// repository, the sidecar's credentials (ARGOCD_OCM_REGISTRY_*, a Docker
// config) each for exactly the host it names, plain HTTP for
// ARGOCD_OCM_PLAIN_HTTP's hosts (an http:// URL an Application writes is
// reached without credentials), ARGOCD_OCM_SIGNATURE and
// ARGOCD_OCM_PUBLIC_KEY. With a policy those three variables are refused:
// they belong in the policy. So are ARGOCD_OCM_REGISTRY_<HOST>_MIRRORS
// (package registry refuses them under WithOnlyScopedCredentials): the
// policy's top-level mirrors name the registry mirrors of every rule
// (docs/scaling.md).
//
// # Refusals
//
// A repository the rule does not allow is refused before any connection, with
// errdef.ErrForbidden and a message that names only what the Application
// wrote: it reads the same whether the host is a registry, a closed port or
// an SSH server, so the refusal cannot be used to scan the network.
package policy
