package oci

import (
	"context"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/accessmethod"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// accessOpener is how this package opens one access type: the reading side
// of the table of access methods, kept here because accessmethod cannot
// import the model nor the registry client.
type accessOpener struct {
	// open opens an access of cv for Client.OpenAccess; manifestDigest is
	// as there.
	open func(c *Client, ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (b ocm.Blob, manifestDigest string, err error)
	// global opens the access as a localBlob's globalAccess
	// (Repository.openGlobal); nil: not read as one.
	global func(c *Client, ctx context.Context, ga ocm.Access) (ocm.Blob, error)
}

// remoteOpeners opens the Remote methods of the table, by name; the Local
// ones are all read through their component version (openLocal).
var remoteOpeners = map[string]accessOpener{
	accessmethod.OCIArtifact:          {open: openOCIArtifact, global: globalOCIArtifact},
	accessmethod.RelativeOCIReference: {open: openRelative},
	accessmethod.Helm:                 {open: openHelmAccess},
	accessmethod.OCIBlob:              {open: openOCIBlob, global: globalOCIBlob},
}

// openerOf returns the opener of an access type; false when this package
// does not open it.
func openerOf(typ string) (accessOpener, bool) {
	m, _ := accessmethod.Lookup(typ)
	if m.Where == accessmethod.Local {
		return accessOpener{open: openLocal}, true
	}
	o, ok := remoteOpeners[m.Name]
	return o, ok && m.Where == accessmethod.Remote
}

// opens and opensGlobal say which methods the openers cover, for errors.
func opens(m accessmethod.Method) bool {
	_, ok := openerOf(m.Name)
	return ok
}

func opensGlobal(m accessmethod.Method) bool {
	o, ok := openerOf(m.Name)
	return ok && o.global != nil
}

// chartBlob returns a chart as an opener's result.
func chartBlob(ch *Chart, err error) (ocm.Blob, string, error) {
	if err != nil {
		return nil, "", err
	}
	return ch, ch.ManifestDigest(), nil
}

func openOCIArtifact(c *Client, ctx context.Context, _ ocm.ComponentVersion, acc ocm.Access) (ocm.Blob, string, error) {
	ref := acc.String("imageReference")
	if ref == "" {
		return nil, "", fmt.Errorf("%w: ociArtifact access without imageReference", errdef.ErrInvalidDescriptor)
	}
	return chartBlob(c.OpenChart(ctx, ref))
}

func openRelative(c *Client, ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (ocm.Blob, string, error) {
	ref := acc.String("reference")
	var r *Repository
	if cv != nil {
		r, _ = cv.Repository().(*Repository)
	}
	if r == nil {
		return nil, "", fmt.Errorf("%w: relativeOciReference %s needs the component version to come from an OCI registry", errdef.ErrUnsupportedAccess, errdef.Quote(ref))
	}
	abs, err := r.Resolve(ref)
	if err != nil {
		return nil, "", err
	}
	return chartBlob(c.OpenChart(ctx, abs))
}

func openHelmAccess(c *Client, ctx context.Context, _ ocm.ComponentVersion, acc ocm.Access) (ocm.Blob, string, error) {
	h, err := HelmAccessOf(acc)
	if err != nil {
		return nil, "", err
	}
	return chartBlob(c.OpenHelm(ctx, h))
}

func openOCIBlob(c *Client, ctx context.Context, _ ocm.ComponentVersion, acc ocm.Access) (ocm.Blob, string, error) {
	size, _ := acc.Fields["size"].(float64)
	b, err := c.OpenBlob(ctx, acc.String("ref"), acc.String("digest"), int64(size), acc.String("mediaType"))
	return b, "", err
}

func openLocal(_ *Client, ctx context.Context, cv ocm.ComponentVersion, acc ocm.Access) (ocm.Blob, string, error) {
	if cv == nil {
		return nil, "", fmt.Errorf("%w: a local blob needs its component version", errdef.ErrInvalidInput)
	}
	b, err := cv.OpenLocalBlob(ctx, acc)
	if err != nil {
		return nil, "", err
	}
	md := ""
	if ch, ok := b.(*Chart); ok {
		md = ch.ManifestDigest()
	}
	return b, md, nil
}

// globalOCIArtifact opens the chart of a globalAccess; unlike OpenAccess it
// leaves an empty imageReference to OpenChart, and names the globalAccess
// in errors.
func globalOCIArtifact(c *Client, ctx context.Context, ga ocm.Access) (ocm.Blob, error) {
	ch, err := c.OpenChart(ctx, ga.String("imageReference"))
	if err != nil {
		return nil, fmt.Errorf("globalAccess: %w", err)
	}
	return ch, nil
}

func globalOCIBlob(c *Client, ctx context.Context, ga ocm.Access) (ocm.Blob, error) {
	b, _, err := openOCIBlob(c, ctx, nil, ga)
	return b, err
}
