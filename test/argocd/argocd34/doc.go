// Package argocdline runs the core contract tests of ../ (Argo CD v3.6, the
// newest line) against Argo CD v3.4.14, the oldest line Argo CD supports:
// cmpserver_test.go and pluginservice_test.go are links to ../argocd35's
// (see its doc.go).
//
// Run with: cd test/argocd/argocd34 && go test ./...
package argocdline
