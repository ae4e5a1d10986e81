package kustomize

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/errors"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// treeFileSystem is the tree as kustomize sees it: a read-only
// filesys.FileSystem served straight from the extracted archive, rooted at
// memRoot.
//
// It answers as kyaml's in-memory file system answers (path resolution,
// CleanedAbs for the load restrictor, Exists, IsDir, ReadDir, Glob, Walk and
// their error texts), but it is not built on it: kyaml's accepts only names
// of [a-zA-Z0-9-_.:], so a tree with "release-ha-1.21+", "my notes.txt" or
// a unicode name anywhere failed, and it needed a placeholder per file. Here
// nothing is built or copied up front: every question is a lookup in the
// tree, which the archive reader already bounded (size, file count, file
// size) and confined (no path outside it, links resolved inside it). A file
// costs a copy only when kustomize reads it, as kyaml's ReadFile copies too.
type treeFileSystem struct {
	tree fs.FS // an archive.Tree's FS: Stat and ReadDir are map lookups
}

var _ filesys.FileSystem = (*treeFileSystem)(nil)

// newTreeFileSystem shows tfs to kustomize under memRoot.
func newTreeFileSystem(tfs fs.FS) *treeFileSystem {
	return &treeFileSystem{tree: tfs}
}

// node is a resolved path: its tree path ("." for the root) and what is there.
type node struct {
	p    string
	info fs.FileInfo
}

// abs is the path kustomize sees for a tree path.
func abs(p string) string {
	if p == "." {
		return memRoot
	}
	return memRoot + p
}

// find resolves name as kyaml's fsNode.Find does: "" is nothing, "/" and "."
// the root; otherwise leading separators are dropped and the rest cleaned,
// so "/a/../b" is "b" and a path through ".." above the root is nothing.
// A path through a file is an error naming that file. A nil node and nil
// error mean the path does not exist.
func (t *treeFileSystem) find(name string) (*node, error) {
	if name == "" {
		return nil, nil
	}
	p := filepath.ToSlash(filepath.Clean(filesys.StripLeadingSeps(name)))
	if name == memRoot || p == "." {
		info, err := fs.Stat(t.tree, ".")
		if err != nil {
			return nil, err
		}
		return &node{p: ".", info: info}, nil
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return nil, nil // kyaml has no entry named ".."
	}
	// Every ancestor must be a directory; kyaml names the first one that is
	// a file.
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		info, err := fs.Stat(t.tree, p[:i])
		if err != nil {
			return nil, nil
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("'%s' is not a directory", abs(p[:i]))
		}
	}
	info, err := fs.Stat(t.tree, p)
	if err != nil {
		return nil, nil
	}
	return &node{p: p, info: info}, nil
}

// notExist is kyaml's error for a missing path; it matches fs.ErrNotExist.
type notExist string

func (e notExist) Error() string { return fmt.Sprintf("'%s' doesn't exist", string(e)) }
func (e notExist) Unwrap() error { return os.ErrNotExist }

func (t *treeFileSystem) lookup(name string) (*node, error) {
	n, err := t.find(name)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, notExist(name)
	}
	return n, nil
}

// ReadFile implements filesys.FileSystem: a copy, as kyaml's own, since
// kustomize may change what it reads and the tree is shared.
func (t *treeFileSystem) ReadFile(name string) ([]byte, error) {
	n, err := t.lookup(name)
	if err != nil {
		return nil, err
	}
	if n.info.IsDir() {
		// kyaml's text, which names the root rather than the path.
		return nil, fmt.Errorf("cannot read content from non-file '%s'", memRoot)
	}
	return fs.ReadFile(t.tree, n.p)
}

// Open implements filesys.FileSystem, for reading only.
func (t *treeFileSystem) Open(name string) (filesys.File, error) {
	n, err := t.lookup(name)
	if err != nil {
		return nil, err
	}
	if n.info.IsDir() {
		return &treeDir{info: t.fileInfo(n)}, nil
	}
	f, err := t.tree.Open(n.p)
	if err != nil {
		return nil, err
	}
	return &treeFile{File: f, info: t.fileInfo(n)}, nil
}

