// Package argocd holds the Argo CD contract tests of argocd-ocm-plugin. It is
// a separate Go module so that Argo CD's dependencies (Kubernetes 0.37,
// gitops-engine, …) stay out of the product's go.mod. It runs Argo CD
// v3.6.2, the newest supported line (Go 1.27: GOTOOLCHAIN=go1.27.4); the
// older supported lines run the core of it in ./argocd35 (v3.5.8) and
// ./argocd34 (v3.4.14).
//
// The tests build the plugin binary from the repository root, put it on PATH
// and run Argo CD's own code against it:
//
//   - cmpserver_test.go: Argo CD's config management plugin server
//     (cmpserver) in-process with manifests/install/plugin.yaml, fed a
//     repository stream the way the repo-server sends it (util/cmp);
//   - reposerver_test.go: Argo CD's repo-server service (reposerver/repository)
//     generating an Application's manifests from a local git repository, so
//     the plugin environment (ARGOCD_ENV_ prefixing, parameters, KUBE_VERSION)
//     is built by Argo CD itself;
//   - sidecar_test.go: the sidecar as the install runs it (serve
//     --plugin-socket), and the alternative command with Argo CD's real
//     argocd-cmp-server binary, each asked for a generation by Argo CD's
//     own client;
//   - pluginservice_test.go: the sidecar's own plugin service (serve
//     --plugin-socket), driven by the repo-server's code (GenerateManifests,
//     GetAppDetails, DetectConfigManagementPlugin) and compared with what the
//     same code gets through argocd-cmp-server: the same objects,
//     announcements and plugin error lines;
//   - manifests_test.go: the install overlay builds with kustomize over Argo
//     CD's stock install.yaml (what make argocd-manifests writes, checked
//     against the module zip go.sum pins), the Helm values say the same as the
//     overlay, and the examples decode strictly into Argo CD's types
//     (ApplicationSets are expanded by Argo CD's generators).
//
// Run with: make test-argocd (make argocd-manifests, then cd test/argocd &&
// GOTOOLCHAIN=go1.27.4 go test ./...)
package argocd
