package kustomize

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/confine"
)

// MountDir is the directory of the Application's directory under which a
// build shows the component's directoryTree resources, each under its
// name: a kustomization.yaml of the Application that lists
// ".ocm/manifests/overlays/prod" in its resources builds on the directory
// overlays/prod of the resource "manifests". The directory is reserved: an
// Application's directory that has one is refused (it would be hidden). The
// same layout written by hand (the resource downloaded into .ocm/manifests)
// builds the same with `kustomize build`.
const MountDir = ".ocm"

// appOverlay is a kustomization in the Application's directory built over
// a resource tree (WithApplicationOverlay).
type appOverlay struct {
	dir      fs.FS  // the Application's directory (ApplicationDir)
	resource string // the resource's name: the tree shows as MountDir/resource
}

// WithApplicationOverlay builds the kustomization at the root of app, the
// Application's directory (see ApplicationDir), instead of the entry path,
// with the tree shown as MountDir/resourceName inside it. The
// kustomization chooses the tree's directories itself; the entry path is
// not used. Everything the pre-scan refuses in a tree it refuses in app
// too, and a reference that leaves app (../other, an absolute path, a
// symbolic link out) is refused with one line. A WithOverlay overlay is
// built over app's kustomization: the definition's configuration applies
// after the Application's own.
func WithApplicationOverlay(app fs.FS, resourceName string) Option {
	return func(o *options) {
		if app != nil {
			o.app = &appOverlay{dir: app, resource: resourceName}
		}
	}
}

// maxAppScan bounds the kustomizations of the Application's directory
// NamedResources reads.
const maxAppScan = 64

// NamedResources reports whether app, an Application's directory, holds a
// kustomization at its root, and the names of the resources it (or a
// kustomization of app it reaches) names under MountDir, sorted. A
// reference to MountDir itself, without a resource name, is an error, and
// so is an existing MountDir in app. The reading is lexical and bounded;
// the build checks everything again.
func NamedResources(app fs.FS) (bool, []string, error) {
	ok, named, err := namedResources(app)
	if err != nil || !ok {
		return ok, nil, err
	}
	out := make([]string, 0, len(named))
	for n := range named {
		out = append(out, n)
	}
	sort.Strings(out)
	return true, out, nil
}

// namedRef is where a kustomization of the Application's directory first
// names a resource under MountDir: the file and the reference as written.
type namedRef struct {
	file, ref string
}

