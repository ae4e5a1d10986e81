#!/usr/bin/env bash
# Re-create the CTFs of testdata/ocm-examples/<example>/ from their component constructors with the NEW
# OCM CLI (open-component-model monorepo, `ocm` v0.13.0).
#
#   OCM=/path/to/ocm [EXAMPLES="helm-simple ..."] hack/ocm-examples/pack.sh
#
# Build the CLI offline first, e.g.
#   MIRROR=<git dir of open-component-model/open-component-model> SRC=<source dir> OUT=<bin dir> \
#     ../shared/tools/ocm-v2/build.sh          # -> <bin dir>/ocm (tag cli/v0.13.0)
#
# For every example the script stages a scratch working directory (mktemp) with the example's files, the
# shared local chart ../charts/podinfo as ./charts/podinfo and, for kustomize-configuration-localization,
# the ./oci-layout that upstream builds with `oras push --oci-layout` (built here with tar/gzip/sha256sum/jq,
# byte-for-byte reproducible), runs
#   ocm add component-version --repository ctf::<scratch>/ctf --constructor component-constructor.yaml \
#     --working-directory <scratch> --skip-reference-digest-processing ...
# and replaces <example>/ctf/ (CTF, directory form) and <example>/descriptors/ (`ocm get cv -o yaml` of every
# version in the CTF). No network: image resources are digest-pinned references (accesses, not inputs);
# --skip-reference-digest-processing keeps the CLI from resolving them (it would HEAD ghcr.io otherwise), so
# those resources carry no `digest` in the descriptor.
# HOME, the blob cache and the temp folder live in the scratch directory (no user OCM config is read).
#
# Determinism: the RGD/file blobs, the kustomize OCI layout and the descriptors' resource sections are the same
# on every run except for Helm charts: the CLI's Helm/v1 input writes an OCI manifest with an
# `org.opencontainers.image.created` annotation (oras PackManifest, time.Now()), so the chart manifest digest
# (= the resource's localReference and digest), the component's OCI index and thus the CTF's blobs change on every
# run. Goldens do not depend on it (the chart tgz content is the same).
set -euo pipefail
: "${OCM:?set OCM to the ocm v0.13.0 binary}"
OCM=$(cd "$(dirname "$OCM")" && pwd)/$(basename "$OCM")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
EX=$ROOT/testdata/ocm-examples
EXAMPLES=${EXAMPLES:-"helm-simple helm-configuration-localization kustomize-configuration-localization helm-nested helm-simple-nested-status chained-rgds"}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export HOME=$T/home
mkdir -p "$HOME"
"$OCM" version

# oci_layout SRC DST: OCI image layout with one manifest tagged "latest": artifactType
# application/vnd.cncf.flux.config.v1+json, empty config, one layer application/vnd.cncf.flux.content.v1.tar+gzip
# = tar.gz of SRC (what upstream's README does with oras, minus oras' created-timestamp annotation).
oci_layout() {
  local src=$1 dst=$2 b=$2/blobs/sha256
  mkdir -p "$b"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$src" -cf - . | gzip -n -9 > "$T/layer"
  local ld ls cd=44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a
  ld=$(sha256sum "$T/layer" | cut -d' ' -f1); ls=$(stat -c %s "$T/layer")
  mv "$T/layer" "$b/$ld"
  printf '{}' > "$b/$cd"
  jq -cn --arg ld "sha256:$ld" --argjson ls "$ls" --arg cd "sha256:$cd" '{
    schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
    artifactType: "application/vnd.cncf.flux.config.v1+json",
    config: {mediaType: "application/vnd.oci.empty.v1+json", digest: $cd, size: 2, data: "e30="},
    layers: [{mediaType: "application/vnd.cncf.flux.content.v1.tar+gzip", digest: $ld, size: $ls,
              annotations: {"org.opencontainers.image.title": "kustomize.tar.gz"}}]}' | tr -d '\n' > "$T/m"
  local md ms
  md=$(sha256sum "$T/m" | cut -d' ' -f1); ms=$(stat -c %s "$T/m")
  mv "$T/m" "$b/$md"
  printf '{"imageLayoutVersion":"1.0.0"}' > "$dst/oci-layout"
  jq -cn --arg md "sha256:$md" --argjson ms "$ms" '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json", artifactType: "application/vnd.cncf.flux.config.v1+json",
                 digest: $md, size: $ms, annotations: {"org.opencontainers.image.ref.name": "latest"}}]}' | tr -d '\n' > "$dst/index.json"
}

for e in $EXAMPLES; do
  echo "== $e"
  W=$T/work/$e
  mkdir -p "$W"
  tar -C "$EX/$e" --exclude=./ctf --exclude=./descriptors --exclude='./golden-*' -cf - . | tar -C "$W" -xf -
  if grep -q './charts/podinfo' "$EX/$e/component-constructor.yaml"; then
    mkdir -p "$W/charts" && cp -r "$EX/charts/podinfo" "$W/charts/podinfo"
  fi
  [ -d "$W/kustomize" ] && oci_layout "$W/kustomize" "$W/oci-layout"
  find "$W" -exec touch -h -d @0 {} +   # fixed mtimes for the CLI's directory/tar inputs
  (cd "$W" && "$OCM" add component-version --repository "ctf::$W/ctf" --constructor "$W/component-constructor.yaml" \
     --working-directory "$W" --blob-cache-directory "$T/cache" --temp-folder "$T" \
     --skip-reference-digest-processing --loglevel warn -o table)
  rm -rf "$EX/$e/ctf" "$EX/$e/descriptors"
  mkdir -p "$EX/$e/descriptors"
  cp -r "$W/ctf" "$EX/$e/ctf"
  # one descriptor file per component version in the CTF (tagged index entries)
  jq -r '.artifacts[] | select(.tag != null) | "\(.repository):\(.tag)"' "$EX/$e/ctf/artifact-index.json" |
  while read -r rt; do
    name=${rt%:*}; name=${name#component-descriptors/}; ver=${rt##*:}
    (cd "$T" && "$OCM" get component-version "ctf::$EX/$e/ctf//$name:$ver" -o yaml --loglevel warn) \
      > "$EX/$e/descriptors/$(echo "$name" | tr / _)_$ver.yaml"
  done
  du -sh "$EX/$e/ctf"
done
