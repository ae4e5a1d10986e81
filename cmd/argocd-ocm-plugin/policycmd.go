package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
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
	p, err := policy.Load(file) // what serve and every generation read
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s: valid: %s\n", file, p.Summary())
	return err
}
