package archive

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Tree is an extracted archive held in memory: cleaned slash-separated
// relative paths → file contents. It is immutable and safe for concurrent use.
type Tree struct {
	files map[string][]byte // may share backing arrays (link copies); never mutated
	dirs  map[string]bool   // explicit and implied directories, "." included
	names []string          // sorted keys of files
	size  int64
}

// Files returns the sorted paths of all regular files (links included, as copies).
func (t *Tree) Files() []string {
	return append([]string(nil), t.names...)
}

// ReadFile returns a copy of the contents of the file at name, a path as
// returned by Files. A missing file gives an error that matches both
// errdef.ErrNotFound and fs.ErrNotExist.
func (t *Tree) ReadFile(name string) ([]byte, error) {
	data, ok := t.files[name]
	if !ok {
		return nil, fmt.Errorf("archive file %s: %w", errdef.Quote(name), errFileNotFound{})
	}
	return append([]byte(nil), data...), nil
}

// Size returns the total bytes of file contents, link copies included.
func (t *Tree) Size() int64 { return t.size }

// errFileNotFound matches both the project sentinel and the fs one, so callers
// of ReadFile and of FS alike can test for absence the way they are used to.
type errFileNotFound struct{}

func (errFileNotFound) Error() string { return "not found" }

func (errFileNotFound) Is(target error) bool {
	return target == errdef.ErrNotFound || target == fs.ErrNotExist
}

// WriteTo materialises the tree under dir (created if missing): directories
// 0755, files 0644, existing files overwritten. Every path goes through
// SecureJoin, and all I/O goes through an os.Root, so even symlinks already
// present under dir cannot redirect a write outside it.
func (t *Tree) WriteTo(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing archive: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("writing archive: %w", err)
	}
	defer root.Close()

	dirs := make([]string, 0, len(t.dirs))
	for d := range t.dirs {
		if d != "." {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs) // parents before children
	for _, d := range dirs {
		if _, err := SecureJoin(dir, d); err != nil {
			return err
		}
		rel := filepath.FromSlash(d)
		if err := root.MkdirAll(rel, 0o755); err != nil {
			return fmt.Errorf("writing archive directory %s: %w", errdef.Quote(d), err)
		}
		// Chmod so the umask does not decide the mode.
		if err := root.Chmod(rel, 0o755); err != nil {
			return fmt.Errorf("writing archive directory %s: %w", errdef.Quote(d), err)
		}
	}
	for _, name := range t.names {
		if _, err := SecureJoin(dir, name); err != nil {
			return err
		}
		rel := filepath.FromSlash(name)
		if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			return fmt.Errorf("writing archive file %s: %w", errdef.Quote(name), err)
		}
		if err := root.WriteFile(rel, t.files[name], 0o644); err != nil {
			return fmt.Errorf("writing archive file %s: %w", errdef.Quote(name), err)
		}
		if err := root.Chmod(rel, 0o644); err != nil {
			return fmt.Errorf("writing archive file %s: %w", errdef.Quote(name), err)
		}
	}
	return nil
}

// SecureJoin joins name (a relative, slash-separated path) onto root and
// refuses any result outside root, wrapping errdef.ErrUnsafeArchive. Absolute
// names, backslashes and NUL bytes are refused outright rather than
// reinterpreted. The check is lexical: pair it with os.Root when the
// directory may already hold symlinks.
func SecureJoin(root, name string) (string, error) {
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("path %s: %s: %w", errdef.Quote(name), why, errdef.ErrUnsafeArchive)
	}
	switch {
	case strings.IndexByte(name, 0) >= 0:
		return refuse("contains a NUL byte")
	case strings.IndexByte(name, '\\') >= 0:
		return refuse("contains a backslash")
	case path.IsAbs(name) || hasVolume(name) || filepath.IsAbs(name):
		return refuse("is absolute")
	}
	clean := path.Clean(name)
	if escapes(clean) {
		return refuse(fmt.Sprintf("escapes root %s", errdef.Quote(root)))
	}
	root = filepath.Clean(root)
	joined := filepath.Join(root, filepath.FromSlash(clean))
	// Belt and braces: re-check the joined result itself.
	rel, err := filepath.Rel(root, joined)
	if err != nil || escapes(filepath.ToSlash(rel)) || filepath.IsAbs(rel) {
		return refuse(fmt.Sprintf("escapes root %s", errdef.Quote(root)))
	}
	return joined, nil
}
