// Package argocd3 runs the core contract tests of ../ (Argo CD v2.14.21)
// against Argo CD v3.5.7, the current release line: its config management
// plugin server (which, unlike v2, passes env entries with empty values) and
// its stock install.yaml under the install Component (v3's copyutil links
// argocd-cmp-server instead of copying it). A module of its own: v3 needs
// Kubernetes 0.36, v2 0.31.
//
// Run with: cd test/argocd/argocd3 && go test ./...
package argocd3