// namedResources is NamedResources, with where each name is first named.
func namedResources(app fs.FS) (bool, map[string]namedRef, error) {
	kf, err := kustomizationFile(app, ".")
	if err != nil || kf == "" {
		return false, nil, err
	}
	if err := reserved(app); err != nil {
		return true, nil, err
	}
	named := map[string]namedRef{}
	seen := map[string]bool{}
	var walk func(dir string) error
	walk = func(dir string) error {
		if seen[dir] || len(seen) >= maxAppScan {
			return nil
		}
		seen[dir] = true
		kf, err := kustomizationFile(app, dir)
		if err != nil || kf == "" {
			return err
		}
		data, err := fs.ReadFile(app, kf)
		if err != nil {
			return fail(errdef.ErrInvalidInput, "kustomize: reading %s in %s: %s", kf, confine.Where, errdef.OneLine(err.Error()))
		}
		var k types.Kustomization
		if err := k.Unmarshal(data); err != nil {
			return fail(errdef.ErrInvalidInput, "kustomize: %s in %s: %s", kf, confine.Where, errdef.OneLine(err.Error()))
		}
		//lint:ignore SA1019 kustomize still reads the deprecated field
		for _, written := range append(append(append([]string(nil), k.Resources...), k.Bases...), k.Components...) {
			r := strings.TrimSpace(written)
			if looksRemote(r) || path.IsAbs(r) {
				continue // the build's pre-scan refuses it
			}
			p := path.Join(dir, r)
			if escapes(p) {
				continue
			}
			if rest, ok := strings.CutPrefix(p, MountDir+"/"); ok {
				name, _, _ := strings.Cut(rest, "/")
				if _, ok := named[name]; !ok {
					named[name] = namedRef{file: kf, ref: written}
				}
				continue
			}
			if p == MountDir {
				return fail(errdef.ErrInvalidInput, "kustomize: %s in %s names %s itself; name a resource under it: %s/RESOURCE-NAME/PATH", kf, confine.Where, MountDir, MountDir)
			}
			if fi, err := fs.Stat(app, p); err == nil && fi.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("."); err != nil {
		return true, nil, err
	}
	return true, named, nil
}

// NamedAt says where a kustomization of app (see NamedResources) first
// names the resource name under MountDir, for --explain: "overlays/kustomization.yaml
// line 5, column 5: .ocm/manifests/base"; "" when none does, or app
// cannot be read (the build reports that).
func NamedAt(app fs.FS, name string) string {
	ok, named, err := namedResources(app)
	if err != nil || !ok {
		return ""
	}
	ref, ok := named[name]
	if !ok {
		return ""
	}
	at := ref.file
	if data, err := fs.ReadFile(app, ref.file); err == nil {
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
			if n := listEntry(doc.Content[0], ref.ref, "resources", "bases", "components"); n != nil {
				at += fmt.Sprintf(" line %d, column %d", n.Line, n.Column)
			}
		}
	}
	return at + ": " + errdef.Field(strings.TrimSpace(ref.ref))
}

// listEntry is the first item equal to value of the list fields of m.
func listEntry(m *yaml.Node, value string, fields ...string) *yaml.Node {
	for _, f := range fields {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k, v := m.Content[i], m.Content[i+1]; k.Value == f && v.Kind == yaml.SequenceNode {
				for _, e := range v.Content {
					if e.Kind == yaml.ScalarNode && e.Value == value {
						return e
					}
				}
			}
		}
	}
	return nil
}

// reserved refuses an Application's directory that has MountDir.
func reserved(app fs.FS) error {
	_, err := fs.Stat(app, MountDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fail(errdef.ErrInvalidInput, "kustomize: %s has %s; the name is reserved for the component's trees, which the plugin shows there (remove it from git)", confine.Where, MountDir)
}

// validMountName reports whether a resource name can be a directory name
// under MountDir.
func validMountName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\\\x00") && fs.ValidPath(n)
}

// renderApplicationOverlay builds o.app's kustomization over tree.
func renderApplicationOverlay(ctx context.Context, tree *archive.Tree, o options) ([]manifests.Object, error) {
	app := o.app
	if !validMountName(app.resource) {
		return nil, fail(errdef.ErrInvalidInput, "kustomize: resource name %s cannot be shown as a directory under %s", errdef.Quote(app.resource), MountDir)
	}
	kf, err := kustomizationFile(app.dir, ".")
	if err != nil {
		return nil, err
	}
	if kf == "" {
		return nil, fail(errdef.ErrInvalidInput, "kustomize: %s has no kustomization file (%s)", confine.Where, strings.Join(konfig.RecognizedKustomizationFileNames(), ", "))
	}
	if err := reserved(app.dir); err != nil {
		return nil, err
	}
	appAt, target := ".", "."
	if o.overlay != nil {
		appAt, target = mountApp, overlayDir
	}
	treeAt := path.Join(appAt, MountDir, app.resource)
	mounts := []mountPoint{
		{at: appAt, fsys: app.dir, confined: true, what: confine.Where},
		{at: treeAt, fsys: tree.FS(), confined: true, what: "the resource tree"},
	}
	if o.overlay != nil {
		data, err := o.overlay.kustomization(path.Join("..", appAt), path.Join("..", treeAt))
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, mountPoint{at: overlayDir, fsys: fileFS{name: konfig.DefaultKustomizationFileName(), data: data}})
	}
	return scanAndBuild(ctx, newUnion(mounts...), mounts, target, o)
}
