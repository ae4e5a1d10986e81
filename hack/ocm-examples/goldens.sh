#!/usr/bin/env bash
# Re-create the Helm/kustomize goldens of testdata/ocm-examples/ (not the hand-written chained-rgds one).
#
#   HELM=/tmp/refbin/helm KUSTOMIZE=/tmp/refbin/kustomize hack/ocm-examples/goldens.sh
#
# Build the reference tools from the versions the product uses:
#   cd bench/tools && go build -o /tmp/refbin/helm helm.sh/helm/v3/cmd/helm \
#                  && go build -o /tmp/refbin/kustomize sigs.k8s.io/kustomize/kustomize/v5
#
# Each golden is what the RGD's deployer block means, with its ${…} expressions substituted BY HAND from the
# instance spec defaults and toOCI() of the image resources (see testdata/ocm-examples/README.md):
#   golden-argocd.yaml: the Argo CD Application block (helm: release = spec.source.helm.releaseName, values =
#                       valuesObject, namespace = destination.namespace; kustomize: source.kustomize.patches
#                       appended to the tree's kustomization.yaml, as Argo CD does)
#   golden-flux.yaml:   the Flux HelmRelease/Kustomization block, only where it renders differently
set -euo pipefail
: "${HELM:?set HELM to helm v3.22.0}" "${KUSTOMIZE:?set KUSTOMIZE to kustomize v5.8.2}"
EX=$(cd "$(dirname "$0")/../../testdata/ocm-examples" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export HOME=$T/home HELM_CACHE_HOME=$T/helm/cache HELM_CONFIG_HOME=$T/helm/config HELM_DATA_HOME=$T/helm/data
mkdir -p "$HOME"
C=$EX/charts/podinfo

# helm-simple / helm-nested / helm-simple-nested-status: no values; Argo releaseName = the literal or
# ${schema.spec.prefix} (default = the example's name); the Flux releaseName is the same string.
for e in helm-simple helm-nested helm-simple-nested-status; do
  "$HELM" template "$e" "$C" --namespace default-argocd > "$EX/$e/golden-argocd.yaml"
done

# helm-configuration-localization: image = toOCI(ghcr.io/stefanprodan/podinfo:6.9.1@sha256:2625…) registry/repository
# and tag; ui.message = default "hello world". Argo release = ${schema.spec.prefix} = helm-configuration-localization,
# Flux release = ${schema.spec.podinfo.releaseName} = podinfo (HelmRelease in the instance namespace "default").
cat > "$T/hcl-values.yaml" <<'EOF'
image:
  repository: ghcr.io/stefanprodan/podinfo
  tag: 6.9.1
ui:
  message: hello world
EOF
"$HELM" template helm-configuration-localization "$C" --namespace default-argocd -f "$T/hcl-values.yaml" \
  > "$EX/helm-configuration-localization/golden-argocd.yaml"
"$HELM" template podinfo "$C" --namespace default -f "$T/hcl-values.yaml" > "$EX/helm-configuration-localization/golden-flux.yaml"

# kustomize-configuration-localization: image = registry/repository@digest of toOCI(image-resource), message default.
K=$EX/kustomize-configuration-localization
IMG=ghcr.io/stefanprodan/podinfo@sha256:262578cde928d5c9eba3bce079976444f624c13ed0afb741d90d5423877496cb
mkdir -p "$T/argo" "$T/flux"
cp "$K"/kustomize/* "$T/argo/"; cp "$K"/kustomize/* "$T/flux/"
cat >> "$T/argo/kustomization.yaml" <<EOF
patches:
  - patch: '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"$IMG"}]'
    target:
      kind: Deployment
      name: podinfo
  - patch: '[{"op":"add","path":"/spec/template/spec/containers/0/env/-","value":{"name":"PODINFO_UI_MESSAGE","value":"hello world"}}]'
    target:
      kind: Deployment
      name: podinfo
  - patch: |
      - op: replace
        path: /metadata/name
        value: kustomize-configuration-localization-podinfo
      - op: add
        path: /spec/template/metadata/labels/app.kubernetes.io~1name
        value: kustomize-configuration-localization-podinfo
    target:
      kind: Deployment
      name: podinfo
  - patch: |
      apiVersion: autoscaling/v2
      kind: HorizontalPodAutoscaler
      metadata:
        name: podinfo
      \$patch: delete
    target:
      kind: HorizontalPodAutoscaler
      name: podinfo
EOF
# Flux: same patches in YAML form, target names as regex ".*", targetNamespace: default
cat >> "$T/flux/kustomization.yaml" <<EOF
namespace: default
patches:
  - patch: |
      - op: replace
        path: /spec/template/spec/containers/0/image
        value: $IMG
    target:
      kind: Deployment
      name: .*
  - patch: |
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value:
          name: PODINFO_UI_MESSAGE
          value: hello world
    target:
      kind: Deployment
      name: .*
  - patch: |
      - op: replace
        path: /metadata/name
        value: kustomize-configuration-localization-podinfo
      - op: add
        path: /spec/template/metadata/labels/app.kubernetes.io~1name
        value: kustomize-configuration-localization-podinfo
    target:
      kind: Deployment
      name: .*
  - patch: |
      apiVersion: autoscaling/v2
      kind: HorizontalPodAutoscaler
      metadata:
        name: podinfo
      \$patch: delete
    target:
      kind: HorizontalPodAutoscaler
      name: .*
EOF
"$KUSTOMIZE" build "$T/argo" > "$K/golden-argocd.yaml"
"$KUSTOMIZE" build "$T/flux" > "$K/golden-flux.yaml"
