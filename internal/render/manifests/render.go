package manifests

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
)

// Render decodes every .yaml, .yml and .json file (extension case-insensitive)
// under dir of fsys, recursively, in lexical path order, and returns their
// objects in that order. dir is a slash-separated path valid for fs.ValidPath;
// "" means the root. Files and directories whose names start with "." are
// skipped.
//
// Decoding errors name the file by its path in fsys and wrap both
// errdef.ErrRender and errdef.ErrInvalidInput. A dir that is missing, or
// holds no manifest files at all, is an error (errdef.ErrNotFound): rendering
// nothing by mistake would make Argo CD prune the whole application.
func Render(fsys fs.FS, dir string) ([]Object, error) {
	if dir == "" {
		dir = "."
	}
	if !fs.ValidPath(dir) {
		return nil, renderErr(fmt.Errorf("manifests: invalid directory %s: %w", errdef.Quote(dir), errdef.ErrInvalidInput))
	}
	fi, err := fs.Stat(fsys, dir)
	if err != nil {
		return nil, renderErr(fmt.Errorf("manifests: directory %s: %w", errdef.Quote(dir), errdef.ErrNotFound))
	}
	if !fi.IsDir() {
		return nil, renderErr(fmt.Errorf("manifests: %s is not a directory: %w", errdef.Quote(dir), errdef.ErrInvalidInput))
	}
	var files []string
	err = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && IsManifestFile(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, renderErr(fmt.Errorf("manifests: walking %s: %w", errdef.Quote(dir), err))
	}
	if len(files) == 0 {
		return nil, renderErr(fmt.Errorf("manifests: no .yaml, .yml or .json files under %s: %w", errdef.Quote(dir), errdef.ErrNotFound))
	}
	// WalkDir visits "a/x.yaml" before "a.yaml"; sort by the full path.
	sort.Strings(files)
	var out []Object
	total := 0
	for _, p := range files {
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, renderErr(fmt.Errorf("manifests: reading %s: %w", p, err))
		}
		if total += yamlfile.StructureCount(data); total > MaxStreamNodes {
			return nil, renderErr(fmt.Errorf("manifests: %s: the manifests under %s have more than %d structural characters (',' '[' '{' '-' ':' '?' newline) in all: %w: %w",
				p, errdef.Quote(dir), MaxStreamNodes, errdef.ErrInvalidInput, errdef.ErrLimitExceeded))
		}
		objs, err := Decode(p, data)
		if err != nil {
			return nil, renderErr(fmt.Errorf("manifests: %w", err))
		}
		if out = append(out, objs...); len(out) > MaxObjects {
			return nil, renderErr(fmt.Errorf("manifests: %s: the manifests under %s hold more than %d objects in all: %w: %w",
				p, errdef.Quote(dir), MaxObjects, errdef.ErrInvalidInput, errdef.ErrLimitExceeded))
		}
	}
	return out, nil
}

// IsManifestFile reports whether name has a .yaml, .yml or .json extension
// (case-insensitive).
func IsManifestFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// renderError adds errdef.ErrRender to an error's chain without repeating
// its text.
type renderError struct{ err error }

func (e *renderError) Error() string   { return e.err.Error() }
func (e *renderError) Unwrap() []error { return []error{e.err, errdef.ErrRender} }

func renderErr(err error) error { return &renderError{err} }
