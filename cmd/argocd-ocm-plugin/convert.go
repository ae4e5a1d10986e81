package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// newConvertCommand prints the ComponentDeployment equivalent to a
// component's kro ResourceGraphDefinition (see rgd.GraphPlanner.Convert).
func newConvertCommand(p *process, stdout, stderr io.Writer, getenv func(string) string, diag *diagnostics) *cobra.Command {
	var repository, component, version, definition string
	c := &cobra.Command{
		Use:   "convert --repository REPO --component NAME --version VERSION [--definition rgd:NAME[@flux]]",
		Short: "Print the ComponentDeployment equivalent to the component's kro ResourceGraphDefinition",
		Long: `convert reads the component's ResourceGraphDefinition (the root one, or --definition rgd:NAME; @flux picks
the Flux block) and prints a deployment definition (ComponentDeployment) that renders the same: its instance
parameters (dots of nested fields as _), and one render per deployer block with the block's values or kustomize
fields, expressions rewritten. What a ComponentDeployment cannot express is listed in comments. See docs/kro.md.
On failure nothing is printed on stdout and one line on stderr says why.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ectx := errdef.Error{Component: component, Version: version}
			if repository == "" || component == "" || version == "" {
				return errdef.Wrap(fmt.Errorf("%w: --repository, --component and --version are required", errdef.ErrInvalidInput), ectx)
			}
			ctx, cancel, err := withDeadline(cmd.Context(), 0, getenv)
			if err != nil {
				return errdef.Wrap(err, ectx)
			}
			defer cancel()
			var notes bytes.Buffer
			r, _, err := p.renderer(argocdocm.Generation{Person: &argocdocm.Person{}, Notes: &notes}, getenv, diag, nil)
			if err != nil {
				return errdef.Wrap(err, ectx)
			}
			req := argocdocm.Request{Repository: repository, Component: component, Version: version, DefinitionFile: definition}
			found, err := r.Resolve(ctx, req)
			if err != nil {
				return errdef.Wrap(err, ectx)
			}
			defer found.Close()
			ectx.Version = found.Version
			out, err := r.Convert(ctx, found.Component, req)
			if err != nil {
				return errdef.Wrap(err, ectx)
			}
			stderr.Write(notes.Bytes())
			_, err = stdout.Write(out)
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&repository, "repository", "", "CTF, component archive or OCI registry")
	f.StringVar(&component, "component", "", "component name")
	f.StringVar(&version, "version", "", "component version")
	f.StringVar(&definition, "definition", "", "rgd:NAME to choose an RGD, @flux to convert the Flux block")
	return c
}
