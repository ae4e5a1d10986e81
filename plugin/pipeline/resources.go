package pipeline

import (
	"context"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm"
)

// Overlay is kustomize configuration built over a directoryTree's entry
// (see kustomize.Overlay); a planner sets it on a Step without importing
// the renderer.
type Overlay = kustomize.Overlay

// Resources reads what a planner needs to see of a component version's
// resources before anything renders: small documents (definitions, config
// resources), the default values of a chart, the files of a tree. It reads
// through the Renderer's access and archive limits, verified like a render,
// so a planner never fetches on its own. Get one from Renderer.Resources.
type Resources struct {
	r *Renderer
}

// Resources is how a planner reads resources through r (read when called:
// fields set on r later are seen).
func (r *Renderer) Resources() Resources { return Resources{r: r} }

func (rs Resources) access() access.Resolver {
	if rs.r == nil {
		return access.Resolver{}
	}
	return rs.r.access
}

func (rs Resources) archiveOptions() []archive.Option {
	if rs.r == nil {
		return nil
	}
	return rs.r.archiveOptions
}

// ReadDocument reads a small document resource of at most max bytes (max
// <= 0: the Access limit), verified. An archive is refused: a document is
// one YAML or JSON file.
func (rs Resources) ReadDocument(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource, max int64) ([]byte, error) {
	limited := rs.access()
	if max > 0 && (limited.MaxBlobSize <= 0 || limited.MaxBlobSize > max) {
		limited.MaxBlobSize = max
	}
	c, err := limited.Read(ctx, cv, res)
	if err != nil {
		return nil, err
	}
	if access.IsTarMediaType(c.MediaType) {
		return nil, fmt.Errorf("%w: media type %s is an archive, want a YAML document", errdef.ErrUnsupportedMediaType, c.MediaType)
	}
	return c.Data, nil
}

// ChartValues returns the default values (values.yaml) of a helmChart
// resource, as the chart loader decodes them.
func (rs Resources) ChartValues(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (map[string]any, error) {
	a := rs.access()
	c, err := a.Read(ctx, cv, res)
	if err != nil {
		return nil, err
	}
	tgz, err := access.ChartArchive(c)
	if err != nil {
		return nil, err
	}
	ch, err := helm.LoadArchive(tgz)
	if err != nil {
		return nil, err
	}
	return ch.Values, nil
}

// Tree is the files of a directoryTree resource, read for planning.
type Tree struct {
	*archive.Tree
}

// GeneratedConfigMaps reports whether entry is a kustomization and names
// the ConfigMaps its configMapGenerator generates (see
// kustomize.GeneratedConfigMaps).
func (t Tree) GeneratedConfigMaps(entry string) (bool, []string, error) {
	return kustomize.GeneratedConfigMaps(t.Tree, entry)
}

// ReadTree reads a directoryTree resource, streamed and verified as it is
// unpacked (see access.Resolver.ReadTree), within the Renderer's
// archive limits: the blob is never held beside the tree.
func (rs Resources) ReadTree(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (Tree, error) {
	a := rs.access()
	t, err := a.ReadTree(ctx, cv, res, rs.archiveOptions()...)
	if err != nil {
		return Tree{}, err
	}
	return Tree{t}, nil
}
