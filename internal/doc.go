// Package internal holds everything of argocd-ocm-plugin that is not its
// public Go API (the root package argocdocm and its leaves errdef, ocm,
// signing and policy) or its commands (cmd/). The packages of the module form
// layers by role, in the direction data flows through a generation: a command
// or server receives a request (front ends), the root package orchestrates, a
// planner decides what to render from the component and the Application's
// configuration (planning), renderers produce objects that are finished
// (hooks, waves, localisation, image guard), from content that sources
// resolve, fetch and verify, in formats (the OCM model, blobs, archives)
// built on small utilities.
//
// The folders are the roles: internal/util, internal/format, internal/source,
// internal/render, internal/finish, internal/planning, internal/compose,
// internal/frontend and internal/testsupport; the public leaves are folders
// of their own at the root, low in the layers (application, the request a
// plan is made from, sits with planning), and the root package
// orchestrates, as oras-go's root does. TestFoldersShowLayers checks that
// every package of the module lives in the folder of its layer (folderRanks
// in layers_test.go), so that the tree shows the layers.
//
// A package may import packages of its own layer and of layers below it,
// never above: the layer of every package of the module is listed here, and
// TestLayers (layers_test.go) checks every import of every non-test file of
// the module (other modules below it, such as test/e2e, apart) against this
// list, and that every package is listed. A new package is added to the list
// in the layer of its role; an import the test refuses means the code is in
// the wrong place, not the list.
//
// Layers, from the bottom (the number is the rank; directories relative to
// the repository, "." is the root package):
//
//	0 utilities: errdef internal/util/counting internal/util/lru internal/util/bytesize internal/util/parallel internal/util/fieldpath internal/util/suggest internal/util/startheap internal/util/confine internal/util/param internal/util/nesting
//	1 formats: internal/format/yamlfile internal/format/imageref internal/format/artifactset internal/format/blob internal/format/archive internal/format/accessmethod ocm signing
//	2 sources: internal/source/registry policy internal/source/cache internal/source/ocm/ocimapping internal/source/ocm/ctf internal/source/ocm/oci internal/source/ocm/resolve internal/source/access internal/source/verify
//	3 renderers: internal/render/manifests internal/render/helm internal/render/helm/engine internal/render/kustomize
//	4 finishing: internal/finish/hooks internal/finish/localize internal/finish/imageguard
//	5 planning: application internal/planning/plan internal/planning/deployment internal/planning/expr internal/planning/explain internal/planning/deployment/ordering internal/planning/overlay internal/planning/rgd internal/planning/rgd/cel internal/planning/rgd/graph internal/planning/rgd/schema internal/planning/platform
//	6 orchestration: . internal/compose/policyregistry
//	7 front ends: internal/frontend/cmp internal/frontend/cmpservice internal/frontend/generator internal/frontend/server internal/frontend/transfer
//	8 commands: cmd/argocd-ocm-plugin cmd/argocd-ocm-client
//	9 test support: internal/testsupport/examples internal/testsupport/plantest internal/testsupport/ocmbuild internal/testsupport/registrytest internal/testsupport/sigstoretest internal/testsupport/fixtures internal/testsupport/heldout internal/testsupport/testutil internal/render/manifests/manifeststest internal/testsupport/docs
//	10 tools: bench/harness bench/procstat bench/profrender hack/attackfixtures hack/exportcount hack/gen-testdata hack/registry hack/testsummary
//
// Test support sits above the product so that no product package can import
// it; tests of any layer may. The tools (benchmarks, generators, checks) sit
// on top of everything.
package internal
