package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/cmp"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

// newRootCommand builds the CLI. dir is the directory generate and parameters
// read the Application's files from (empty: the working directory; the render
// server passes each request's).
func newRootCommand(p *process, stdout, stderr io.Writer, getenv func(string) string, dir string, environ []string) *cobra.Command {
	root, diag := newBareRootCommand(p, stdout, stderr)
	root.AddCommand(newRenderCommand(p, stdout, stderr, getenv, diag), newGenerateCommand(p, stdout, stderr, getenv, dir, environ, diag),
		newParametersCommand(p, stdout, stderr, getenv, dir, diag), newVerifyCommand(p, stdout, stderr, getenv, diag), newVersionCommand(stdout),
		newServeCommand(stderr, getenv), newGeneratorCommand(stderr, getenv, diag),
		newServeWorkerCommand(stderr, getenv))
	root.AddCommand(newTransferCommand(p, stderr, getenv))
	root.AddCommand(newPolicyCommand(stdout))
	root.AddCommand(newConvertCommand(p, stdout, stderr, getenv, diag))
	return root
}

// executeCommand runs root on one command line.
func executeCommand(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "argocd-ocm-plugin: %v\n", err)
		return 1
	}
	return 0
}

// newServedCommand is the CLI as the render server runs a request's command
// line, name (generate or parameters): the root command with that one
// subcommand, as newRootCommand builds them. A worker builds it for every
// request, and the whole tree (every command and its flags) cost 4 % of a
// warm generation's CPU; a command line that starts with name finds the
// same command, flags and errors in either tree (TestServedCommandIsTheCLIs).
func newServedCommand(name string, p *process, stdout, stderr io.Writer, getenv func(string) string, dir string, environ []string) *cobra.Command {
	root, diag := newBareRootCommand(p, stdout, stderr)
	switch name {
	case "generate":
		root.AddCommand(newGenerateCommand(p, stdout, stderr, getenv, dir, environ, diag))
	case "parameters":
		root.AddCommand(newParametersCommand(p, stdout, stderr, getenv, dir, diag))
	}
	return root
}

