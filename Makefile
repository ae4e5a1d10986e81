# argocd-ocm-plugin — build, demo and tests. Everything runs offline once the Go
# module cache is filled (the first `make` downloads modules from the Go proxy).

SHELL     := /bin/bash
GO        ?= go
BIN       := bin/argocd-ocm-plugin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
PKGS      := ./...
FUZZTIME  ?= 8s

.PHONY: reftools reftools-helm test-heldout all help build install image manifests argocd-manifests release demo test test-unit test-release test-argocd test-argocd-v35 test-argocd-v34 test-argocd-v35-vet test-argocd-v34-vet e2e e2e-fleet e2e-build e2e-deps e2e-ready kro-conformance kro-conformance-build kro-conformance-ready test-short vet fmt-check testdata fuzz bench clean

all: build

# What each target does and costs (2 cores; "cold" = empty Go caches).
help:
	@echo 'make demo            render the bundled example (offline): seconds warm, ~4 min cold'
	@echo 'make build           bin/argocd-ocm-plugin and bin/argocd-ocm-client: seconds warm, ~4 min cold'
	@echo 'make test-short      unit tests without re-executions and slow cases: ~2 min warm (the contributor loop)'
	@echo 'make test            vet, gofmt, every test, fuzzing, Argo CD v3.6 contract tests: ~10 min warm, ~40 min cold'
	@echo 'make test-heldout    held-out upstream charts and trees (cilium, istio, kyverno, ...) against the helm v4 and kustomize CLIs: ~15 s warm, ~5 min cold'
	@echo 'make test-argocd-v35 Argo CD v3.5.8 contract tests: ~1 min warm, 8-15 min cold'
	@echo 'make test-argocd-v34 Argo CD v3.4.14 contract tests: ~1 min warm, 8-15 min cold'
	@echo 'make e2e             the plugin under a real Argo CD v3.6.2 + kube-apiserver (test/e2e, root): 3-8 min warm, 20-35 min cold (builds Argo CD)'
	@echo 'make e2e-fleet N=500 ROUNDS=4 REPLICAS=1   the fleet scenarios alone, plugin vs native Helm OCI source (docs/scaling.md)'
	@echo 'make kro-conformance the RGD renderer against kro'"'"'s own controller and a real kube-apiserver (test/kro, root): ~1 min warm, 20-40 min cold'
	@echo 'make bench           side-by-side figures against helm template and kustomize build: ~5 min'
	@echo 'make image           the sidecar image as an OCI layout (IMAGE_REPO=host/repo pushes it): minutes'
	@echo 'make manifests       the install manifests pinned to your image (IMAGE=host/repo@sha256:...) in bin/manifests'
	@echo 'make argocd-manifests Argo CD'"'"'s install.yaml for manifests/argocd, from the Go module cache (go.sum-verified)'
	@echo 'make release         binaries, SBOM, image and pinned manifests in dist/ (VERSION=vX.Y.Z)'
	@echo 'make install         both binaries on PATH (PREFIX=/usr/local or GOBIN)'

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

# The install manifests pinned to an image you built and pushed (make image
# IMAGE_REPO=host/repo prints it as host/repo@sha256:…): bin/manifests, a
# copy of manifests/ where every reference to the sidecar image is that
# digest. Then: kubectl apply -n argocd --server-side -k bin/manifests/argocd
IMAGE ?=
manifests: argocd-manifests
	@test -n "$(IMAGE)" || { echo "make manifests IMAGE=host/repo@sha256:<digest> (what make image IMAGE_REPO=host/repo prints)"; exit 1; }
	$(GO) run -C hack/release . pin -image $(IMAGE) -out bin/manifests

# A release in dist/: binaries for linux/darwin x amd64/arm64, SHA256SUMS, an
# SPDX SBOM, the image (dist/image, pushed with IMAGE_REPO) and the install
# manifests pinned to the image digest (dist/manifests). Signing: docs/release.md.
release: argocd-manifests
	@echo "$(VERSION)" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$' || { echo "make release VERSION=vX.Y.Z (got $(VERSION))"; exit 1; }
	$(GO) run -C hack/release . dist -version $(VERSION) -out dist $(if $(IMAGE_REPO),-push $(IMAGE_REPO))

