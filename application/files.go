package application

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// ReadSetFile reads the file a --set-file value names; errors leave the name
// to the caller, whose message quotes the flag. Its content becomes
// a string value, not YAML, so only the size is bounded (a certificate or
// script is as welcome as a values file). A confined request reads inside
// Root with a values file's checks.
func (r Request) ReadSetFile(name string) ([]byte, error) {
	if r.Root != nil {
		return r.ReadFile("set-file", name)
	}
	fail := func(err error) ([]byte, error) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: no such file", errdef.ErrInvalidInput)
		}
		if errors.Is(err, errdef.ErrInvalidInput) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errdef.ErrInvalidInput, err)
	}
	p := r.File(name)
	fi, err := os.Stat(p)
	if err != nil {
		return fail(err)
	}
	if !fi.Mode().IsRegular() {
		return fail(fmt.Errorf("%w: not a regular file", errdef.ErrInvalidInput))
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxUserFileSize+1))
	if err != nil {
		return fail(err)
	}
	if len(b) > maxUserFileSize {
		return fail(fmt.Errorf("%w: larger than %d bytes: %w", errdef.ErrInvalidInput, maxUserFileSize, errdef.ErrLimitExceeded))
	}
	return b, nil
}

// maxUserFileSize bounds a values, definition or platform config file.
const maxUserFileSize = 4 << 20

// ReadFile reads a file the request names with the parameter param (values,
// definition, platform config; see readUserFileNamed): inside Root when the
// request is confined, else at File(name). Errors name param and name (capped).
func (r Request) ReadFile(param, name string) ([]byte, error) {
	if r.Root == nil {
		b, err := readUserFileNamed(r.File(name))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w: %s %s: no such file", errdef.ErrInvalidInput, param, errdef.Quote(name))
			}
			if errors.Is(err, errdef.ErrInvalidInput) {
				return nil, fmt.Errorf("%s %s: %w", param, errdef.Quote(name), err)
			}
			return nil, fmt.Errorf("%w: %s %s: %v", errdef.ErrInvalidInput, param, errdef.Quote(name), err)
		}
		return b, nil
	}
	f, err := r.Root.root.OpenFile(param, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %w", errdef.ErrInvalidInput, err)
		}
		return nil, err
	}
	defer f.Close()
	b, err := readUserFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", param, errdef.Quote(name), err)
	}
	return b, nil
}

// readUserFileNamed reads a file the user named (values, definition, platform
// config): a regular file of at most maxUserFileSize bytes whose YAML
// structure stays within manifests.MaxDocumentNodes (a dense 4 MiB document
// would cost hundreds of MiB to decode). /dev/zero, FIFOs and the like are
// refused before they are opened.
func readUserFileNamed(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", errdef.ErrInvalidInput)
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readUserFile(f)
}

// readUserFile reads an open file with readUserFileNamed's checks; the handle, not
// a name, is checked.
func readUserFile(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", errdef.ErrInvalidInput)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxUserFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxUserFileSize {
		return nil, fmt.Errorf("%w: larger than %d bytes: %w", errdef.ErrInvalidInput, maxUserFileSize, errdef.ErrLimitExceeded)
	}
	if n := yamlfile.StructureCount(b); n > manifests.MaxDocumentNodes {
		return nil, fmt.Errorf("%w: %d structural characters, more than %d: %w", errdef.ErrInvalidInput, n, manifests.MaxDocumentNodes, errdef.ErrLimitExceeded)
	}
	return b, nil
}
