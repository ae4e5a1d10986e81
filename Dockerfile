# syntax=docker/dockerfile:1
# The argocd-ocm-plugin sidecar image with a container engine. Releases do not
# use this file: `make image` (hack/release, docs/release.md) assembles the same
# layout reproducibly without Docker — FROM scratch, user 999, CA certificates,
# /tmp, HOME=/home/argocd, the CMP config at
# /home/argocd/cmp-server/config/plugin.yaml, static binaries in
# /usr/local/bin — as an OCI image index for linux/amd64 and linux/arm64.
# Keep the two in step.
#
#   docker build -t ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin:$(git describe --tags --always) \
#     --build-arg VERSION=$(git describe --tags --always) .
#
# In the pod the command is `argocd-ocm-plugin serve --plugin-socket
# /home/argocd/cmp-server/plugins/argocd-ocm-plugin.sock` (manifests/install):
# the warm render server answers the repo-server on Argo CD's plugin socket
# itself. It is also the image's default command. plugin.yaml is for the
# alternative command, `serve -- /var/run/argocd/argocd-cmp-server`
# (docs/argocd.md), which runs argocd-ocm-client from PATH per generation.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd ./cmd
COPY *.go ./
COPY errdef ./errdef
COPY ocm ./ocm
COPY signing ./signing
COPY policy ./policy
COPY internal ./internal
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/ ./cmd/argocd-ocm-plugin ./cmd/argocd-ocm-client
RUN mkdir -p /rootfs/etc /rootfs/tmp /rootfs/home/argocd/cmp-server/config /rootfs/home/argocd/cmp-server/plugins \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nargocd:x:999:999:argocd:/home/argocd:/sbin/nologin\n' > /rootfs/etc/passwd \
 && printf 'root:x:0:\nargocd:x:999:\n' > /rootfs/etc/group \
 && printf 'hosts: files dns\n' > /rootfs/etc/nsswitch.conf \
 && chmod 1777 /rootfs/tmp && chown -R 999:999 /rootfs/home/argocd
COPY manifests/install/plugin.yaml /rootfs/home/argocd/cmp-server/config/plugin.yaml

FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/argocd-ocm-plugin /out/argocd-ocm-client /usr/local/bin/
# uid/gid 999: the repo-server's user, with which the sidecar shares the
# socket volume.
USER 999:999
ENV PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/argocd ARGOCD_OCM_CACHE_DIR=/tmp/argocd-ocm-plugin-cache
WORKDIR /home/argocd
ENTRYPOINT ["/usr/local/bin/argocd-ocm-plugin"]
CMD ["serve", "--plugin-socket", "/home/argocd/cmp-server/plugins/argocd-ocm-plugin.sock"]