# Argo CD's stock install.yaml, which manifests/argocd installs (2 MiB), is
# not committed: this copies manifests/install.yaml of the Argo CD module the
# contract tests build against (github.com/argoproj/argo-cd/v3 at the version
# test/argocd/go.mod requires; go mod download checks the module against the
# hash test/argocd/go.sum pins) to manifests/argocd/argo-cd-<version>/install.yaml,
# where the kustomization names it (git-ignored). Offline once the module
# cache holds it. The targets that read manifests/ depend on it; the contract
# tests check the copy against the module (test/argocd/manifests_test.go).
argocd-manifests:
	@cd test/argocd && $(ARGOCD36_GO) mod download github.com/argoproj/argo-cd/v3 && \
	version=$$($(ARGOCD36_GO) list -m -f '{{.Version}}' github.com/argoproj/argo-cd/v3) && \
	dir=$$($(ARGOCD36_GO) list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3) && \
	install -D -m 0644 "$$dir/manifests/install.yaml" "../../manifests/argocd/argo-cd-$$version/install.yaml" && \
	echo "manifests/argocd/argo-cd-$$version/install.yaml: Argo CD $$version's manifests/install.yaml (module verified by test/argocd/go.sum)"

# Render the bundled example component (a Helm chart in an offline CTF): no network.
demo: build
	$(BIN) render --repository testdata/demo/ctf --component example.com/demo/podinfo --version 1.0.0 \
		--release-name demo --namespace demo --set replicaCount=2

# All tests: vet, formatting, unit and integration tests (in-process registry,
# real Helm and kustomize, real OCM CLI fixtures from ../shared), brief fuzzing,
# and the Argo CD contract tests of the newest line (Argo CD v3.6.2's own
# cmpserver and repo-server code, in the separate module test/argocd).
test: vet fmt-check test-heldout test-unit test-release fuzz test-argocd

# go test's package lines as they come, then every skipped test with its
# reason and "N passed, N failed, N skipped" (hack/testsummary).
test-unit: argocd-manifests
	set -o pipefail; $(GO) test -count=1 -json $(PKGS) | $(GO) run ./hack/testsummary

# The release tooling's own module (image assembly and round trip through a
# loopback registry, signing, SBOM, pinning); its image test links the
# linux/amd64 binaries only (see hack/release/internal/image).
test-release: argocd-manifests
	cd hack/release && $(GO) vet ./... && $(GO) test -count=1 ./...

# Argo CD contract tests, one module per supported line. test/argocd is the
# newest line, v3.6.2 (15-25 min cold on 2 cores, ~2 min warm): Go 1.27 and make
# e2e-build's flags (-trimpath, no cgo), so it and make e2e share Argo CD's
# compiled packages. The older lines v3.5.8 and v3.4.14 build with the
# machine's Go (as their releases do); each pins its own Argo CD, Kubernetes
# and golang.org/x versions, so they share next to nothing with v3.6.2 or each
# other (8-15 min cold each, ~1 min warm). test-argocd-vNN-vet compiles a
# line without running it (CI bounds it in time).
ARGOCD36_GO := GOTOOLCHAIN=go1.27.4 CGO_ENABLED=0 GOFLAGS="$(GOFLAGS) -trimpath" $(GO)
test-argocd: argocd-manifests
	cd test/argocd && $(ARGOCD36_GO) vet ./... && $(ARGOCD36_GO) test -count=1 ./...

test-argocd-v35 test-argocd-v34: test-argocd-v%: test-argocd-v%-vet
	cd test/argocd/argocd$* && $(GO) test -count=1 ./...

test-argocd-v35-vet test-argocd-v34-vet: test-argocd-v%-vet:
	cd test/argocd/argocd$* && $(GO) vet ./...

# End-to-end (test/e2e, its own module; README "End-to-end tests"): the
# sidecar as manifests/install runs it, under Argo CD's own repo-server,
# controllers and commit-server with a real kube-apiserver, etcd and redis, all on
# loopback in private network and PID namespaces (needs root: unshare, and
# apt-get for the Debian etcd-server and redis-server when they are missing).
# Argo CD v3.6.2 needs Go 1.27; it and kube-apiserver build in one go build
# (20-35 min cold on 2 cores, seconds warm).
E2E_GO     := GOTOOLCHAIN=go1.27.4 CGO_ENABLED=0 $(GO)
E2E_BIN    := $(CURDIR)/bin/e2e
E2E_BUDGET ?= 300
E2E_FLAGS  ?= -v

e2e: build e2e-deps e2e-build
	cd test/e2e && $(E2E_GO) mod tidy -diff && $(E2E_GO) vet .
	rm -rf $(E2E_BIN)/fixtures && $(GO) run ./hack/attackfixtures $(E2E_BIN)/fixtures
	cd test/e2e && E2E_BIN=$(E2E_BIN) E2E_PLUGIN_BIN=$(CURDIR)/bin E2E_REPO_ROOT=$(CURDIR) E2E_FIXTURES=$(E2E_BIN)/fixtures \
		E2E_ARGOCD_DIR="$$($(E2E_GO) list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)" \
		$(E2E_GO) test -count=1 -timeout 30m $(E2E_FLAGS) .

