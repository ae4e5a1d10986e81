package kustomize

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// union shows several file systems as one, each mounted at a directory
// (the resource tree under "resource", the generated overlay under
// "overlay", the Application's directory at the root or under "app", a
// tree inside it under ".ocm/NAME"), without copying any of them. A name
// belongs to the deepest mount point that contains it; the directories on
// the way to a mount point exist even where the file system below has none.
type union struct {
	mounts []mountPoint // deepest first
}

// mountPoint is one file system of a union and what the pre-scan lets its
// kustomizations reach.
type mountPoint struct {
	at   string // slash path in the union, "." for the root
	fsys fs.FS
	// confined mounts hold kustomizations that may reach nothing outside
	// the mount but the mounts below it; what names the mount in messages.
	confined bool
	what     string
}

var (
	_ fs.StatFS     = (*union)(nil)
	_ fs.ReadDirFS  = (*union)(nil)
	_ fs.ReadFileFS = (*union)(nil)
)

func newUnion(mounts ...mountPoint) *union {
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].at) > depth(mounts[j].at) })
	return &union{mounts: mounts}
}

func depth(p string) int {
	if p == "." {
		return 0
	}
	return strings.Count(p, "/") + 1
}

// under reports whether p is at or below dir (both clean slash paths).
func under(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// rel is p relative to dir, p under dir.
func rel(p, dir string) string {
	switch {
	case dir == ".":
		return p
	case p == dir:
		return "."
	}
	return p[len(dir)+1:]
}

// home is the mount that holds name, nil if none does.
func (u *union) home(name string) *mountPoint {
	for i := range u.mounts {
		if under(name, u.mounts[i].at) {
			return &u.mounts[i]
		}
	}
	return nil
}

// children are the names of the mount points (and the directories on the
// way to them) directly below dir.
func (u *union) children(dir string) []string {
	var out []string
	for _, m := range u.mounts {
		if m.at == dir || !under(m.at, dir) {
			continue
		}
		first, _, _ := strings.Cut(rel(m.at, dir), "/")
		if !contains(out, first) {
			out = append(out, first)
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// onTheWay reports whether name is a directory the union makes: a mount
// point, or a directory on the way to one.
func (u *union) onTheWay(name string) bool {
	for _, m := range u.mounts {
		if under(m.at, name) {
			return true
		}
	}
	return false
}

func (u *union) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if u.onTheWay(name) {
		return mountInfo{name: path.Base(name), dir: true}, nil
	}
	if m := u.home(name); m != nil {
		return fs.Stat(m.fsys, rel(name, m.at))
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (u *union) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	var entries []fs.DirEntry
	m := u.home(name)
	if m != nil {
		below, err := fs.ReadDir(m.fsys, rel(name, m.at))
		if err != nil && !u.onTheWay(name) {
			return nil, err
		}
		entries = below
	} else if !u.onTheWay(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	kids := u.children(name)
	if len(kids) == 0 {
		return entries, nil
	}
	out := make([]fs.DirEntry, 0, len(entries)+len(kids))
	for _, e := range entries {
		if !contains(kids, e.Name()) {
			out = append(out, e)
		}
	}
	for _, k := range kids {
		out = append(out, mountInfo{name: k, dir: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (u *union) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	if m := u.home(name); m != nil && !u.onTheWay(name) {
		return fs.ReadFile(m.fsys, rel(name, m.at))
	}
	return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
}

func (u *union) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if u.onTheWay(name) {
		entries, err := u.ReadDir(name)
		if err != nil {
			return nil, err
		}
		return &mountDir{info: mountInfo{name: path.Base(name), dir: true}, entries: entries}, nil
	}
	if m := u.home(name); m != nil {
		return m.fsys.Open(rel(name, m.at))
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// fileFS is a directory holding one file: the generated overlay's
// kustomization.
type fileFS struct {
	name string
	data []byte
}

func (f fileFS) Open(name string) (fs.File, error) {
	switch name {
	case ".":
		return &mountDir{info: mountInfo{name: ".", dir: true}, entries: []fs.DirEntry{f.info()}}, nil
	case f.name:
		return &memFile{Reader: bytes.NewReader(f.data), info: f.info()}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (f fileFS) info() mountInfo { return mountInfo{name: f.name, size: int64(len(f.data))} }

type mountInfo struct {
	name string
	size int64
	dir  bool
}

func (i mountInfo) Name() string { return i.name }
func (i mountInfo) Size() int64  { return i.size }
func (i mountInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i mountInfo) ModTime() time.Time         { return time.Time{} }
func (i mountInfo) IsDir() bool                { return i.dir }
func (i mountInfo) Sys() any                   { return nil }
func (i mountInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i mountInfo) Info() (fs.FileInfo, error) { return i, nil }

type memFile struct {
	*bytes.Reader
	info mountInfo
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }

type mountDir struct {
	info    mountInfo
	entries []fs.DirEntry
}

func (d *mountDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *mountDir) Close() error               { return nil }
func (d *mountDir) Read([]byte) (int, error)   { return 0, io.EOF }
func (d *mountDir) ReadDir(int) ([]fs.DirEntry, error) {
	out := d.entries
	d.entries = nil
	return out, nil
}
