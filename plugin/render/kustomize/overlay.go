package kustomize

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// Overlay is configuration that kustomize itself applies: the plugin writes
// it as a kustomization whose only resource is the entry directory and
// builds that, exactly as a hand-written overlay over the shipped tree
// (kustomize build of the same overlay gives the same output). So a merged
// ConfigMap gets a new hash suffix and its references follow, images are
// set by name, and patches target by kind, name, namespace or selector.
//
// Everything is inline: the overlay references no file (a patch is given as
// text, a generator by literals), so it can reach nothing the entry cannot.
type Overlay struct {
	Namespace          string
	NamePrefix         string
	NameSuffix         string
	Labels             []types.Label
	CommonAnnotations  map[string]string
	Images             []types.Image
	Replicas           []types.Replica
	Patches            []types.Patch         // inline (Patch), never Path
	ConfigMapGenerator []types.ConfigMapArgs // literals only; behavior merge/replace/create
}

// WithOverlay builds ov over the entry directory instead of the entry
// itself. A nil overlay is none.
func WithOverlay(ov *Overlay) Option {
	return func(o *options) { o.overlay = ov }
}

// With an overlay, kustomize sees two top-level directories: the tree under
// mountTree and the generated overlay under overlayDir. The overlay cannot
// sit inside the tree: kustomize refuses a base (the tree's root, for the
// root entry) that contains the kustomization naming it.
const (
	overlayDir = "overlay"
	mountTree  = "resource"
)

// kustomization is ov as a kustomization over entry (a tree path).
func (ov *Overlay) kustomization(entry string) ([]byte, error) {
	for i, p := range ov.Patches {
		if p.Path != "" {
			return nil, fail(errdef.ErrInvalidInput, "kustomize: overlay patch %d names a file (%q); give the patch inline", i, p.Path)
		}
		if p.Patch == "" {
			return nil, fail(errdef.ErrInvalidInput, "kustomize: overlay patch %d is empty", i)
		}
	}
	for _, g := range ov.ConfigMapGenerator {
		if len(g.FileSources) > 0 || len(g.EnvSources) > 0 || g.EnvSource != "" {
			return nil, fail(errdef.ErrInvalidInput, "kustomize: overlay configMapGenerator %q reads files; give literals", g.Name)
		}
		switch g.Behavior {
		case "", "create", "merge", "replace":
		default:
			return nil, fail(errdef.ErrInvalidInput, "kustomize: overlay configMapGenerator %q: behavior %q is not create, merge or replace", g.Name, g.Behavior)
		}
	}
	base := path.Join("..", mountTree, entry)
	k := types.Kustomization{
		TypeMeta:           types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources:          []string{base},
		Namespace:          ov.Namespace,
		NamePrefix:         ov.NamePrefix,
		NameSuffix:         ov.NameSuffix,
		Labels:             ov.Labels,
		CommonAnnotations:  ov.CommonAnnotations,
		Images:             ov.Images,
		Replicas:           ov.Replicas,
		Patches:            ov.Patches,
		ConfigMapGenerator: ov.ConfigMapGenerator,
	}
	return yaml.Marshal(k)
}

// mounted shows the tree under mountTree and the overlay's kustomization
// file under overlayDir, without copying the tree.
type mounted struct {
	tree fs.FS
	name string // the kustomization file's name
	data []byte
}

var (
	_ fs.StatFS     = (*mounted)(nil)
	_ fs.ReadDirFS  = (*mounted)(nil)
	_ fs.ReadFileFS = (*mounted)(nil)
)

// inTree returns name's path in the tree, if name is in it.
func inTree(name string) (string, bool) {
	if name == mountTree {
		return ".", true
	}
	rest, ok := strings.CutPrefix(name, mountTree+"/")
	return rest, ok
}

func (m *mounted) file() string { return overlayDir + "/" + m.name }

func (m *mounted) Open(name string) (fs.File, error) {
	if p, ok := inTree(name); ok {
		return m.tree.Open(p)
	}
	switch name {
	case ".", overlayDir:
		entries, _ := m.ReadDir(name)
		return &extraDir{info: extraInfo{name: path.Base(name), dir: true}, entries: entries}, nil
	case m.file():
		return &extraFile{Reader: bytes.NewReader(m.data), info: extraInfo{name: m.name, size: int64(len(m.data))}}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (m *mounted) Stat(name string) (fs.FileInfo, error) {
	if p, ok := inTree(name); ok {
		info, err := fs.Stat(m.tree, p)
		if err == nil && p == "." {
			return extraInfo{name: mountTree, dir: true}, nil
		}
		return info, err
	}
	switch name {
	case ".", overlayDir:
		return extraInfo{name: path.Base(name), dir: true}, nil
	case m.file():
		return extraInfo{name: m.name, size: int64(len(m.data))}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (m *mounted) ReadFile(name string) ([]byte, error) {
	if p, ok := inTree(name); ok {
		return fs.ReadFile(m.tree, p)
	}
	if name == m.file() {
		return append([]byte(nil), m.data...), nil
	}
	return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
}

func (m *mounted) ReadDir(name string) ([]fs.DirEntry, error) {
	if p, ok := inTree(name); ok {
		return fs.ReadDir(m.tree, p)
	}
	switch name {
	case ".":
		return []fs.DirEntry{extraInfo{name: overlayDir, dir: true}, extraInfo{name: mountTree, dir: true}}, nil
	case overlayDir:
		return []fs.DirEntry{extraInfo{name: m.name, size: int64(len(m.data))}}, nil
	}
	return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
}

type extraInfo struct {
	name string
	size int64
	dir  bool
}

func (i extraInfo) Name() string { return i.name }
func (i extraInfo) Size() int64  { return i.size }
func (i extraInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i extraInfo) ModTime() time.Time         { return time.Time{} }
func (i extraInfo) IsDir() bool                { return i.dir }
func (i extraInfo) Sys() any                   { return nil }
func (i extraInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i extraInfo) Info() (fs.FileInfo, error) { return i, nil }

type extraFile struct {
	*bytes.Reader
	info extraInfo
}

func (f *extraFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *extraFile) Close() error               { return nil }

type extraDir struct {
	info    extraInfo
	entries []fs.DirEntry
}

func (d *extraDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *extraDir) Close() error               { return nil }
func (d *extraDir) Read([]byte) (int, error)   { return 0, io.EOF }
func (d *extraDir) ReadDir(int) ([]fs.DirEntry, error) {
	out := d.entries
	d.entries = nil
	return out, nil
}
