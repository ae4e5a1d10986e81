# argocd-ocm-plugin — build, demo and tests. Everything runs offline once the Go
# module cache is filled (the first `make` downloads modules from the Go proxy).

GO        ?= go
BIN       := bin/argocd-ocm-plugin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
PKGS      := ./...
FUZZTIME  ?= 10s

.PHONY: all build demo test test-short vet fmt-check lint testdata fuzz bench clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/argocd-ocm-plugin

# Render the bundled example component (a Helm chart in an offline CTF): no network.
demo: build
	$(BIN) render --repository testdata/demo/ctf --component example.com/demo/podinfo --version 1.0.0 \
		--release-name demo --namespace demo --set replicaCount=2

# All tests: vet, formatting, unit and integration tests (in-process registry,
# real Helm and kustomize, real OCM CLI fixtures from ../shared), brief fuzzing.
test: vet fmt-check
	$(GO) test -count=1 $(PKGS)

test-short:
	$(GO) test -short $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Rebuild the committed example CTF from testdata/src.
testdata:
	$(GO) run ./hack/gen-testdata

clean:
	rm -rf bin
