// Command release builds what a release of argocd-ocm-plugin ships, without a
// container engine (see docs/release.md):
//
//	release image   [flags]  the sidecar image as an OCI layout (and push it)
//	release dist    [flags]  binaries, SHA256SUMS, SBOM, image, pinned manifests
//	release push    -layout DIR -ref HOST/REPO[:TAG]
//	release pin     -image HOST/REPO@sha256:… manifests/ pinned to that image, in bin/manifests
//	release keygen  -out PREFIX               a throwaway ECDSA P-256 key pair
//	release sign    -key KEY -image HOST/REPO@sha256:…
//	release verify  -key PUB -image HOST/REPO@sha256:…
//
// Run it from the repository root with `go run -C hack/release . …` (the
// Makefile's image, manifests and release targets) or from here with -root ../...
//
// Why not ko and cosign: ko builds Go images well, but on top of a base image
// it pulls from a registry (this tool needs no network and no base: the
// image is FROM scratch, two static binaries and plugin.yaml at the path
// argocd-cmp-server reads, byte-identical on every machine for a commit),
// and it cannot put plugin.yaml outside its kodata directory. cosign's
// key-based signature is a simple-signing payload, an ECDSA signature and a
// tag (internal/cosign, ~300 lines, checked against cosign's format); its
// module would bring sigstore's transparency-log, Fulcio and TUF clients into
// the release module for a feature the release does not use. Users verify
// with cosign itself (docs/release.md). Revisit if releases go keyless.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: release image|dist|push|pin|keygen|sign|verify [flags]")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "image":
		return cmdImage(ctx, rest)
	case "dist":
		return cmdDist(ctx, rest)
	case "push":
		return cmdPush(ctx, rest)
	case "pin":
		return cmdPin(rest)
	case "keygen":
		return cmdKeygen(rest)
	case "sign":
		return cmdSign(ctx, rest)
	case "verify":
		return cmdVerify(ctx, rest)
	}
	return fmt.Errorf("unknown command %q (image, dist, push, pin, keygen, sign, verify)", cmd)
}
