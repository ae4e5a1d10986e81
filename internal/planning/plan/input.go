package plan

import (
	"context"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Input is what a planner plans one render from: the request's inputs, as
// the pipeline builds them from its Request, with the request's files and
// the renderer's verified access to resources. It is built per call and
// never kept.
type Input struct {
	Application string // Argo CD Application, for messages
	Repository  string // as the request gave it
	// RepositoryLocation is the repository as it is opened when it is not
	// confined (pipeline.Request.RepositoryLocation).
	RepositoryLocation string
	Component, Version string
	// Resources are the request's resource selectors ("name" or
	// "name,key=value"); empty: the only renderable resource.
	Resources      []string
	Path           string // entry path inside directory resources
	DefinitionFile string // a deployment definition, see package config
	// Parameters are instance parameters (name → value as text).
	Parameters map[string]string
	Localize   bool // automatic localisation of image references

	// Helm inputs, applied as HelmValues says.
	ValueFiles  []string
	Values      map[string]any
	SetJSON     []string
	Set         []string
	SetString   []string
	SetFile     []string
	ReleaseName string
	Namespace   string
	KubeVersion string
	APIVersions []string

	// Files reads the files the request names; nil: it names none a
	// planner can read.
	Files Files
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

// Files is the request's side of a render: the files it names (values,
// definition, --set-file), confined to the Application's directory when
// the request is, and the Application's own kustomize overlay.
type Files interface {
	// ReadFile reads a values or definition file named with the parameter
	// param; errors name both.
	ReadFile(param, name string) ([]byte, error)
	// ReadSetFile reads the file of a --set-file value; errors leave the
	// name to the caller.
	ReadSetFile(name string) ([]byte, error)
	// ApplicationOverlay reports whether the Application's directory holds
	// a kustomization of its own and which directoryTree resources it names.
	ApplicationOverlay() (bool, []string, error)
	// ApplicationOverlayNamedAt says where that kustomization first names
	// the resource name, "" when it does not.
	ApplicationOverlayNamedAt(name string) string
}

// ReadFile reads a file the request names through Files.
func (in Input) ReadFile(param, name string) ([]byte, error) {
	if in.Files == nil {
		return nil, fmt.Errorf("%w: %s %s: this request reads no files", errdef.ErrInvalidInput, param, errdef.Quote(name))
	}
	return in.Files.ReadFile(param, name)
}

// ApplicationOverlay is Files.ApplicationOverlay; none without Files.
func (in Input) ApplicationOverlay() (bool, []string, error) {
	if in.Files == nil {
		return false, nil, nil
	}
	return in.Files.ApplicationOverlay()
}

// ApplicationOverlayNamedAt is Files.ApplicationOverlayNamedAt; "" without Files.
func (in Input) ApplicationOverlayNamedAt(name string) string {
	if in.Files == nil {
		return ""
	}
	return in.Files.ApplicationOverlayNamedAt(name)
}

func (in Input) readSetFile(name string) ([]byte, error) {
	if in.Files == nil {
		return nil, fmt.Errorf("%w: this request reads no files", errdef.ErrInvalidInput)
	}
	return in.Files.ReadSetFile(name)
}
