package archive

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
	"time"
)

// FS returns a read-only fs.FS view of the tree. Directories are those named
// by explicit entries or implied by file paths. Files have mode 0444,
// directories 0555, and all modification times are zero: the tree keeps
// contents only.
func (t *Tree) FS() fs.FS {
	children := map[string][]fs.DirEntry{}
	for d := range t.dirs {
		if d != "." {
			parent := path.Dir(d)
			children[parent] = append(children[parent], dirInfo(d))
		}
	}
	for _, name := range t.names {
		parent := path.Dir(name)
		children[parent] = append(children[parent], fileInfo{name: path.Base(name), size: int64(len(t.files[name]))})
	}
	for _, entries := range children {
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	}
	return &treeFS{t: t, children: children}
}

type treeFS struct {
	t        *Tree
	children map[string][]fs.DirEntry
}

var (
	_ fs.ReadFileFS = (*treeFS)(nil)
	_ fs.ReadDirFS  = (*treeFS)(nil)
	_ fs.StatFS     = (*treeFS)(nil)
)

func (f *treeFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := f.t.files[name]; ok {
		return &openFile{info: fileInfo{name: path.Base(name), size: int64(len(data))}, r: bytes.NewReader(data)}, nil
	}
	if f.isDir(name) {
		return &openDir{path: name, info: dirInfo(name), entries: f.children[name]}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (f *treeFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	data, ok := f.t.files[name]
	if !ok {
		if f.isDir(name) {
			return nil, &fs.PathError{Op: "readfile", Path: name, Err: errIsDir}
		}
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
	}
	return append([]byte(nil), data...), nil
}

func (f *treeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	if !f.isDir(name) {
		if _, ok := f.t.files[name]; ok {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
		}
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return append([]fs.DirEntry(nil), f.children[name]...), nil
}

func (f *treeFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := f.t.files[name]; ok {
		return fileInfo{name: path.Base(name), size: int64(len(data))}, nil
	}
	if f.isDir(name) {
		return dirInfo(name), nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (f *treeFS) isDir(name string) bool {
	return name == "." || f.t.dirs[name]
}

var (
	errIsDir  = errors.New("is a directory")
	errNotDir = errors.New("not a directory")
)

// fileInfo serves as both fs.FileInfo and fs.DirEntry.
type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func dirInfo(p string) fileInfo {
	return fileInfo{name: path.Base(p), mode: fs.ModeDir | 0o555}
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return i.size }
func (i fileInfo) Mode() fs.FileMode {
	if i.mode == 0 {
		return 0o444
	}
	return i.mode
}
func (i fileInfo) ModTime() time.Time         { return time.Time{} }
func (i fileInfo) IsDir() bool                { return i.mode.IsDir() }
func (i fileInfo) Sys() any                   { return nil }
func (i fileInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i fileInfo) Info() (fs.FileInfo, error) { return i, nil }
func (i fileInfo) String() string             { return fs.FormatFileInfo(i) }

// openFile is an open regular file; bytes.Reader gives it Seek and ReadAt too.
type openFile struct {
	info fileInfo
	r    *bytes.Reader
}

func (f *openFile) Stat() (fs.FileInfo, error)                { return f.info, nil }
func (f *openFile) Read(p []byte) (int, error)                { return f.r.Read(p) }
func (f *openFile) ReadAt(p []byte, off int64) (int, error)   { return f.r.ReadAt(p, off) }
func (f *openFile) Seek(off int64, whence int) (int64, error) { return f.r.Seek(off, whence) }
func (f *openFile) Close() error                              { return nil }

// openDir is an open directory, listed with ReadDir.
type openDir struct {
	path    string
	info    fileInfo
	entries []fs.DirEntry
	off     int
}

func (d *openDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *openDir) Close() error               { return nil }
func (d *openDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.path, Err: errIsDir}
}

func (d *openDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return append([]fs.DirEntry(nil), rest...), nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.off += n
	return append([]fs.DirEntry(nil), rest[:n]...), nil
}
