package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// newParametersCommand is the plugin's dynamic parameter announcement
// (plugin.yaml spec.parameters.dynamic): a JSON array of Argo CD
// ParameterAnnouncement objects on stdout.
func newParametersCommand(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	return &cobra.Command{
		Use:   "parameters",
		Short: "Argo CD dynamic parameters: announce the component's parameters as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _, _ = stdout, stderr, getenv
			return fmt.Errorf("%w: parameters is not implemented yet", errdef.ErrInvalidInput)
		},
	}
}
