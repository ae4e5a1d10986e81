# syntax=docker/dockerfile:1
# The argocd-ocm-plugin sidecar image: one static binary, no shell.
#
#   docker build -t ghcr.io/argocd-ocm-plugin/argocd-ocm-plugin:$(git describe --tags --always) \
#     --build-arg VERSION=$(git describe --tags --always) .
#
# In the pod the entrypoint is `argocd-ocm-plugin serve -- argocd-cmp-server`
# (argocd-cmp-server copied from the Argo CD image into the shared var-files
# volume, manifests/install): the warm render server, which supervises
# argocd-cmp-server; that runs argocd-ocm-client from PATH per generation and
# needs no shell either. CA certificates (for registries) come with
# the distroless base.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd ./cmd
COPY plugin ./plugin
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/ ./cmd/argocd-ocm-plugin ./cmd/argocd-ocm-client

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/argocd-ocm-plugin /out/argocd-ocm-client /usr/local/bin/
# uid/gid 999: the user argocd-cmp-server must run as (it shares the socket
# volume with the repo-server, which runs as 999).
USER 999:999
ENV ARGOCD_OCM_CACHE_DIR=/tmp/argocd-ocm-plugin-cache
ENTRYPOINT ["/usr/local/bin/argocd-ocm-plugin"]
CMD ["--help"]
