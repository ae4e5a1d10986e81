// Command release builds what a release of argocd-ocm-plugin ships, without a
// container engine (see docs/release.md):
//
//	release image   [flags]  the sidecar image as an OCI layout (and push it)
//	release dist    [flags]  binaries, SHA256SUMS, SBOM, image, pinned manifests
//	release push    -layout DIR -ref HOST/REPO[:TAG]
//	release keygen  -out PREFIX               a throwaway ECDSA P-256 key pair
//	release sign    -key KEY -image HOST/REPO@sha256:…
//	release verify  -key PUB -image HOST/REPO@sha256:…
//
// Run it from the repository root with `go run -C hack/release . …` (the
// Makefile's image, release targets) or from here with -root ../...
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
