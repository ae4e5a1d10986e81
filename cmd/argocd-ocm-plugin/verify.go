package main

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm/resolve"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/signing"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/verify"
)

// Sidecar verification settings for generate. Like every unprefixed variable
// they come from the sidecar's own environment: an Application author must not
// be able to supply their own trust root.
const (
	// ARGOCD_OCM_SIGNATURE (comma-separated signature names that must verify)
	// and ARGOCD_OCM_PUBLIC_KEY (comma-separated PEM files, one per name or
	// one for all) are read by package policy, as its default rule.
	envProvenance = "ARGOCD_OCM_PROVENANCE" // "true": annotate objects with their provenance
)

// signaturePolicy pairs signature names with public key files: one key file
// per name, or a single key file for every name.
func signaturePolicy(names, keyFiles []string) (*signing.Verifier, error) {
	if len(names) == 0 && len(keyFiles) == 0 {
		return nil, nil
	}
	if len(names) == 0 || len(keyFiles) == 0 {
		return nil, fmt.Errorf("%w: signature verification needs both a signature name and a public key", errdef.ErrInvalidInput)
	}
	if len(keyFiles) != 1 && len(keyFiles) != len(names) {
		return nil, fmt.Errorf("%w: %d signature names but %d public keys: give one key, or one per name", errdef.ErrInvalidInput, len(names), len(keyFiles))
	}
	v := &signing.Verifier{Keys: map[string]crypto.PublicKey{}}
	for i, name := range names {
		f := keyFiles[0]
		if len(keyFiles) > 1 {
			f = keyFiles[i]
		}
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: public key for signature %s: %v", errdef.ErrInvalidInput, name, err)
		}
		k, err := signing.ParsePublicKey(pem)
		if err != nil {
			return nil, fmt.Errorf("public key %s: %w", f, err)
		}
		v.Keys[name] = k
	}
	return v, nil
}

func newVerifyCommand(stdout, stderr io.Writer, getenv func(string) string, diag *diagnostics) *cobra.Command {
	var repository, component, version, output string
	var names, keys []string
	c := &cobra.Command{
		Use:   "verify --repository REPO --component NAME --version VERSION --signature NAME --public-key FILE",
		Short: "Verify a component version like `ocm verify`: signatures, reference digests and every resource digest computable offline",
		Long: `Verify a component version as ocm verify componentversions does: each --signature with its key, the
digests of component references (recursively), and the digest of every resource that can be checked
offline: local blobs are re-hashed (genericBlobDigest/v1: the blob; ociArtifactDigest/v1: the manifest of
the OCI artifact set), and a digest pinned in an access reference (imageReference x@sha256:…) is compared
with the declared one. Each resource is reported as checked, mismatch or not-checkable (with the reason).
Exit 0 only when every signature verifies and no resource mismatches; a failure prints one error line on
stderr and nothing on stdout.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ectx := errdef.Error{Component: component, Version: version}
			if repository == "" || component == "" || version == "" {
				return errdef.Wrap(fmt.Errorf("%w: --repository, --component and --version are required", errdef.ErrInvalidInput), ectx)
			}
			if output != "text" && output != "json" {
				return errdef.Wrap(fmt.Errorf("%w: --output %q: want text or json", errdef.ErrInvalidInput, output), ectx)
			}
			v, err := signaturePolicy(names, keys)
			if err != nil {
				return errdef.Wrap(err, ectx)
			}
			if v == nil {
				return errdef.Wrap(fmt.Errorf("%w: --signature and --public-key are required", errdef.ErrInvalidInput), ectx)
			}
			ctx, cancel, err := withDeadline(cmd.Context(), 0, getenv)
			if err != nil {
				return errdef.Wrap(err, ectx)
			}
			defer cancel()
			var notes bytes.Buffer // to stderr on success only: a failure is one line
			report, resolved, err := verifyComponent(ctx, &notes, getenv, diag, repository, component, version, v)
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
	f.StringArrayVar(&names, "signature", nil, "signature name that must verify (repeatable)")
	f.StringArrayVar(&keys, "public-key", nil, "PEM public key or certificate file (one, or one per --signature)")
	f.StringVarP(&output, "output", "o", "text", "report format: text, or json (signatures, references, resources)")
	return c
}

func printVerifyReport(w io.Writer, component, version string, report *verify.Report) {
	for _, s := range report.Signatures {
		fmt.Fprintf(w, "verified %s:%s signature %s (%s, %s %s %s)\n", component, version, s.Signature, s.Algorithm, s.NormalisationAlgorithm, s.HashAlgorithm, s.Digest)
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

func verifyComponent(ctx context.Context, notes io.Writer, getenv func(string) string, diag *diagnostics, repository, component, version string, v *signing.Verifier) (*verify.Report, string, error) {
	r, _, err := newRenderer(notes, getenv, diag, nil)
	if err != nil {
		return nil, "", err
	}
	repo, err := r.OpenRepository(ctx, repository)
	if err != nil {
		return nil, "", err
	}
	defer repo.Close()
	resolved, err := resolve.ResolveVersion(ctx, repo, component, version)
	if err != nil {
		return nil, "", err
	}
	cv, err := repo.LookupComponentVersion(ctx, component, resolved)
	if err != nil {
		return nil, "", err
	}
	vr := &verify.Verifier{Signatures: v, Repository: repo}
	report, err := vr.Run(ctx, cv)
	return report, resolved, err
}

func isTrue(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