// newBareRootCommand is the root command without its subcommands, and the
// diagnostics its -v sets, which the subcommands share.
func newBareRootCommand(p *process, stdout, stderr io.Writer) (*cobra.Command, *diagnostics) {
	root := &cobra.Command{
		Use:   "argocd-ocm-plugin",
		Short: "Render OCM component versions into Kubernetes manifests (an Argo CD config management plugin)",
		Long: `argocd-ocm-plugin resolves an OCM component version in a CTF archive or an OCI registry,
fetches only the Helm chart or kustomization it needs, verifies digests, renders it and
prints the manifests.

  render    preview for people, configured by flags
  generate  the Argo CD plugin's generate command, configured by Argo CD's environment

Manifests go to stdout, in one write, only on success; a failure is one line on stderr.
-v (or ARGOCD_OCM_LOG_LEVEL=debug|info in the sidecar) logs what happens on stderr.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Help, usage and shell completion go to stdout, as cobra intends (so
	// that --help | less and completion scripts work); errors to stderr. A
	// command that renders writes stdout only on success, in one go.
	root.SetOut(stdout)
	root.SetErr(stderr)
	diag := newDiagnostics(stderr, p.log)
	root.PersistentFlags().BoolVarP(&diag.verbose, "verbose", "v", false,
		"log what happens on stderr: repository, resolution, registry requests, cache hits, timings (never credentials)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w: %v (see %s --help)", errdef.ErrInvalidInput, err, c.CommandPath())
	})
	return root, diag
}

func newRenderCommand(p *process, stdout, stderr io.Writer, getenv func(string) string, diag *diagnostics) *cobra.Command {
	var req argocdocm.Request
	var apiVersions string
	var sig signatureFlags
	var params []string
	var explain bool
	var output string
	var requireImages bool
	c := &cobra.Command{
		Use:   "render --repository REPO --component NAME --version VERSION [flags]",
		Short: "Render a component version's chart or kustomization and print the manifests",
		Example: `  argocd-ocm-plugin render --repository ./ctf --component example.com/demo/podinfo --version 1.0.0 \
    --release-name demo --namespace demo --set replicaCount=2`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.APIVersions = splitComma(apiVersions)
			ps, err := parseParams(params)
			if err != nil {
				return errdef.Wrap(err, errdef.Error{Component: req.Component, Version: req.Version})
			}
			req.Parameters = ps
			if output != "yaml" && output != "json" {
				return errdef.Wrap(fmt.Errorf("%w: --output %s: want yaml or json", errdef.ErrInvalidInput, errdef.Quote(output)), errdef.Error{Component: req.Component, Version: req.Version})
			}
			sigs, err := sig.signatures()
			if err != nil {
				return errdef.Wrap(err, errdef.Error{Component: req.Component, Version: req.Version})
			}
			person := &argocdocm.Person{Signatures: sigs, RequireComponentImages: requireImages}
			return renderAndPrint(cmd, p, req, stdout, stderr, getenv, renderOptions{person: person, explain: explain, json: output == "json",
				diag: diag, progress: diag.terminal(stderr) && !diag.verbose})
		},
	}
	f := c.Flags()
	f.StringVar(&req.Repository, "repository", "", "CTF (directory, tar, tgz) or component archive path, or OCI registry")
	f.StringVar(&req.Component, "component", "", "component name, e.g. example.com/demo/podinfo")
	f.StringVar(&req.Version, "version", "", "component version")
	f.StringArrayVar(&req.Resources, "resource", nil, "resource to render: name or name,key=value (repeatable; default: the only renderable resource)")
	f.StringVar(&req.Path, "path", "", "entry path inside a directory resource (kustomization or manifests)")
	f.StringArrayVarP(&req.ValueFiles, "values", "f", nil, "Helm values file (repeatable; later files win)")
	f.StringArrayVar(&req.Set, "set", nil, "Helm value key=value (repeatable; wins over values files)")
	f.StringArrayVar(&req.SetString, "set-string", nil, "Helm value key=value kept a string (repeatable; wins over --set)")
	f.StringArrayVar(&req.SetFile, "set-file", nil, "Helm value key=path: the file's content as a string (repeatable; wins over --set-string)")
	f.StringArrayVar(&req.SetJSON, "set-json", nil, "Helm value key=JSON (repeatable; wins over values files, loses to --set)")
	f.StringVarP(&req.Namespace, "namespace", "n", "", "namespace of the release (default \"default\")")
	f.StringVar(&req.ReleaseName, "release-name", "", "Helm release name (default \"release-name\", as helm template)")
	f.StringVar(&req.KubeVersion, "kube-version", helm.DefaultKubeVersion(), "Kubernetes version for Capabilities.KubeVersion; the default is the one the plugin's Kubernetes libraries imply, as in a helm release")
	f.StringVar(&apiVersions, "api-versions", "", "comma-separated API versions for Capabilities.APIVersions")
	sig.register(f, "signature name that must verify before rendering (repeatable)")
	f.BoolVar(&req.Platform.Force, "platform", false, "render the component's references as child Argo CD Applications (default for components with references and no renderable resource)")
	f.StringArrayVar(&req.Platform.ConfigFiles, "platform-config", nil, "platform config file: per-package settings (repeatable)")
	f.StringVar(&req.Platform.Source.RepoURL, "source-repo-url", "", "platform preview: the git repository child Applications point back at")
	f.StringVar(&req.Platform.Source.Path, "source-path", "", "platform preview: the path in that repository")
	f.StringVar(&req.Platform.Source.TargetRevision, "source-revision", "HEAD", "platform preview: the revision of that repository")
	f.BoolVar(&req.Provenance, "provenance", false, "annotate every object with component, version, descriptor digest, resource and verified signatures")
	f.StringVar(&req.DefinitionFile, "definition", "", "deployment definition file (replaces one shipped in the component), or resource:NAME to pick a shipped one")
	f.StringArrayVar(&params, "param", nil, "instance parameter name=value, typed by the deployment definition (repeatable)")
	f.BoolVar(&req.Localize, "localize", false, "automatic localisation: point workload images that are resources of the component at the component's location of them")
	f.BoolVar(&requireImages, "require-component-images", false, "image origin guard: refuse output whose workloads run an image that is not an image resource of the component (by digest, or by exact reference)")
	f.BoolVar(&explain, "explain", false, "print, instead of the manifests, where every value came from and what each expression evaluated to")
	f.StringVarP(&output, "output", "o", "yaml", "manifest format: yaml, or json (one JSON object per document, what generate prints)")
	return c
}

func newGenerateCommand(p *process, stdout, stderr io.Writer, getenv func(string) string, dir string, environ []string, diag *diagnostics) *cobra.Command {
	return &cobra.Command{
		Use:   "generate",
		Short: "Argo CD generate command: render the Application's component from the plugin environment",
		Long: `generate reads its inputs from the environment Argo CD gives a config management plugin:
plugin parameters (ARGOCD_APP_PARAMETERS) first, then ARGOCD_ENV_<NAME> variables:
  repository, component, version, resource, path, values (YAML), value-files,
  parameters (a map of instance parameters), definition (a deployment definition file in
  the Application's directory, or resource:NAME), localize ("true")
The release name is the Application name (ARGOCD_APP_NAME), the namespace its
destination namespace (ARGOCD_APP_NAMESPACE); KUBE_VERSION and KUBE_API_VERSIONS feed
Helm's capabilities.
The manifests are printed as a stream of JSON documents ("---" and one compact JSON
object per line), which Argo CD reads like YAML and converts to JSON anyway; writing
YAML would cost more than rendering a large chart (render -o yaml shows the same).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := cmp.RequestFromEnvironment(getenv, environ)
			if err != nil {
				return err
			}
			req.Dir = dir
			// Everything the Application names is read inside its
			// directory (package confine); render, for people, is not confined.
			root, err := openApplicationDir(dir)
			if err != nil {
				return errdef.Wrap(err, errdef.Error{Application: req.Application, Component: req.Component, Version: req.Version})
			}
			defer root.Close()
			req.Root = root
			req.Platform.Source.PluginName = getenv(envPluginName)
			// The sidecar rule of getenv (the policy file is read once for
			// the generation), tenancy switches included: the renderer
			// applies it, as Engine.Render does.
			return renderAndPrint(cmd, p, req, stdout, stderr, getenv, renderOptions{json: true, diag: diag})
		},
	}
}

