package kustomize

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"sort"
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

// overlayDir is where the generated overlay sits: a top-level directory of
// the file system kustomize sees, beside the tree's own. A tree that has a
// directory of this name is refused with an overlay, never shadowed.
const overlayDir = ".argocd-ocm-plugin-overlay"

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
	base := path.Join("..", entry) // overlayDir is one level below the tree's root
	if entry == "." {
		base = ".."
	}
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

// withFile is tfs plus one file at dir/name, where dir is a top-level
// directory tfs does not have: the generated overlay, shown to kustomize
// beside the tree without copying the tree.
type withFile struct {
	fs.FS
	dir, name string
	data      []byte
}

func (w *withFile) Open(name string) (fs.File, error) {
	switch name {
	case w.dir:
		return &extraDir{info: extraInfo{name: w.dir, dir: true}, entries: []fs.DirEntry{extraInfo{name: w.name, size: int64(len(w.data))}}}, nil
	case w.dir + "/" + w.name:
		return &extraFile{Reader: bytes.NewReader(w.data), info: extraInfo{name: w.name, size: int64(len(w.data))}}, nil
	}
	return w.FS.Open(name)
}

func (w *withFile) Stat(name string) (fs.FileInfo, error) {
	switch name {
	case w.dir:
		return extraInfo{name: w.dir, dir: true}, nil
	case w.dir + "/" + w.name:
		return extraInfo{name: w.name, size: int64(len(w.data))}, nil
	}
	return fs.Stat(w.FS, name)
}

func (w *withFile) ReadFile(name string) ([]byte, error) {
	if name == w.dir+"/"+w.name {
		return append([]byte(nil), w.data...), nil
	}
	return fs.ReadFile(w.FS, name)
}

func (w *withFile) ReadDir(name string) ([]fs.DirEntry, error) {
	switch name {
	case w.dir:
		return []fs.DirEntry{extraInfo{name: w.name, size: int64(len(w.data))}}, nil
	case ".":
		entries, err := fs.ReadDir(w.FS, ".")
		if err != nil {
			return nil, err
		}
		entries = append(entries, extraInfo{name: w.dir, dir: true})
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		return entries, nil
	}
	return fs.ReadDir(w.FS, name)
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
