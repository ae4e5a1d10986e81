package argocdocm

import "github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/confine"

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