# The fleet scenarios alone (test/e2e/fleet*_test.go; docs/scaling.md "Measured in
# a real Argo CD"), for figures: N Applications per round through the plugin and
# natively, ROUNDS rounds alternated (plugin first), REPLICAS repo-server replicas.
# make e2e runs them with N=20, 2 rounds.
N        ?= 100
ROUNDS   ?= 4
REPLICAS ?= 1
e2e-fleet: build e2e-deps e2e-build
	rm -rf $(E2E_BIN)/fixtures && $(GO) run ./hack/attackfixtures $(E2E_BIN)/fixtures
	cd test/e2e && E2E_BIN=$(E2E_BIN) E2E_PLUGIN_BIN=$(CURDIR)/bin E2E_REPO_ROOT=$(CURDIR) E2E_FIXTURES=$(E2E_BIN)/fixtures \
		E2E_ARGOCD_DIR="$$($(E2E_GO) list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)" \
		E2E_FLEET_N=$(N) E2E_FLEET_ROUNDS=$(ROUNDS) E2E_FLEET_REPLICAS=$(REPLICAS) \
		$(E2E_GO) test -count=1 -timeout 180m -run '^TestFleet' $(E2E_FLAGS) .

# Argo CD (one multi-call binary; the components are links to it, chosen by
# argv[0]) and kube-apiserver, in one build so shared packages compile once,
# and the git wrapper the repo-server executes for every revision.
# The registry is the CNCF distribution registry's own command from this
# module's pinned distribution (hack/registry); helm is the Helm Argo CD v3.6.2
# ships (its hack/tool-versions.sh), which its repo-server executes for the
# native Helm source the fleet scenarios compare with.
E2E_HELM := helm.sh/helm/v4/cmd/helm@v4.3.2
# Stamped as Helm's Makefile stamps a release (as make reftools does): built from
# the module, helm reports the library's v4.3 and no tree state.
E2E_HELM_VERSION := -X helm.sh/helm/v4/internal/version.version=v4.3.2 -X helm.sh/helm/v4/internal/version.gitTreeState=clean
# kube-apiserver built from its module reports version v0.0.0 (its release
# build stamps it), which charts with a kubeVersion constraint (podinfo's
# >=1.23.0-0) refuse: stamp the version Argo CD v3.6.2 pins.
E2E_KUBE_VERSION := -X k8s.io/component-base/version.gitVersion=v1.37.0 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37
e2e-build:
	cd test/e2e && $(E2E_GO) build -trimpath -ldflags '-s -w $(E2E_KUBE_VERSION)' -o $(E2E_BIN)/ github.com/argoproj/argo-cd/v3/cmd k8s.io/kubernetes/cmd/kube-apiserver
	$(GO) build -trimpath -ldflags '-s -w' -o $(E2E_BIN)/registry ./hack/registry
	GOBIN=$(E2E_BIN) $(E2E_GO) install -trimpath -ldflags '-s -w $(E2E_HELM_VERSION)' $(E2E_HELM)
	mv -f $(E2E_BIN)/cmd $(E2E_BIN)/argocd
	for n in argocd-repo-server argocd-application-controller argocd-applicationset-controller argocd-cmp-server argocd-commit-server; do ln -sf argocd $(E2E_BIN)/$$n; done
	install -m 0755 "$$(cd test/e2e && $(E2E_GO) list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)/hack/git-verify-wrapper.sh" $(E2E_BIN)/

e2e-deps:
	@missing=; command -v etcd >/dev/null || missing="$$missing etcd-server"; command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	if [ -n "$$missing" ]; then \
		[ "$$(id -u)" = 0 ] || { echo "make e2e needs the Debian packages$$missing: run it as root or install them"; exit 1; }; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

# For CI: succeeds when make e2e can run here (root) and its binaries build
# within E2E_BUDGET seconds (warm caches), or fail to build quickly (then make
# e2e shows why); a cold build stopped at the budget keeps what it compiled in
# the build cache for the next run. The last line says why it is not ready.
e2e-ready:
	@[ "$$(id -u)" = 0 ] || { echo "make e2e needs root (unshare, apt-get)"; exit 1; }
	@timeout $(E2E_BUDGET) bash -c '$(MAKE) --no-print-directory e2e-build && cd test/e2e && $(E2E_GO) vet .' >/dev/null 2>&1; \
	[ $$? != 124 ] || { echo "the Argo CD and kube-apiserver build did not finish within $(E2E_BUDGET) s (a cold build cache: 20-35 min on 2 cores)"; exit 1; }

