package argocdocm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// repositoryLocation is the repository to open when req is not confined:
// a relative path that exists inside Dir is a CTF or component archive
// there; anything else (a registry spec, an absolute path) is returned as
// it is.
func repositoryLocation(req Request) string {
	if req.Dir == "" || req.Repository == "" || filepath.IsAbs(req.Repository) {
		return req.Repository
	}
	p := filepath.Join(req.Dir, req.Repository)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return req.Repository
}

// location is where a request's repository is, decided once per render
// (locate): what Renderer.Open opens, and what the planner learns of it
// (plan.Input.Registry), so that no later step looks at the file system to
// tell a path from a registry.
type location struct {
	req Request
	// spec is the repository parsed, err why it did not parse (open
	// reports it).
	spec oci.Spec
	err  error
	// name is what open gets unconfined (repositoryLocation).
	name string
}

// locate decides where req's repository is: unconfined, a relative path
// that exists inside Dir, else the spec as written; confined, a name that
// exists inside Root is a local repository, and anything else a registry.
func locate(req Request) location {
	l := location{req: req}
	if req.Root == nil {
		l.name = repositoryLocation(req)
		l.spec, l.err = oci.ParseSpec(l.name)
	} else {
		l.spec, l.err = oci.ParseSpecIn(req.Repository, req.Root.Exists)
	}
	return l
}

// local reports whether the repository is a CTF or component archive.
func (l location) local() bool { return l.err == nil && l.spec.Type == oci.TypeCTF }

// registry is the registry and path of a registry repository
// ("host[:port]/path", scheme and trailing slash cut), "" for a local one.
func (l location) registry() string {
	if l.err != nil || l.local() {
		return ""
	}
	s := strings.TrimSpace(l.req.Repository)
	for _, p := range []string{"oci://", "http://", "https://"} {
		s = strings.TrimPrefix(s, p)
	}
	return strings.TrimSuffix(s, "/")
}

// open opens the repository. Unconfined (Root nil), open gets the
// location's name. Confined, a local repository in any form (a path,
// file://, ctf::, an OCM spec's filePath) is opened inside Root and read
// through that handle; only a registry reaches open, as an explicit spec
// that no later step can take for a path.
//
// A CTF or component archive is opened with opts (kept descriptors:
// ctf.WithDescriptors; for a file, an unpack cache: ctf.WithUnpacker,
// ctf.WithCache), a file unpacked within ctx.
// allowLocal, when set, is asked before a CTF or component archive is
// opened, confined or not (the rule's localArchives): the one place it is.
func (l location) open(ctx context.Context, open func(context.Context, string) (ocm.Repository, error), allowLocal func() error, opts ...ctf.Option) (ocm.Repository, error) {
	if allowLocal != nil && l.local() {
		if err := allowLocal(); err != nil {
			return nil, err
		}
	}
	r := l.req
	if r.Root == nil {
		return open(ctx, l.name)
	}
	if l.err != nil {
		return nil, l.err
	}
	sp := l.spec
	if !l.local() {
		explicit, err := json.Marshal(sp)
		if err != nil {
			return nil, err
		}
		return open(ctx, string(explicit))
	}
	name := sp.FilePath
	f, d, err := r.Root.Open(param.Repository, name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if name == strings.TrimSpace(r.Repository) {
			// A bare name: say why it was not taken for a registry.
			return nil, fmt.Errorf("%w: %w (%s)", errdef.ErrNotFound, err, oci.RegistryHint)
		}
		return nil, fmt.Errorf("%w: %w", errdef.ErrNotFound, err)
	}
	display := errdef.Quote(name)
	if d != nil {
		return ctf.OpenDir(d, display, opts...)
	}
	// The render server's memo of archives keys this file by where it is in
	// which Application directory, so that no other Application's file can hit it.
	return ctf.OpenFile(f, display, slices.Concat(opts, []ctf.Option{ctf.WithContext(ctx), ctf.WithOrigin(r.Root.Origin(name))})...)
}

// openOffline opens a CTF (directory, tar, tgz) or a component archive.
func openOffline(_ context.Context, spec string) (ocm.Repository, error) {
	return ctf.Open(spec)
}
