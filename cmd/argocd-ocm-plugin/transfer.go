package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/compose/policyregistry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
)

// newTransferCommand is `transfer`: replication of component versions
// between CTFs and registries, for air gaps (docs/airgap.md) and as a Job
// before the Applications that read the copies (manifests/examples/replication).
func newTransferCommand(p *process, stderr io.Writer, getenv func(string) string) *cobra.Command {
	var t transfer.Transfer
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "transfer --from REPO --to REPO --component NAME --version VERSION [flags]",
		Short: "Copy a component version between CTFs and OCI registries, as ocm transfer does",
		Long:  transferLong,
		Example: `  # build an air-gap bundle: the platform, its charts and its images in one file
  argocd-ocm-plugin transfer --from ghcr.io/acme/ocm --to bundle.tgz \
    --component acme.org/platform --version 1.4.0 --recursive --copy-resources --copy-images
  # inside: into the internal registry
  argocd-ocm-plugin transfer --from bundle.tgz --to registry.internal/source/ocm \
    --component acme.org/platform --version 1.4.0 --recursive --copy-resources`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTransfer(cmd.Context(), p, &t, timeout, stderr, getenv)
		},
	}
	f := c.Flags()
	f.StringVar(&t.From, "from", "", "source: CTF (directory, tar, tgz) or OCI registry (host/prefix, http://host:port/prefix)")
	f.StringVar(&t.To, "to", "", "target: CTF (created if missing) or OCI registry")
	f.StringVar(&t.Component, "component", "", "component name")
	f.StringVar(&t.Version, "version", "", "component version")
	f.BoolVar(&t.Recursive, "recursive", false, "transfer the referenced component versions too")
	f.BoolVar(&t.CopyResources, "copy-resources", false, "upload local blobs that are OCI artifacts (Helm charts, carried images) to a registry target as artifacts of their own")
	f.BoolVar(&t.CopyImages, "copy-images", false, "copy the images (ociArtifact accesses) by digest; implies --copy-resources")
	f.BoolVar(&t.DryRun, "dry-run", false, "plan and print what would be copied; write nothing")
	f.DurationVar(&timeout, "timeout", 0, "bound the whole transfer (default: none; interrupt with Ctrl-C or SIGTERM, run again to resume)")
	return c
}

// transferLong is the transfer command's help.
const transferLong = `transfer copies a component version (with --recursive, the versions it references too)
from one OCM repository to another: a CTF (directory, tar or tgz; a target that does not
exist is created, a tar/tgz when its name ends in .tar, .tgz or .tar.gz) or an OCI registry,
in every direction. It writes what the OCM CLI's ocm transfer writes:

  --copy-resources  local blobs that are OCI artifacts (Helm charts) become artifacts of their
                    own in a registry target (<prefix>/<referenceName>), their access ociArtifact;
                    local resources a registry holds as artifacts (charts) are copied along
  --copy-images     the artifacts ociArtifact accesses name (images) are copied by digest: into a
                    registry below its prefix, into a CTF as local blobs; accesses follow the copies

A registry target is appended to repositoryContexts. Signatures stay valid: only access and
repositoryContexts change, which the signed digest leaves out (checked before anything is written).
A version the target already holds is skipped, blobs it holds are not copied again: a second run
copies nothing and says so, an interrupted run is resumed by running it again. A target that
holds other content under a version's or an artifact's tag is refused; nothing is overwritten.
A target that does not answer, times out or refuses the credentials is reported as such.

Credentials are the sidecar's: ARGOCD_OCM_REGISTRY_<HOST>_USERNAME/_PASSWORD/_TOKEN (or _FILE),
the Docker config; an http:// side is reached over plain HTTP. With ARGOCD_OCM_POLICY the policy's
default rule decides: its repositories, credentials and plain-HTTP hosts, for both sides and images. Progress and the summary line go to stderr; errors are one line naming
component, version and resource.`

// runTransfer runs the transfer t once its flags are checked, through the
// sidecar's registry rule, bounded by timeout when one is set.
func runTransfer(ctx context.Context, p *process, t *transfer.Transfer, timeout time.Duration, stderr io.Writer, getenv func(string) string) error {
	ectx := errdef.Error{Component: t.Component, Version: t.Version}
	if t.From == "" || t.To == "" || t.Component == "" || t.Version == "" {
		return errdef.Wrap(fmt.Errorf("%w: --from, --to, --component and --version are required", errdef.ErrInvalidInput), ectx)
	}
	if t.CopyImages && !t.CopyResources {
		// Images carried in a CTF are local blobs: into a registry
		// they become images again only with --copy-resources.
		t.CopyResources = true
	}
	rule, err := p.engine.Rule(getenv)
	if err != nil {
		return errdef.Wrap(err, ectx)
	}
	// The operator runs transfer, with registries of its choosing.
	rule = rule.ForPerson()
	if rule.Source == "environment" {
		// No policy: the sidecar's credentials, and the http://
		// sides the operator wrote reached over plain HTTP.
		t.RegistryOptions = policyregistry.For(rule, nil)
	} else {
		// A policy decides, plain HTTP included: the sides get no
		// exception from it.
		reg, err := registry.NewClient(policyregistry.For(rule, nil)...)
		if err != nil {
			return errdef.Wrap(err, ectx)
		}
		t.Registry = reg
	}
	t.Progress = stderr
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	_, err = t.Run(ctx)
	return err
}
