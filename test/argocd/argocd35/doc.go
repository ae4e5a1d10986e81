// Package argocdline runs the core contract tests of ../ (Argo CD v3.6, the
// newest line) against an older supported Argo CD line: its config
// management plugin server in-process with manifests/install/plugin.yaml, the
// sidecar's own plugin service compared with it through that line's client
// (pluginservice_test.go), and its stock install.yaml under the install
// Component. Argo CD supports its
// three newest minor lines; each older one is a module of its own because
// each pins its own Kubernetes libraries.
//
// This module is Argo CD v3.5.8; ../argocd34 runs the same files
// (cmpserver_test.go and pluginservice_test.go, links to these) against
// v3.4.14.
//
// Run with: cd test/argocd/argocd35 && go test ./...
package argocdline