// IsDir implements filesys.FileSystem.
func (t *treeFileSystem) IsDir(name string) bool {
	n, err := t.find(name)
	return err == nil && n != nil && n.info.IsDir()
}

// Exists implements filesys.FileSystem.
func (t *treeFileSystem) Exists(name string) bool {
	n, err := t.find(name)
	return err == nil && n != nil
}

// ReadDir implements filesys.FileSystem: the names in the directory, sorted.
func (t *treeFileSystem) ReadDir(name string) ([]string, error) {
	n, err := t.find(name)
	if err != nil || n == nil {
		return nil, notExist(name)
	}
	if !n.info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", name)
	}
	entries, err := fs.ReadDir(t.tree, n.p)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// CleanedAbs implements filesys.FileSystem; the load restrictor compares
// its results.
func (t *treeFileSystem) CleanedAbs(name string) (filesys.ConfirmedDir, string, error) {
	n, err := t.find(name)
	if err != nil {
		return "", "", errors.WrapPrefixf(err, "unable to clean")
	}
	if n == nil {
		return "", "", notExist(name)
	}
	if n.info.IsDir() {
		return filesys.ConfirmedDir(abs(n.p)), "", nil
	}
	return filesys.ConfirmedDir(abs(path.Dir(n.p))), path.Base(n.p), nil
}

// Glob implements filesys.FileSystem as kyaml does: files only, matched
// with filepath.Match against their full path, hidden files left out
// unless the pattern names them, sorted.
func (t *treeFileSystem) Glob(pattern string) ([]string, error) {
	var all []string
	err := t.Walk(memRoot, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		ok, err := filepath.Match(pattern, p)
		if err != nil {
			return err
		}
		if ok {
			all = append(all, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !filesys.IsHiddenFilePath(pattern) {
		all = filesys.RemoveHiddenFiles(all)
	}
	sort.Strings(all)
	return all, nil
}

// Walk implements filesys.FileSystem as kyaml's WalkMe: the path itself
// first, then the entries in lexical order; filepath.SkipDir from an entry
// ends its directory.
func (t *treeFileSystem) Walk(name string, walkFn filepath.WalkFunc) error {
	n, err := t.lookup(name)
	if err != nil {
		return err
	}
	return t.walk(n, walkFn)
}

func (t *treeFileSystem) walk(n *node, walkFn filepath.WalkFunc) error {
	err := walkFn(abs(n.p), t.fileInfo(n), nil)
	if !n.info.IsDir() {
		return err
	}
	if err == filepath.SkipDir {
		return nil
	}
	if err != nil {
		return err
	}
	entries, err := fs.ReadDir(t.tree, n.p)
	if err != nil {
		return err
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return err
		}
		if err := t.walk(&node{p: path.Join(n.p, e.Name()), info: info}, walkFn); err != nil {
			if err == filepath.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}

// fileInfo describes n as kyaml's in-memory file system does: mode 0777, no
// modification time, a directory's size its entry count.
func (t *treeFileSystem) fileInfo(n *node) os.FileInfo {
	fi := fileInfo{name: path.Base(n.p), size: n.info.Size(), dir: n.info.IsDir()}
	if n.p == "." {
		fi.name = memRoot
	}
	if fi.dir {
		entries, _ := fs.ReadDir(t.tree, n.p)
		fi.size = int64(len(entries))
	}
	return fi
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

// treeDir is a directory opened through kustomize's interface: it can only
// be asked for its Stat, as kyaml's.
type treeDir struct {
	info os.FileInfo
}

func (d *treeDir) Stat() (os.FileInfo, error) { return d.info, nil }
func (d *treeDir) Close() error               { return nil }
func (d *treeDir) Read([]byte) (int, error) {
	return 0, fmt.Errorf("cannot read content from non-file '%s'", d.info.Name())
}
func (d *treeDir) Write([]byte) (int, error) { return 0, readOnly("write", d.info.Name()) }

// fileInfo is kyaml's in-memory file info.
type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() os.FileMode  { return 0o777 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }
