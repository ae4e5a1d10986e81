package plan

import (
	"context"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/application"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Input is what a planner plans one render from: the Application's
// request, the same value the pipeline renders, with what the pipeline
// decided of it once (where its repository is) and the renderer's verified
// access to resources. It is built per call and never kept. The request's
// files (values, definition, --set-file, the Application's overlay) are
// read through the request itself (application.Request.ReadFile and
// friends), inside its Root when it is confined.
type Input struct {
	application.Request
	// Registry is the registry and path the component version was found
	// under ("host[:port]/path"), "" for a CTF or component archive: decided
	// by the pipeline as it opened the repository, so that no planner looks
	// at the file system to tell them apart.
	Registry string
	// Reader reads the component version's resources through the
	// renderer's access and archive limits, verified like a render
	// (Resources); nil reads nothing.
	Reader Reader
}

// Reader is what a planner reads of a component version's resources
// before anything renders (see Resources, the renderer's).
type Reader interface {
	ReadDocument(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource, max int64) ([]byte, error)
	ChartValues(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (map[string]any, error)
	ReadTree(ctx context.Context, cv ocm.ComponentVersion, res *ocm.Resource) (Tree, error)
}

// ResourceReader is Reader, or one that refuses every read when there is none.
func (in Input) ResourceReader() Reader {
	if in.Reader == nil {
		return noReader{}
	}
	return in.Reader
}

type noReader struct{}

func (noReader) ReadDocument(context.Context, ocm.ComponentVersion, *ocm.Resource, int64) ([]byte, error) {
	return nil, errNoReader
}

func (noReader) ChartValues(context.Context, ocm.ComponentVersion, *ocm.Resource) (map[string]any, error) {
	return nil, errNoReader
}

func (noReader) ReadTree(context.Context, ocm.ComponentVersion, *ocm.Resource) (Tree, error) {
	return Tree{}, errNoReader
}

var errNoReader = fmt.Errorf("%w: this request reads no resources", errdef.ErrInvalidInput)
