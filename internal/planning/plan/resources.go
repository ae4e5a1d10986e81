package plan

import (
	"context"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/access"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Resources reads what a planner needs to see of a component version's
// resources before anything renders: small documents (definitions, config
// resources), the default values of a chart, the files of a tree. It reads
// through a renderer's access and archive limits (Input.Reader), verified
// like a render. The zero value reads offline (CTFs and component
// archives) within the defaults of package archive.
type Resources struct {
	access         access.Resolver
	archiveOptions []archive.Option
}

// NewResources reads through a and unpacks trees within opts: for package
// pipeline, which gives a renderer's to its planner (Input.Reader).
func NewResources(a access.Resolver, opts ...archive.Option) Resources {
	return Resources{access: a, archiveOptions: opts}
}

// ReadDocument reads a small document resource of at most max bytes (max
// <= 0: the access limit), verified. An archive is refused: a document is
// one YAML or JSON file.
func (rs Resources) ReadDocument(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource, max int64) ([]byte, error) {
	limited := rs.access
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
	c, err := rs.access.Read(ctx, cv, res)
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

// ReadTree reads a directoryTree resource, streamed and verified as it is
// unpacked (see access.Resolver.ReadTree), within the archive limits: the
// blob is never held beside the tree.
func (rs Resources) ReadTree(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (Tree, error) {
	a := rs.access
	t, err := a.ReadTree(ctx, cv, res, rs.archiveOptions...)
	if err != nil {
		return Tree{}, err
	}
	return Tree{t}, nil
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

// Generators reports whether entry is a kustomization and what its
// generators (its own, its local bases' and components') generate (see
// kustomize.Generators).
func (t Tree) Generators(entry string) (bool, kustomize.Generated, error) {
	return kustomize.Generators(t.Tree, entry)
}

// TreeGenerators is what the generators of every kustomization of the
// tree generate (see kustomize.TreeGenerators).
func (t Tree) TreeGenerators() kustomize.Generated {
	return kustomize.TreeGenerators(t.Tree)
}
