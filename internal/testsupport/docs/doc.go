// Package docs keeps the documentation runnable: its test extracts every
// fenced shell and YAML block of README.md and docs/**/*.md (new pages are
// picked up by the walk) and runs or validates it.
//
// Shell blocks (```sh, ```bash, ```shell) of a page run in order, in one bash
// session (`set -euo pipefail`), in a temporary copy of the repository, with
// a PATH on which argocd-ocm-plugin is NOT installed: what a reader of that
// page can paste into a fresh checkout, in sequence. Every shell block is
// also checked with `bash -n` and by lints for what cannot run here:
// kubectl namespaces used before they are created, `--server-side` without
// `--force-conflicts`, `-k DIR` that does not build offline (built with the
// kustomize library; `bin/manifests/X`, what make manifests writes, as its
// source `manifests/X`) or that installs Argo CD's install.yaml without
// `make argocd-manifests` before it, a Helm chart without `helm repo add`
// and `--version`, `cd` into a directory that does not exist from where the
// previous blocks left the reader, and the plugin called by a bare name that
// no step put on PATH (`make build` puts it in bin/).
//
// YAML blocks (```yaml) are parsed as YAML 1.2, then validated by what they
// are: a ComponentDeployment by the plugin's strict decoder (internal/planning/deployment)
// and the published JSON schema (docs/schema), an Argo CD Application,
// ApplicationSet or AppProject by the openAPIV3Schema of Argo CD's own CRDs
// (manifests/argocd/argo-cd-*/install.yaml, which make argocd-manifests
// writes from the Go module cache), made strict as the API server's field
// validation is (unknown fields are errors), any other object by having
// apiVersion and kind.
//
// A block that cannot run or is not a whole document says so in an HTML
// comment on the line before its fence (invisible when rendered):
//
//	<!-- docs-test: needs-cluster -->   shell: syntax and lints only
//	<!-- docs-test: no-run REASON -->   shell: syntax and lints only (slow, installs, placeholders)
//	<!-- docs-test: definition-spec --> YAML: the spec of a ComponentDeployment (decoded strictly)
//	<!-- docs-test: platform-config --> YAML: a platform config (internal/planning/platform, strictly)
//	<!-- docs-test: fragment REASON --> YAML: part of a document; parsed only
//
// A YAML block without apiVersion and kind and without a marker fails: say
// what it is.
package docs
