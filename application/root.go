package application

import (
	"io/fs"
	"os"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/kustomize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/confine"
)

// Root is an Application's directory, opened as the root of every file a
// confined request names (Request.Root). Names are resolved by the kernel
// beneath it: "..", absolute names and symbolic links that leave it are
// refused, and so are FIFOs, sockets and devices. It is safe for concurrent
// use; the caller closes it when the generation is done.
type Root struct {
	root *confine.Root
}

// OpenRoot opens dir (absolute, or relative to the working directory) as
// the root of a request's files.
func OpenRoot(dir string) (*Root, error) {
	r, err := confine.Open(dir)
	if err != nil {
		return nil, err
	}
	return &Root{root: r}, nil
}

// Close releases the directory.
func (r *Root) Close() error { return r.root.Close() }

// Exists reports whether name is a file or directory inside the root.
func (r *Root) Exists(name string) bool { return r.root.Exists(name) }

// Open opens name inside the root, the request's parameter param naming it
// (errors name both): a regular file (file) or a directory (dir).
func (r *Root) Open(param, name string) (file *os.File, dir *os.Root, err error) {
	return r.root.Open(param, name)
}

// Origin names name inside the root for what outlives a generation (a
// memo of archives by file): the root's path and identity and name; "" when
// they are unknown. Two Application directories never share an origin while
// both exist.
func (r *Root) Origin(name string) string { return r.root.Origin(name) }

// FS is the root as a file system for kustomize: the Application's own
// kustomization and what it names, read beneath the root and bounded.
func (r *Root) FS() fs.FS { return kustomize.ApplicationDir(r.root) }
