// Package argocdline runs the core contract tests of ../ (Argo CD v3.6, the
// newest line) against an older supported Argo CD line: its config
// management plugin server in-process with manifests/install/plugin.yaml, and
// its stock install.yaml under the install Component. Argo CD supports its
// three newest minor lines; each older one is a module of its own because
// each pins its own Kubernetes libraries.
//
// This module is Argo CD v3.5.8; ../argocd34 runs the same file
// (cmpserver_test.go, a link to this one) against v3.4.14.
//
// Run with: cd test/argocd/argocd35 && go test ./...
package argocdline