// openApplicationDir opens the Application's directory as the root of its
// files: dir (the render server's client's), else the working directory
// (argocd-cmp-server runs generate in the Application's path).
func openApplicationDir(dir string) (*argocdocm.Root, error) {
	if dir == "" {
		dir = "."
	}
	return argocdocm.OpenRoot(dir)
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(stdout, "argocd-ocm-plugin %s\n", buildVersion())
			return err
		},
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

type renderOptions struct {
	// person: a person runs the command (render), not Argo CD for an
	// Application, and decides signatures and the image guard with flags
	// (argocdocm.Person); nil: the sidecar rule of the environment decides.
	person   *argocdocm.Person
	explain  bool // print the config report instead of the manifests
	json     bool // manifests as JSON documents (manifests.EncodeJSON), else YAML
	diag     *diagnostics
	progress bool // a download progress line on stderr (render, on a terminal)
}

// renderAndPrint renders completely into memory and writes stdout once, so a
// failure can never leave a partial manifest stream behind.
func renderAndPrint(cmd *cobra.Command, p *process, req argocdocm.Request, stdout, stderr io.Writer, getenv func(string) string, opts renderOptions) error {
	ectx := errdef.Error{Application: req.Application, Component: req.Component, Version: req.Version}
	ctx, cancel, err := withDeadline(cmd.Context(), 0, getenv)
	if err != nil {
		return errdef.Wrap(err, ectx)
	}
	defer cancel()
	// Notes and warnings (resolved versions, unmatched images, a disabled
	// cache) reach stderr only on success: on failure stderr is the one error line.
	var notes bytes.Buffer
	var prog *progress
	if opts.progress {
		prog = newProgress(stderr)
		defer prog.done()
	}
	r, log, err := p.renderer(argocdocm.Generation{Person: opts.person, Notes: &notes}, getenv, opts.diag, prog)
	if err != nil {
		return errdef.Wrap(err, ectx)
	}
	var opened ocm.Repository // kept for suggestComponents
	r.Opened = keepOpened(r.Opened, &opened)
	defer func() {
		if opened != nil {
			opened.Close()
		}
	}()
	start := time.Now()
	var report argocdocm.Explanation
	if opts.explain {
		r.Explain = func(rep argocdocm.Explanation) { report = rep }
	}
	res, err := r.Render(ctx, req)
	prog.done()
	if err != nil {
		log.Debug("render failed", "ms", since(start))
		return suggestComponents(ctx, opened, req, err)
	}
	log.Debug("rendered", "component", res.Component, "version", res.Version, "objects", len(res.Objects), "ms", since(start))
	if opts.explain {
		if report == nil {
			return errdef.Wrap(fmt.Errorf("%w: --explain: the component renders as a platform of child Applications, which has no values to explain", errdef.ErrInvalidInput), ectx)
		}
		report.AddNote(kubeVersionNote(cmd, req.KubeVersion))
		var buf bytes.Buffer
		if err := report.WriteText(&buf); err != nil {
			return errdef.Wrap(err, ectx)
		}
		stderr.Write(notes.Bytes())
		_, err = stdout.Write(buf.Bytes())
		return err
	}
	// Every object is encoded before anything reaches stdout; the stream
	// is then written from the documents' texts, without joining them
	// (10 MB of CRDs copied twice).
	stream, err := manifests.EncodeStreamKnown(res.Objects, opts.json, r.KnownJSON)
	if err != nil {
		return errdef.Wrap(err, errdef.Error{Application: req.Application, Component: req.Component, Version: req.Version})
	}
	if stream.Len() == 0 {
		// An empty stream tells Argo CD to delete everything: refuse it.
		return errdef.Wrap(fmt.Errorf("%w: rendering produced no objects", errdef.ErrRender),
			errdef.Error{Application: req.Application, Component: req.Component, Version: req.Version})
	}
	stderr.Write(notes.Bytes())
	_, err = stream.WriteTo(stdout)
	return err
}