# kro conformance (test/kro, its own module: kro's controller with kro's own
# pins): kro's controller, built from the kro version go.mod pins, and
# kube-apiserver (built as make e2e builds it) on loopback in private network
# and PID namespaces (root); each RGD and instance's objects must equal the
# plugin's render. ~1 min warm; the builds take 20-40 min cold on 2 cores.
KRO_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/kubernetes-sigs/kro)
kro-conformance: build e2e-deps kro-conformance-build
	cd test/kro && $(GO) mod tidy -diff && $(GO) vet .
	cd test/kro && KRO_CONFORMANCE_BIN=$(E2E_BIN) AOP=$(CURDIR)/bin/argocd-ocm-plugin REPO_ROOT=$(CURDIR) \
		KRO_DIR="$$($(GO) list -m -f '{{.Dir}}' github.com/kubernetes-sigs/kro)" \
		$(GO) test -count=1 -timeout 15m -v .

kro-conformance-build:
	@[ "$$(cd test/kro && $(GO) list -m -f '{{.Version}}' github.com/kubernetes-sigs/kro)" = "$(KRO_VERSION)" ] || \
		{ echo "test/kro pins another kro than go.mod ($(KRO_VERSION))"; exit 1; }
	cd test/kro && $(GO) build -trimpath -ldflags '-s -w' -o $(E2E_BIN)/kro-controller github.com/kubernetes-sigs/kro/cmd/controller
	cd test/e2e && $(E2E_GO) build -trimpath -ldflags '-s -w' -o $(E2E_BIN)/ k8s.io/kubernetes/cmd/kube-apiserver

# For CI: as e2e-ready, for the kro conformance suite's builds.
kro-conformance-ready:
	@[ "$$(id -u)" = 0 ] || { echo "make kro-conformance needs root (unshare, apt-get)"; exit 1; }
	@timeout $(E2E_BUDGET) $(MAKE) --no-print-directory kro-conformance-build >/dev/null 2>&1; \
	[ $$? != 124 ] || { echo "kro's controller and kube-apiserver did not build within $(E2E_BUDGET) s (a cold build cache)"; exit 1; }

test-short: argocd-manifests
	$(GO) test -short $(PKGS)

# In groups, with a line per group: a cold vet compiles for minutes.
vet:
	@pkgs=$$($(GO) list $(PKGS)) || exit 1; total=$$(echo "$$pkgs" | wc -l); done=0; \
	while read -r group; do \
		n=$$(echo $$group | wc -w); done=$$((done + n)); \
		echo "vet: $$done/$$total packages"; \
		$(GO) vet $$group || exit 1; \
	done < <(echo "$$pkgs" | xargs -n 12 echo)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Every fuzz target for FUZZTIME (CI: brief; for a long run: make fuzz FUZZTIME=10m).
fuzz:
	FUZZTIME=$(FUZZTIME) ./hack/fuzz.sh

# The reference CLIs the goldens and make bench compare with, Argo CD v3.6.2's:
# helm v4.3.2 (bench/tools) and kustomize v5.8.3 (bench/tools/kustomize, Go 1.27),
# as bin/reftools/helm and bin/reftools/kustomize (hack/realworld-goldens.sh uses them).
reftools: reftools-helm
	cd bench/tools/kustomize && GOTOOLCHAIN=go1.27.4 CGO_ENABLED=0 $(GO) build -ldflags '-s -w' -o $(CURDIR)/bin/reftools/ sigs.k8s.io/kustomize/kustomize/v5

reftools-helm:
	cd bench/tools && CGO_ENABLED=0 $(GO) build -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$$($(GO) list -m -f '{{.Version}}' helm.sh/helm/v4) -X helm.sh/helm/v4/internal/version.gitTreeState=clean" -o $(CURDIR)/bin/reftools/ helm.sh/helm/v4/cmd/helm

# Held-out upstream charts and kustomize trees (testdata/heldout/cases.txt: cilium, istio, kyverno,
# traefik, dapr, calico, Argo CD's and flux2's installs, ...), rendered by the plugin's
# engines and by the helm v4 and kustomize CLIs, compared object for object and in order. They come
# from the Go modules that ship them (module proxy, ~130 MB once); ~15 s warm. make test runs it before
# test-unit, so that TestHelmVersionIsTheLiveCLIs finds the CLI it builds.
test-heldout: reftools
	HELDOUT_HELM=$(CURDIR)/bin/reftools/helm HELDOUT_KUSTOMIZE=$(CURDIR)/bin/reftools/kustomize \
		$(GO) test -count=1 -run '^TestHeldOut(Charts|Trees)(AsComponents)?$$' . ./internal/render/helm/ ./internal/render/kustomize/

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
