package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/verify"
)

func newVerifyCommand(p *process, stdout, stderr io.Writer, getenv func(string) string, diag *diagnostics) *cobra.Command {
	var repository, component, version, output string
	var sig signatureFlags
	c := &cobra.Command{
		Use:   "verify --repository REPO --component NAME --version VERSION --signature NAME (--public-key FILE | --root-ca FILE | --trusted-root FILE --certificate-identity ID --certificate-oidc-issuer URL)",
		Short: "Verify a component version like `ocm verify`: signatures, reference digests and every resource digest computable offline",
		Long: `Verify a component version as ocm verify componentversions does: each --signature with its key, the
digests of component references (recursively), and the digest of every resource that can be checked
offline: local blobs are re-hashed (genericBlobDigest/v1: the blob; ociArtifactDigest/v1: the manifest of
the OCI artifact set), and a digest pinned in an access reference (imageReference x@sha256:…) is compared
with the declared one. Each resource is reported as checked, mismatch or not-checkable (with the reason).

Signatures: RSASSA-PSS and RSASSA-PKCS1-V1_5 (hex, or PEM) with --public-key (PEM public key or
certificate); a PEM signature that carries the signer's certificate with --root-ca (the certificate must
chain to it, have the codeSigning usage and be valid now); GPG with --public-key naming an armored OpenPGP
public key. Keyless signatures (Sigstore/v1alpha1) offline with cosign's flags: --trusted-root (a Sigstore
trusted_root.json), --certificate-identity or --certificate-identity-regexp, and --certificate-oidc-issuer or
--certificate-oidc-issuer-regexp (regular expressions must match the whole value); the signature must be in a
transparency log of the root, or with --insecure-ignore-tlog carry a timestamp of its timestamp authority.
Exit 0 only when every signature verifies and no resource mismatches; a failure prints one error line on
stderr and nothing on stdout.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ectx := errdef.Error{Component: component, Version: version}
			if repository == "" || component == "" || version == "" {
				return errdef.Wrap(fmt.Errorf("%w: --repository, --component and --version are required", errdef.ErrInvalidInput), ectx)
			}
			if output != "text" && output != "json" {
				return errdef.Wrap(fmt.Errorf("%w: --output %s: want text or json", errdef.ErrInvalidInput, errdef.Quote(output)), ectx)
			}
			if sig.empty() {
				return errdef.Wrap(fmt.Errorf("%w: --signature and --public-key, --root-ca or --trusted-root are required", errdef.ErrInvalidInput), ectx)
			}
			sigs, err := sig.signatures()
			if err != nil {
				return errdef.Wrap(err, ectx)
			}
			ctx, cancel, err := withDeadline(cmd.Context(), 0, getenv)
			if err != nil {
				return errdef.Wrap(err, ectx)
			}
			defer cancel()
			var notes bytes.Buffer // to stderr on success only: a failure is one line
			report, resolved, err := verifyComponent(ctx, p, &notes, getenv, diag, repository, component, version, sigs)
			if err != nil {
				return errdef.Wrap(err, ectx)
			}
			stderr.Write(notes.Bytes())
			if output == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(report)
			}
			printVerifyReport(stdout, component, resolved, report)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&repository, "repository", "", "CTF, component archive or OCI registry")
	f.StringVar(&component, "component", "", "component name")
	f.StringVar(&version, "version", "", "component version")
	sig.register(f, "signature name that must verify (repeatable)")
	f.StringVarP(&output, "output", "o", "text", "report format: text, or json (signatures, references, resources)")
	return c
}

// Usage of the signature trust flags of verify and render.
const (
	publicKeyUsage = "public key file: PEM public key or certificate, or armored OpenPGP key for GPG signatures (one, or one per --signature)"
	rootCAUsage    = "root CA certificate file (PEM) that a PEM signature's embedded signer certificate must chain to (one, or one per --signature)"
)

func printVerifyReport(w io.Writer, component, version string, report *verify.Report) {
	for _, s := range report.Signatures {
		signer := ""
		if s.Signer != "" {
			signer = ", signed by " + s.Signer
		}
		fmt.Fprintf(w, "verified %s:%s signature %s (%s, %s %s %s%s)\n", component, version, s.Signature, s.Algorithm, s.NormalisationAlgorithm, s.HashAlgorithm, s.Digest, signer)
	}
	for _, r := range report.References {
		if r.Digest != "" {
			fmt.Fprintf(w, "verified reference %s -> %s:%s (%s)\n", r.Parent, r.Component, r.Version, r.Digest)
		} else {
			fmt.Fprintf(w, "unverified reference %s -> %s:%s (no digest: not covered by the signature)\n", r.Parent, r.Component, r.Version)
		}
	}
	for _, r := range report.Resources {
		fmt.Fprintf(w, "resource %s:%s %s: %s (%s)\n", r.Component, r.Version, r.Resource, r.Status, r.Detail)
	}
}

// verifyComponent verifies the component version with the signatures sig
// names (a person's: argocdocm.Person), through the sidecar rule's registry
// client.
func verifyComponent(ctx context.Context, p *process, notes io.Writer, getenv func(string) string, diag *diagnostics, repository, component, version string, sig argocdocm.Signatures) (*verify.Report, string, error) {
	r, _, err := p.renderer(argocdocm.Generation{Person: &argocdocm.Person{Signatures: sig}, Notes: notes}, getenv, diag, nil)
	if err != nil {
		return nil, "", err
	}
	v := r.Verifier()
	found, err := r.Resolve(ctx, argocdocm.Request{Repository: repository, Component: component, Version: version})
	if err != nil {
		return nil, "", err
	}
	defer found.Close()
	vr := &verify.Verifier{Signatures: v, Repository: found.Repository}
	report, err := vr.Run(ctx, found.Component)
	return report, found.Version, err
}
