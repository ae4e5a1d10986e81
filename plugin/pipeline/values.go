package pipeline

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/cmp/param"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/confine"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/yamlfile"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// HelmValues layers the request's values as helm does: files in order, then
// inline values, then --set-json, --set, --set-string and --set-file (Helm's
// order, pkg/cli/values.Options.MergeValues). Maps merge deeply, everything
// else is replaced.
func HelmValues(req Request) (map[string]any, error) {
	return HelmValuesFrom(req, func(name string) ([]byte, error) { return req.ReadFile(param.ValueFiles, name) })
}

// HelmValuesFrom is HelmValues reading each values file with read, once and
// in order, for a caller that also looks at what the files hold.
func HelmValuesFrom(req Request, read func(name string) ([]byte, error)) (map[string]any, error) {
	base := map[string]any{}
	for _, f := range req.ValueFiles {
		b, err := read(f)
		if err != nil {
			return nil, err
		}
		cur := map[string]any{}
		if err := yaml.Unmarshal(b, &cur); err != nil {
			return nil, fmt.Errorf("%w: values file %s: %v", errdef.ErrInvalidInput, f, err)
		}
		base = chartutil.MergeTables(cur, base)
	}
	if req.Values != nil {
		base = chartutil.MergeTables(manifests.DeepCopy(req.Values), base)
	}
	for _, s := range req.SetJSON {
		if err := strvals.ParseJSON(s, base); err != nil {
			return nil, fmt.Errorf("%w: --set-json %s: %v", errdef.ErrInvalidInput, errdef.Quote(s), err)
		}
	}
	for _, s := range req.Set {
		if err := strvals.ParseInto(s, base); err != nil {
			return nil, fmt.Errorf("%w: --set %s: %v", errdef.ErrInvalidInput, s, err)
		}
	}
	for _, s := range req.SetString {
		if err := strvals.ParseIntoString(s, base); err != nil {
			return nil, fmt.Errorf("%w: --set-string %s: %v", errdef.ErrInvalidInput, errdef.Quote(s), err)
		}
	}
	for _, s := range req.SetFile {
		var readErr error
		reader := func(rs []rune) (any, error) {
			b, err := req.readSetFile(string(rs))
			if err != nil {
				// Kept apart: strvals would add nothing but its own wording.
				readErr = err
				return nil, err
			}
			return string(b), nil
		}
		if err := strvals.ParseIntoFile(s, base, reader); err != nil {
			if readErr != nil {
				return nil, fmt.Errorf("--set-file %s: %w", errdef.Quote(s), readErr)
			}
			return nil, fmt.Errorf("%w: --set-file %s: %v", errdef.ErrInvalidInput, errdef.Quote(s), err)
		}
	}
	return base, nil
}

// readSetFile reads the file a --set-file value names; errors leave the name
// to the caller, whose message quotes the flag. Its content becomes
// a string value, not YAML, so only the size is bounded (a certificate or
// script is as welcome as a values file). A confined request reads inside
// Root with a values file's checks.
func (r Request) readSetFile(name string) ([]byte, error) {
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
	b, err := io.ReadAll(io.LimitReader(f, MaxUserFileSize+1))
	if err != nil {
		return fail(err)
	}
	if len(b) > MaxUserFileSize {
		return fail(fmt.Errorf("%w: larger than %d bytes: %w", errdef.ErrInvalidInput, MaxUserFileSize, errdef.ErrLimitExceeded))
	}
	return b, nil
}

func yamlMarshal(v any) ([]byte, error) { return yaml.Marshal(v) }

// MaxUserFileSize bounds a values, definition or platform config file.
const MaxUserFileSize = 4 << 20

// ReadFile reads a file the request names with the parameter param (values,
// definition, platform config; see ReadUserFile): inside Root when the
// request is confined, else at File(name). Errors name param and name (capped).
func (r Request) ReadFile(param, name string) ([]byte, error) {
	if r.Root == nil {
		b, err := ReadUserFile(r.File(name))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w: %s %s: no such file", errdef.ErrInvalidInput, param, confine.Quote(name))
			}
			if errors.Is(err, errdef.ErrInvalidInput) {
				return nil, fmt.Errorf("%s %s: %w", param, confine.Quote(name), err)
			}
			return nil, fmt.Errorf("%w: %s %s: %v", errdef.ErrInvalidInput, param, confine.Quote(name), err)
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
		return nil, fmt.Errorf("%s %s: %w", param, confine.Quote(name), err)
	}
	return b, nil
}

// ReadUserFile reads a file the user named (values, definition, platform
// config): a regular file of at most MaxUserFileSize bytes whose YAML
// structure stays within manifests.MaxDocumentNodes (a dense 4 MiB document
// would cost hundreds of MiB to decode). /dev/zero, FIFOs and the like are
// refused before they are opened.
func ReadUserFile(name string) ([]byte, error) {
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

// readUserFile reads an open file with ReadUserFile's checks; the handle, not
// a name, is checked.
func readUserFile(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", errdef.ErrInvalidInput)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxUserFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxUserFileSize {
		return nil, fmt.Errorf("%w: larger than %d bytes: %w", errdef.ErrInvalidInput, MaxUserFileSize, errdef.ErrLimitExceeded)
	}
	if n := yamlfile.StructureCount(b); n > manifests.MaxDocumentNodes {
		return nil, fmt.Errorf("%w: %d structural characters, more than %d: %w", errdef.ErrInvalidInput, n, manifests.MaxDocumentNodes, errdef.ErrLimitExceeded)
	}
	return b, nil
}