// kubeVersionNote says which Kubernetes version the render assumed and why.
func kubeVersionNote(cmd *cobra.Command, v string) string {
	switch f := cmd.Flags().Lookup("kube-version"); {
	case v == "":
		return fmt.Sprintf("Kubernetes version %s (default: the plugin's Kubernetes libraries)", helm.DefaultKubeVersion())
	case f != nil && f.Changed:
		return fmt.Sprintf("Kubernetes version %s (--kube-version)", v)
	case f != nil:
		return fmt.Sprintf("Kubernetes version %s (default: the plugin's Kubernetes libraries; set --kube-version to the target cluster's)", v)
	default:
		return fmt.Sprintf("Kubernetes version %s (KUBE_VERSION)", v)
	}
}

// parseParams reads --param name=value flags; a later one wins.
func parseParams(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(flags))
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("%w: --param %s is not name=value", errdef.ErrInvalidInput, errdef.Quote(f))
		}
		out[strings.TrimSpace(name)] = value
	}
	return out, nil
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// noArgs refuses positional arguments: cobra's NoArgs calls one an "unknown
// command", which sends people looking for a subcommand.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: unexpected argument %s: %s takes flags only (see %s --help)", errdef.ErrInvalidInput, errdef.Quote(args[0]), cmd.CommandPath(), cmd.CommandPath())
	}
	return nil
}
