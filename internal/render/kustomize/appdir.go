package kustomize

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync/atomic"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/confine"
)

// Bounds of what a build reads from the Application's directory (a git
// checkout the tenant controls: it may hold a large file, or a CTF).
const (
	// MaxAppFileSize bounds one file kustomize reads from it.
	MaxAppFileSize = 8 << 20
	// MaxAppRead bounds all the bytes one build reads from it.
	MaxAppRead = 64 << 20
)

// appParam names the Application's directory's files in confine's messages.
const appParam = "kustomization"

// appDir is the Application's directory as an fs.FS, read through
// confine.Root: the kernel resolves every name beneath the root (no "..",
// absolute name or symbolic link leaves it), only regular files and
// directories are opened, without blocking (a FIFO never hangs a build),
// and reads are bounded (MaxAppFileSize, MaxAppRead). Nothing is read up
// front: the checkout may hold much that the kustomization never names.
type appDir struct {
	root *confine.Root
	read atomic.Int64
}

var (
	_ fs.StatFS     = (*appDir)(nil)
	_ fs.ReadDirFS  = (*appDir)(nil)
	_ fs.ReadFileFS = (*appDir)(nil)
)

// ApplicationDir shows root, an Application's directory, to a build (see
// WithApplicationOverlay). It stays valid while root is open.
func ApplicationDir(root *confine.Root) fs.FS {
	return &appDir{root: root}
}

func (a *appDir) open(op, name string) (*os.File, *os.Root, error) {
	if !fs.ValidPath(name) {
		return nil, nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	f, d, err := a.root.Open(appParam, name)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		// kustomize asks about names that need not exist (the three
		// kustomization file names): a plain "does not exist".
		return nil, nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return f, d, err
}

func (a *appDir) Stat(name string) (fs.FileInfo, error) {
	f, d, err := a.open("stat", name)
	if err != nil {
		return nil, err
	}
	if d != nil {
		defer d.Close()
		return d.Stat(".")
	}
	defer f.Close()
	return f.Stat()
}

func (a *appDir) ReadDir(name string) ([]fs.DirEntry, error) {
	f, d, err := a.open("readdir", name)
	if err != nil {
		return nil, err
	}
	if f != nil {
		f.Close()
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	defer d.Close()
	return fs.ReadDir(d.FS(), ".")
}

func (a *appDir) ReadFile(name string) ([]byte, error) {
	f, err := a.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Open opens a regular file (bounded reads) or a directory (Stat only).
func (a *appDir) Open(name string) (fs.File, error) {
	f, d, err := a.open("open", name)
	if err != nil {
		return nil, err
	}
	if d != nil {
		defer d.Close()
		info, err := d.Stat(".")
		if err != nil {
			return nil, err
		}
		entries, err := fs.ReadDir(d.FS(), ".")
		if err != nil {
			return nil, err
		}
		return &mountDir{info: mountInfo{name: info.Name(), dir: true}, entries: entries}, nil
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if info.Size() > MaxAppFileSize {
		f.Close()
		return nil, fail(errdef.ErrLimitExceeded, "kustomize: %s %s in %s is %d bytes, more than the limit of %d", appParam, errdef.Quote(name), confine.Where, info.Size(), MaxAppFileSize)
	}
	return &appFile{File: f, a: a, name: name, left: MaxAppFileSize + 1}, nil
}

// appFile counts what is read from it against the build's budget.
type appFile struct {
	*os.File
	a    *appDir
	name string
	left int64 // a file may grow after its Stat
}

func (f *appFile) Read(p []byte) (int, error) {
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.File.Read(p)
	f.left -= int64(n)
	if f.left <= 0 {
		return n, fail(errdef.ErrLimitExceeded, "kustomize: %s %s in %s grew past the limit of %d bytes", appParam, errdef.Quote(f.name), confine.Where, MaxAppFileSize)
	}
	if total := f.a.read.Add(int64(n)); total > MaxAppRead {
		return n, fail(errdef.ErrLimitExceeded, "kustomize: the build read more than %d bytes from %s", MaxAppRead, confine.Where)
	}
	return n, err
}

func (f *appFile) Stat() (fs.FileInfo, error) { return f.File.Stat() }
