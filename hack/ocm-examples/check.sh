#!/usr/bin/env bash
# Render every testdata/ocm-examples/<example>/ctf with the plugin and compare with the goldens (read-only).
#
#   go build -o /tmp/aop ./cmd/argocd-ocm-plugin && AOP=/tmp/aop hack/ocm-examples/check.sh
#
# Per example and deployer block: `render --definition rgd:` (Argo CD block) and `rgd:@flux` (Flux block, compared
# with golden-flux.yaml when there is one, else with golden-argocd.yaml), Application name "demo", namespace
# "default", no parameters (instance spec defaults). One line per case: match / differs (+ the differences) /
# fails (+ the plugin's error line). Exit 1 when any case does not match.
set -uo pipefail
: "${AOP:?set AOP to the argocd-ocm-plugin binary}"
DIR=$(cd "$(dirname "$0")" && pwd)
EX=$(cd "$DIR/../../testdata/ocm-examples" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export HOME=$T/home
mkdir -p "$HOME"
P=ocm.software/ocm-k8s-toolkit/examples
rc=0
while read -r e comp; do
  for d in argocd flux; do
    def=rgd:; [ "$d" = flux ] && def=rgd:@flux
    g=$EX/$e/golden-$d.yaml; [ -f "$g" ] || g=$EX/$e/golden-argocd.yaml
    if "$AOP" render --repository "$EX/$e/ctf" --component "$comp" --version 1.0.0 --release-name demo --namespace default \
         --definition "$def" > "$T/out.yaml" 2> "$T/err"; then
      if res=$(python3 "$DIR/compare.py" "$g" "$T/out.yaml"); then echo "$e [$def]: match"
      else echo "$e [$def]: differs"; echo "$res" | sed 's/^/    /'; rc=1; fi
    else
      echo "$e [$def]: fails: $(head -1 "$T/err")"; rc=1
    fi
  done
done <<EOF
helm-simple $P/helm-simple
helm-configuration-localization $P/helm-configuration-localization
kustomize-configuration-localization $P/kustomize-configuration-localization
helm-nested $P/helm-nested
helm-simple-nested-status $P/helm-simple-nested-status
chained-rgds ocm.software/ocm-k8s-toolkit/system
EOF
exit $rc
