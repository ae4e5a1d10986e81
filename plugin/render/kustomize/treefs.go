package kustomize

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// treeFileSystem is the tree as kustomize sees it, read-only.
//
// The structure (directories, and every file as an empty placeholder) lives
// in kyaml's own in-memory file system, so that path resolution, the load
// restrictor's CleanedAbs, Exists, IsDir, ReadDir, Glob and their error
// messages stay exactly kustomize's. Contents are served from the tree:
// copying them in, as the first design did, held every file two more times
// (kyaml copies on write), so a 100 MiB file the build never reads cost
// 200 MiB. Now a file costs a copy only when kustomize reads it, as kyaml's
// ReadFile copies too.
type treeFileSystem struct {
	filesys.FileSystem                  // structure only; files are empty
	tree               fs.FS            // the contents
	sizes              map[string]int64 // tree path → size, for every file
}

var _ filesys.FileSystem = (*treeFileSystem)(nil)

// newTreeFileSystem lays the tree out under memRoot.
func newTreeFileSystem(tfs fs.FS) (*treeFileSystem, error) {
	t := &treeFileSystem{FileSystem: filesys.MakeFsInMemory(), tree: tfs, sizes: map[string]int64{}}
	err := fs.WalkDir(tfs, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		full := path.Join(memRoot, p)
		if d.IsDir() {
			return t.FileSystem.MkdirAll(full)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// kyaml refuses some names (it allows [a-zA-Z0-9-_.:] only); adding
		// the placeholder keeps that refusal as it was.
		if err := t.FileSystem.WriteFile(full, nil); err != nil {
			return err
		}
		t.sizes[p] = info.Size()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// file returns the tree path of name when name resolves to a file, as kyaml
// resolves it: leading separators dropped, then cleaned (so "/a/../b" is
// "b", and a path through ".." above the root is no file).
func (t *treeFileSystem) file(name string) (string, bool) {
	p := filepath.ToSlash(filepath.Clean(filesys.StripLeadingSeps(name)))
	_, ok := t.sizes[p]
	return p, ok
}

// ReadFile implements filesys.FileSystem: a copy, as kyaml's own, since
// kustomize may change what it reads and the tree is shared.
func (t *treeFileSystem) ReadFile(name string) ([]byte, error) {
	p, ok := t.file(name)
	if !ok {
		return t.FileSystem.ReadFile(name) // kyaml's errors for directories and missing files
	}
	return fs.ReadFile(t.tree, p)
}

// Open implements filesys.FileSystem, for reading only.
func (t *treeFileSystem) Open(name string) (filesys.File, error) {
	p, ok := t.file(name)
	if !ok {
		return t.FileSystem.Open(name)
	}
	f, err := t.tree.Open(p)
	if err != nil {
		return nil, err
	}
	return &treeFile{File: f, info: t.info(p)}, nil
}

// Walk implements filesys.FileSystem, reporting the files' real sizes.
func (t *treeFileSystem) Walk(name string, walkFn filepath.WalkFunc) error {
	return t.FileSystem.Walk(name, func(p string, info os.FileInfo, err error) error {
		if err == nil && info != nil && !info.IsDir() {
			if tp, ok := t.file(p); ok {
				info = t.info(tp)
			}
		}
		return walkFn(p, info, err)
	})
}

func (t *treeFileSystem) info(p string) os.FileInfo {
	return fileInfo{name: path.Base(p), size: t.sizes[p]}
}

// The tree is immutable and shared; a build writes nothing (plugins, helm
// and remote bases, the only writers, are disabled or refused), so every
// write is refused rather than half supported.

func (t *treeFileSystem) Create(name string) (filesys.File, error) {
	return nil, readOnly("create", name)
}
func (t *treeFileSystem) Mkdir(name string) error               { return readOnly("mkdir", name) }
func (t *treeFileSystem) MkdirAll(name string) error            { return readOnly("mkdir", name) }
func (t *treeFileSystem) RemoveAll(name string) error           { return readOnly("remove", name) }
func (t *treeFileSystem) WriteFile(name string, _ []byte) error { return readOnly("write", name) }

func readOnly(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("the resource tree is read-only: %w", fs.ErrPermission)}
}

// treeFile is a file of the tree opened through kustomize's interface.
type treeFile struct {
	fs.File
	info os.FileInfo
}

func (f *treeFile) Stat() (os.FileInfo, error) { return f.info, nil }
func (f *treeFile) Write([]byte) (int, error) {
	return 0, readOnly("write", f.info.Name())
}

var _ io.ReadWriteCloser = (*treeFile)(nil)

// fileInfo describes a file as kyaml's in-memory file system does (mode
// 0777, no modification time), with its size.
type fileInfo struct {
	name string
	size int64
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() os.FileMode  { return 0o777 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }
