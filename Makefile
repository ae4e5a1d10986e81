# argocd-ocm-plugin — build, demo and tests. Everything runs offline once the Go
# module cache is filled (the first `make` downloads modules from the Go proxy).

GO        ?= go
BIN       := bin/argocd-ocm-plugin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
PKGS      := ./...
FUZZTIME  ?= 8s

.PHONY: all build install image release demo test test-unit test-release test-argocd test-argocd-v3 test-short vet fmt-check testdata fuzz bench clean

all: build

# The plugin and the thin client the sidecar runs per generation (see serve).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/argocd-ocm-plugin ./cmd/argocd-ocm-client

# Put both binaries on PATH: into $(PREFIX)/bin when PREFIX is set
# (make install PREFIX=/usr/local), else where `go install` puts them
# (GOBIN, default $(go env GOPATH)/bin).
PREFIX ?=
install:
ifneq ($(PREFIX),)
	$(MAKE) build
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bin/argocd-ocm-plugin bin/argocd-ocm-client $(DESTDIR)$(PREFIX)/bin/
else
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/argocd-ocm-plugin ./cmd/argocd-ocm-client
endif

# The sidecar image without a container engine (hack/release, docs/release.md):
# static binaries for linux/amd64 and linux/arm64 FROM scratch, an OCI image
# index written as an OCI layout in bin/image; IMAGE_REPO=host/repo also
# pushes it (tag: the version) with the credentials of the docker config.
# Reproducible: SOURCE_DATE_EPOCH (default: the commit time) is every timestamp.
IMAGE_REPO ?=
image:
	$(GO) run -C hack/release . image -version $(VERSION) -out bin/image $(if $(IMAGE_REPO),-push $(IMAGE_REPO))

# A release in dist/: binaries for linux/darwin x amd64/arm64, SHA256SUMS, an
# SPDX SBOM, the image (dist/image, pushed with IMAGE_REPO) and the install
# manifests pinned to the image digest (dist/manifests). Signing: docs/release.md.
release:
	@echo "$(VERSION)" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$' || { echo "make release VERSION=vX.Y.Z (got $(VERSION))"; exit 1; }
	$(GO) run -C hack/release . dist -version $(VERSION) -out dist $(if $(IMAGE_REPO),-push $(IMAGE_REPO))

# Render the bundled example component (a Helm chart in an offline CTF): no network.
demo: build
	$(BIN) render --repository testdata/demo/ctf --component example.com/demo/podinfo --version 1.0.0 \
		--release-name demo --namespace demo --set replicaCount=2

# All tests: vet, formatting, unit and integration tests (in-process registry,
# real Helm and kustomize, real OCM CLI fixtures from ../shared), brief fuzzing,
# and the Argo CD contract tests (Argo CD v2.14.21's own cmpserver and
# repo-server code, in the separate module test/argocd).
test: vet fmt-check test-unit test-release fuzz test-argocd

test-unit:
	$(GO) test -count=1 $(PKGS)

# The release tooling's own module (image assembly and round trip through a
# loopback registry, signing, SBOM, pinning); its image test links the
# linux/amd64 binaries only (see hack/release/internal/image).
test-release:
	cd hack/release && $(GO) vet ./... && $(GO) test -count=1 ./...

# Argo CD contract tests; each module builds Argo CD (cold: ~10 min for v2,
# ~15-25 min for v3 on 2 cores; warm: ~1.5 min).
test-argocd:
	cd test/argocd && $(GO) vet ./... && $(GO) test -count=1 ./...

test-argocd-v3:
	cd test/argocd/argocd3 && $(GO) vet ./... && $(GO) test -count=1 ./...

test-short:
	$(GO) test -short $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Every fuzz target for FUZZTIME (CI: brief; for a long run: make fuzz FUZZTIME=10m).
fuzz:
	FUZZTIME=$(FUZZTIME) ./hack/fuzz.sh

# Side-by-side figures against helm template and kustomize build (see bench/README.md);
# the first run builds the reference CLIs (3-7 min), later runs take a few minutes.
BENCHFLAGS ?=
bench:
	CGO_ENABLED=0 $(GO) run ./bench/harness $(BENCHFLAGS)

# Rebuild the committed example CTF from testdata/src.
testdata:
	$(GO) run ./hack/gen-testdata

clean:
	rm -rf bin dist
