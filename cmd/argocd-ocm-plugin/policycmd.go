package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/policy"
)

// newPolicyCommand is `policy`: the operator's tools for the sidecar policy
// file (docs/security.md).
func newPolicyCommand(stdout io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "policy",
		Short: "Check a sidecar policy file",
		Args:  noArgs,
	}
	c.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Check a sidecar policy file as the sidecar reads it: every problem with its line",
		Long: `check decodes FILE with the sidecar's strict decoder and validates it, as serve and
every generation do. A problem is reported with its line; an unknown field with the
fields known there. A valid file prints a one-line summary and exits 0.`,
		Example: "  argocd-ocm-plugin policy check docs/examples/sidecar-policy.yaml",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("%w: policy check takes one argument, the policy file (got %d)", errdef.ErrInvalidInput, len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return checkPolicy(stdout, args[0])
		},
	})
	return c
}

func checkPolicy(stdout io.Writer, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("%w: sidecar policy %s: cannot open it", errdef.ErrInvalidInput, errdef.Quote(file))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: sidecar policy %s: not a regular file", errdef.ErrInvalidInput, errdef.Quote(file))
	}
	b, err := io.ReadAll(io.LimitReader(f, policy.MaxFileSize+1))
	if err != nil {
		return fmt.Errorf("%w: sidecar policy %s: cannot read it", errdef.ErrInvalidInput, errdef.Quote(file))
	}
	if len(b) > policy.MaxFileSize {
		return fmt.Errorf("%w: sidecar policy %s is larger than %d bytes", errdef.ErrLimitExceeded, errdef.Quote(file), policy.MaxFileSize)
	}
	p, err := policy.Parse(b, file)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s: valid: %s\n", file, p.Summary())
	return err
}
