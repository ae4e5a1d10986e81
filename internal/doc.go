// Package internal holds everything of argocd-ocm-plugin that is not its
// public Go API (plugin/) or its commands (cmd/). Its packages form layers
// by role, in the direction data flows through a generation: a command or
// server receives a request (front ends), the pipeline orchestrates, a
// planner decides what to render from the component and the Application's
// configuration (planning), renderers produce objects that are finished
// (hooks, waves, localisation, image guard), from content that sources
// resolve, fetch and verify, in formats (the OCM model, blobs, archives)
// built on small utilities.
//
// A package may import packages of its own layer and of layers below it,
// never above: the layer of every package under internal/, plugin/ and cmd/
// is listed here, and TestLayers (layers_test.go) checks every import of
// every non-test file against this list, and that every package is listed.
// A new package is added to the list in the layer of its role; an import
// the test refuses means the code is in the wrong place, not the list.
//
// Layers, from the bottom (the number is the rank; directories relative to
// the repository):
//
//	0 utilities: plugin/errdef internal/bytesize internal/parallel internal/fieldpath internal/suggest internal/startheap internal/confine internal/cmp/param
//	1 formats: internal/yamlfile internal/blob internal/archive internal/ocm/accessmethod plugin/ocm plugin/signing
//	2 sources: internal/registry plugin/policy internal/registry/policyopts internal/cache internal/ocm/ocimapping internal/ocm/artifactset internal/ocm/ctf internal/ocm/oci internal/ocm/resolve internal/access internal/verify
//	3 renderers: internal/render/manifests internal/render/helm internal/render/kustomize
//	4 finishing: internal/hooks internal/localize internal/imageguard
//	5 planning: internal/plan internal/config internal/config/expr internal/config/explain internal/config/ordering internal/config/overlay internal/config/rgd internal/platform
//	6 orchestration: plugin/pipeline
//	7 front ends: internal/cmp internal/generator internal/server internal/transfer internal/docs
//	8 commands: cmd/argocd-ocm-plugin cmd/argocd-ocm-client
//	9 test support: internal/examples internal/ocmbuild internal/registrytest internal/fixtures internal/testutil internal/render/manifests/manifeststest internal/deps
//
// Test support sits on top so that no product package can import it; tests
// of any layer may.
package internal
