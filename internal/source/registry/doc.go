// Package registry is the plugin's HTTP side of OCI registries: credentials,
// TLS trust, the plain-HTTP policy, retries, and errors that say which registry,
// repository, reference and HTTP status failed. It hands out oras-go
// remote.Repository values configured with all of that; the OCM mapping lives
// in internal/source/ocm/oci.
//
// # Credentials
//
// For a registry host (host[:port], as in an image reference) the first source
// that has an entry wins:
//
//  1. WithCredential options (programmatic, used by tests and the CLI);
//  2. the sidecar's environment, ARGOCD_OCM_REGISTRY_<HOST>_USERNAME,
//     _PASSWORD and _TOKEN, or the same names with a _FILE suffix naming a
//     file that holds the value (a mounted Kubernetes Secret key; one trailing
//     newline is removed). <HOST> is the host[:port] upper-cased with every
//     character outside [A-Z0-9] replaced by "_": ghcr.io → GHCR_IO,
//     127.0.0.1:5000 → 127_0_0_1_5000. Folding makes names ambiguous
//     (registry.example.test, registry-example.test and registry_example.test
//     all give REGISTRY_EXAMPLE_TEST), so the variables go to exactly one
//     host: the one ARGOCD_OCM_REGISTRY_<HOST>_HOST names, or without it a
//     host that cannot be confused with another (letters, digits and dots,
//     last label not numeric, or an IPv4 address; optional port). Hosts are
//     compared case-insensitively, as DNS names are. USERNAME+PASSWORD is basic auth (also
//     what GHCR personal access tokens and ECR tokens use); TOKEN is a registry
//     access token sent as "Authorization: Bearer" when the registry challenges
//     for a bearer token. These are never read with Argo CD's ARGOCD_ENV_
//     prefix: an Application must not be able to choose credentials.
//  3. a Docker config file: WithDockerConfig, else $DOCKER_CONFIG/config.json,
//     else ~/.docker/config.json — what a Kubernetes kubernetes.io/dockerconfigjson
//     Secret mounts. "auths" entries with "auth" (base64 user:password),
//     "username"/"password", "identitytoken" (OAuth2 refresh token) and
//     "registrytoken" are used; "credsStore" and "credHelpers" are ignored with
//     a warning, because the plugin never runs helper binaries.
//
// WithCredentialScopes binds credentials to an exact host and a path prefix
// (the sidecar policy's); WithOnlyScopedCredentials turns the other sources
// off. Registry tokens are cached per credential, never shared between two.
//
// Credentials never appear in errors or logs: messages name the host and the
// source (environment variable or file name), never a value. A registry's
// error text is reduced to its OCI error codes and short messages, redacted
// of every credential value the client handed out and of anything that looks
// like one (Sanitize), and capped.
//
// # Transport security
//
// HTTPS is the default, verified against the system roots plus any CA bundle
// given with WithCAFile / WithCAPEM (or ARGOCD_OCM_REGISTRY_CA_FILE). Plain
// HTTP is used only for hosts explicitly allowed (WithPlainHTTP, or
// AllowPlainHTTP, which internal/source/ocm/oci calls for an http:// repository URL,
// unless WithStrictPlainHTTP); any other http:// request, including one
// reached by a redirect, is refused with errdef.ErrInsecure. Credentials go
// over plain HTTP only to WithPlainHTTP hosts, the operator's. A redirect to
// another origin (scheme, host or port) loses the Authorization header.
//
// # Gate
//
// WithGate is asked before the first request for every repository, artifact,
// Helm repository and chart URL (the sidecar policy): a refusal costs no
// connection, so it tells nothing about the network.
//
// # Mirrors
//
// WithMirrors (the sidecar policy's mirrors) or, without a policy,
// ARGOCD_OCM_REGISTRY_<HOST>_MIRRORS (refused under
// WithOnlyScopedCredentials) give an upstream host an ordered list of
// pull-through caches (Mirror: host, path prefix, plain HTTP, its own
// credential). Manifests and blobs named by digest are read from the first
// mirror that serves them, hashed as they are read, and refused with
// errdef.ErrDigestMismatch naming the mirror when they are other content: the
// upstream is not substituted for a mirror that serves wrong content. A
// connection error (the mirror is then left out for DefaultMirrorPause) or
// any other status hands the request to the next mirror, last to the
// upstream. A tag is resolved at the upstream with a HEAD request and its
// manifest read by digest from the mirrors (Mirror.ResolveTags for mirrors
// that may answer tags). The gate is asked about the upstream name only;
// a mirror's credential goes to the mirror only, the upstream's to the
// upstream only. Tag lists, referrers and classic Helm repositories are not
// mirrored.
//
// # Retries
//
// Requests are retried with exponential backoff on connection errors, 408,
// 429 and 5xx (except 501 and 505), at most WithRetries times (default 3);
// retries stop when the request's context ends.
package registry
