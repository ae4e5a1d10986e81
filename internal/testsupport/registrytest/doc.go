// Package registrytest runs a real OCI registry — the CNCF distribution
// registry's handlers.NewApp with the inmemory (or filesystem) storage driver —
// inside httptest, in about 15 ms, for tests of the plugin's registry code.
//
// It can require htpasswd basic auth (WithBasicAuth, bcrypt hash), serve
// HTTPS (WithTLS), wrap the handler (WithMiddleware, to inject failures) and
// records every request it serves (Requests, Count, Reset), so tests can
// assert how often the plugin asks the registry.
//
// Push writes ocmbuild component versions exactly as the OCM CLI lays them
// out in a registry; PushTransferred does what `ocm transfer --copy-resources`
// does to Helm charts (own artifact, ociArtifact access with tag and digest).
// ServeFixture serves the registry the OCM CLI itself wrote
// (testdata/ocm-cli/registry) on 127.0.0.1:5078.
package registrytest
