// Package e2e runs argocd-ocm-plugin under a real Argo CD (issue 29): Argo
// CD v3.6.2's own argocd-repo-server, argocd-application-controller,
// argocd-applicationset-controller and argocd-commit-server binaries, a real
// kube-apiserver v1.37.0, etcd and redis (Debian's), all on loopback in
// private network, PID and mount namespaces (unshare; root), the sidecar
// started with the command and environment of manifests/install's container
// (sidecar_test.go). It is a module of its own: Argo
// CD's Kubernetes libraries stay out of the product's go.mod, and Argo CD
// and kube-apiserver build from this module in one `go build` (the tool
// directives in go.mod).
//
// Run it with `make e2e` from the repository's root: it builds the plugin,
// Argo CD and kube-apiserver (GOTOOLCHAIN=go1.27.4), installs etcd-server
// and redis-server with apt-get when missing, writes the hostile fixtures
// and runs the scenarios in scenarios_test.go. Without the E2E_* variables
// the Makefile sets, the tests skip. E2E_KEEP=1 keeps the logs of every
// process (the directory is printed at the end).
package e2e
