# argocd-ocm-plugin — build, demo and tests. Everything runs offline once the Go
# module cache is filled (the first `make` downloads modules from the Go proxy).

GO        ?= go
BIN       := bin/argocd-ocm-plugin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
PKGS      := ./...
FUZZTIME  ?= 8s

.PHONY: all build demo test test-unit test-argocd test-argocd-v3 test-short vet fmt-check testdata fuzz bench clean

all: build

# The plugin and the thin client the sidecar runs per generation (see serve).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/argocd-ocm-plugin ./cmd/argocd-ocm-client

# Render the bundled example component (a Helm chart in an offline CTF): no network.
demo: build
	$(BIN) render --repository testdata/demo/ctf --component example.com/demo/podinfo --version 1.0.0 \
		--release-name demo --namespace demo --set replicaCount=2

# All tests: vet, formatting, unit and integration tests (in-process registry,
# real Helm and kustomize, real OCM CLI fixtures from ../shared), brief fuzzing,
# and the Argo CD contract tests (Argo CD v2.14.21's own cmpserver and
# repo-server code, in the separate module test/argocd).
test: vet fmt-check test-unit fuzz test-argocd

test-unit:
	$(GO) test -count=1 $(PKGS)

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
	rm -rf bin
