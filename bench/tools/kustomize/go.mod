// The reference kustomize CLI the benchmarks and the fidelity goldens compare
// with: kustomize v5.8.3, the CLI Argo CD v3.6.2 runs. A module of its own:
// its kube-openapi (structured-merge-diff v7) does not build beside the
// Kubernetes libraries of Helm v4.3.2 (../), and it needs Go 1.27
// (GOTOOLCHAIN=go1.27.4).
module github.com/argocd-ocm-plugin/argocd-ocm-plugin/bench/tools/kustomize

go 1.27.0

require sigs.k8s.io/kustomize/kustomize/v5 v5.8.3

require (
	github.com/blang/semver/v4 v4.0.0 // indirect
	github.com/go-errors/errors v1.5.1 // indirect
	github.com/go-openapi/jsonpointer v1.0.0 // indirect
	github.com/go-openapi/jsonreference v1.0.0 // indirect
	github.com/google/gnostic-models v0.7.1 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/monochromegane/go-gitignore v0.0.0-20200626010858-205db1a8cc00 // indirect
	github.com/sergi/go-diff v1.4.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/xlab/treeprint v1.2.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/evanphx/json-patch.v4 v4.13.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/kube-openapi v0.0.0-20261001230523-97fa35140926 // indirect
	sigs.k8s.io/kustomize/api v0.21.3 // indirect
	sigs.k8s.io/kustomize/cmd/config v0.21.3 // indirect
	sigs.k8s.io/kustomize/kyaml v0.21.3 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
