package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// Where is how messages name the root.
const Where = "the Application's directory"

// Root is an Application's directory, opened. It is safe for concurrent use.
type Root struct {
	root   *os.Root
	origin string // see Origin
}

// Open opens dir (absolute, or relative to the working directory) as the root.
func Open(dir string) (*Root, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, Where, err)
	}
	return &Root{root: r, origin: originOf(dir, r)}, nil
}

// Origin names name inside the root for what outlives a generation (the
// render server's memo of archives by file): the root's absolute path, the
// identity (device and inode) of the directory opened, and name, cleaned.
// Two Application directories never share an origin while both exist; a
// directory made again at the same path has another unless its inode was
// reused. "" when the root's path or identity is unknown.
func (r *Root) Origin(name string) string {
	if r.origin == "" {
		return ""
	}
	return r.origin + "\x00" + filepath.Clean(name)
}

// originOf is the absolute path and identity of the directory dir opened
// as r, "" if either is unknown.
func originOf(dir string, r *os.Root) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	fi, err := r.Stat(".")
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s\x00%d:%d", abs, st.Dev, st.Ino)
}

// Close releases the root.
func (r *Root) Close() error { return r.root.Close() }

// Refused is the one refusal of a name that is not a regular file or
// directory inside the root: outside it (lexically or through a symbolic
// link, existing or not), a FIFO, a device, a socket.
func Refused(param, name string) error {
	return fmt.Errorf("%w: %s %s: not a file or directory inside %s", errdef.ErrInvalidInput, param, errdef.Quote(name), Where)
}

// MissingError is a name that stays inside the root and does not exist
// there. It matches fs.ErrNotExist; callers add the sentinel that fits (a
// missing values file is invalid input, a missing repository not found).
type MissingError struct{ Param, Name string }

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s %s: no such file or directory in %s", e.Param, errdef.Quote(e.Name), Where)
}

// Is matches fs.ErrNotExist.
func (e *MissingError) Is(target error) bool { return target == fs.ErrNotExist }

func missing(param, name string) error { return &MissingError{Param: param, Name: name} }

// Kind is what a name is inside the root.
type Kind int

// Kinds of Stat.
const (
	Missing Kind = iota // inside, and does not exist
	File                // a regular file
	Dir                 // a directory
)

// Stat says what name is, following symbolic links inside the root only. It
// opens nothing. Anything but a regular file, a directory or a missing name
// inside the root is Refused.
func (r *Root) Stat(param, name string) (Kind, error) {
	if !local(name) {
		return Missing, Refused(param, name)
	}
	fi, err := r.root.Stat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ELOOP) {
			return Missing, missing(param, name)
		}
		return Missing, Refused(param, name)
	}
	switch {
	case fi.Mode().IsRegular():
		return File, nil
	case fi.IsDir():
		return Dir, nil
	}
	return Missing, Refused(param, name)
}

// Exists reports whether name is a regular file or a directory inside the root.
func (r *Root) Exists(name string) bool {
	k, err := r.Stat("", name)
	return err == nil && k != Missing
}

// Open opens name, a regular file or a directory inside the root, without
// blocking: exactly one of file and dir is set. The caller closes it.
func (r *Root) Open(param, name string) (file *os.File, dir *os.Root, err error) {
	k, err := r.Stat(param, name)
	if err != nil {
		return nil, nil, err
	}
	f, err := r.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, missing(param, name)
		}
		return nil, nil, Refused(param, name)
	}
	// The handle, not the name, decides: the name may have been swapped
	// since Stat.
	fi, err := f.Stat()
	if err != nil || (k == File) != fi.Mode().IsRegular() || (k == Dir) != fi.IsDir() {
		f.Close()
		return nil, nil, Refused(param, name)
	}
	if k == File {
		return f, nil, nil
	}
	defer f.Close()
	d, err := r.root.OpenRoot(name)
	if err != nil {
		return nil, nil, Refused(param, name)
	}
	// os.Root has no constructor from a handle: check that the directory
	// opened as a root is the one checked.
	if di, err := d.Stat("."); err != nil || !os.SameFile(di, fi) {
		d.Close()
		return nil, nil, Refused(param, name)
	}
	return nil, d, nil
}

// OpenFile opens name, a regular file inside the root, without blocking.
func (r *Root) OpenFile(param, name string) (*os.File, error) {
	f, d, err := r.Open(param, name)
	if err != nil {
		return nil, err
	}
	if d != nil {
		d.Close()
		return nil, fmt.Errorf("%w: %s %s: a directory, not a file", errdef.ErrInvalidInput, param, errdef.Quote(name))
	}
	return f, nil
}

// local: relative, without "..", not empty, no NUL. Escapes through
// symbolic links are the kernel's (os.Root) to refuse; this keeps a lexical
// escape from depending on which directories exist on the way.
func local(name string) bool {
	return name != "" && !strings.ContainsRune(name, 0) && filepath.IsLocal(name)
}
