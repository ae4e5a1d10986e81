package main

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/cmp"
)

// newParametersCommand is the plugin's dynamic parameter announcement
// (plugin.yaml spec.parameters.dynamic): a JSON array of Argo CD
// ParameterAnnouncement objects on stdout.
func newParametersCommand(p *process, stdout, stderr io.Writer, getenv func(string) string, dir string, diag *diagnostics) *cobra.Command {
	return &cobra.Command{
		Use:   "parameters",
		Short: "Argo CD dynamic parameters: announce the component's parameters as JSON",
		Long: `parameters prints the parameters the Argo CD UI offers for an Application of this
plugin, as a JSON array of ParameterAnnouncement objects: the plugin's own parameters
(repository, component, version, resource, path, values, value-files, parameters) and,
once repository, component and version are set (ARGOCD_APP_PARAMETERS first, then
ARGOCD_ENV_<NAME>), the component's renderable resources, the resolved version and
the instance parameters of its deployment definition as typed fields named
parameters.<name> (they win over the parameters map).
On failure nothing is printed on stdout and one line on stderr says why.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			app := getenv(cmp.EnvAppName)
			ctx, cancel, err := withDeadline(cmd.Context(), 0, getenv)
			if err != nil {
				return errdef.Wrap(err, errdef.Error{Application: app})
			}
			defer cancel()
			var notes bytes.Buffer // to stderr on success only: a failure is one line
			r, _, err := p.renderer(argocdocm.Generation{Notes: &notes}, getenv, diag, nil)
			if err != nil {
				return errdef.Wrap(err, errdef.Error{Application: app})
			}
			root, err := openApplicationDir(dir)
			if err != nil {
				return errdef.Wrap(err, errdef.Error{Application: app})
			}
			defer root.Close()
			a := &cmp.Announcer{Renderer: r, Sources: []cmp.ParameterSource{definitionParameters(r)}, Dir: dir, Root: root}
			params, err := a.Announce(ctx, getenv)
			if err != nil {
				return errdef.Wrap(err, errdef.Error{Application: app})
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(params); err != nil {
				return errdef.Wrap(err, errdef.Error{Application: app})
			}
			stderr.Write(notes.Bytes())
			_, err = stdout.Write(buf.Bytes())
			return err
		},
	}
}
