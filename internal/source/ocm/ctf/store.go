package ctf

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/counting"
)

// store is a flat file namespace: a directory or an indexed tar file.
type store interface {
	open(name string) (io.ReadCloser, int64, error)
	exists(name string) bool
	close() error
}

// validName accepts only the relative, clean names this package builds
// (artifact-index.json, blobs/<file>, component-descriptor.yaml).
func validName(name string) bool {
	return name != "" && !strings.HasPrefix(name, "/") && !strings.Contains(name, `\`) &&
		path.Clean(name) == name && name != ".." && !strings.HasPrefix(name, "../")
}

// dirStore reads a directory through an os.Root: nothing it opens can be
// outside it, whatever links or renames happen meanwhile.
type dirStore struct{ root *os.Root }

func (d dirStore) open(name string) (io.ReadCloser, int64, error) {
	if !validName(name) {
		return nil, 0, fmt.Errorf("%w: file name %s", errdef.ErrUnsafeArchive, errdef.Quote(name))
	}
	// Refuse links: a CTF written by OCM has none, and one could point anywhere.
	fi, err := d.root.Lstat(filepath.FromSlash(name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, fmt.Errorf("file %s: %w", name, errdef.ErrNotFound)
		}
		return nil, 0, fmt.Errorf("%w: file %s: cannot be read inside the repository directory", errdef.ErrUnsafeArchive, name)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%w: %s is not a regular file", errdef.ErrUnsafeArchive, name)
	}
	// Non-blocking, and the handle must be the file checked: it may have been
	// swapped for a FIFO or a link since.
	f, err := d.root.OpenFile(filepath.FromSlash(name), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: file %s: cannot be read inside the repository directory", errdef.ErrUnsafeArchive, name)
	}
	if ffi, err := f.Stat(); err != nil || !os.SameFile(fi, ffi) {
		f.Close()
		return nil, 0, fmt.Errorf("%w: %s changed while it was opened", errdef.ErrUnsafeArchive, name)
	}
	return f, fi.Size(), nil
}

func (d dirStore) exists(name string) bool {
	fi, err := d.root.Lstat(filepath.FromSlash(name))
	return err == nil && fi.Mode().IsRegular()
}

func (d dirStore) close() error { return d.root.Close() }

type tarEntry struct{ offset, size int64 }

// tarStore indexes a tar file by entry name and reads entries by offset.
type tarStore struct {
	f       *os.File
	entries map[string]tarEntry
	temp    string // decompressed copy to remove on close
}

func (t *tarStore) open(name string) (io.ReadCloser, int64, error) {
	e, ok := t.entries[name]
	if !ok {
		return nil, 0, fmt.Errorf("file %s: %w", name, errdef.ErrNotFound)
	}
	return io.NopCloser(io.NewSectionReader(t.f, e.offset, e.size)), e.size, nil
}

func (t *tarStore) exists(name string) bool { _, ok := t.entries[name]; return ok }

func (t *tarStore) close() error {
	err := t.f.Close()
	if t.temp != "" {
		os.Remove(t.temp)
	}
	return err
}

// openFileStore reads f as a tar, or a gzip-compressed tar which is first
// decompressed into a temporary file. It takes f over (closed on failure).
func openFileStore(f *os.File, o options) (*tarStore, error) {
	var magic [2]byte
	n, _ := io.ReadFull(f, magic[:])
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	ts := &tarStore{f: f}
	if archive.IsGzip(magic[:n]) {
		if o.unpacker != nil {
			cached, err := o.unpacker.open(f, o)
			if !errors.Is(err, errNoUnpacker) {
				f.Close()
				return cached, err
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				f.Close()
				return nil, err
			}
		}
		tmp, err := gunzipToTemp(f, o)
		f.Close()
		if err != nil {
			return nil, err
		}
		ts.f, ts.temp = tmp, tmp.Name()
	}
	if err := ts.index(o); err != nil {
		ts.close()
		return nil, err
	}
	return ts, nil
}

// Compression bombs: past ratioFloor bytes of output, a tgz may not expand
// more than maxRatio times its compressed size. Real CTFs (charts, manifests,
// image layers that are compressed already) stay far below; a gzip of zeros
// expands about 1000 times, so without this a 16 MiB file in a git
// repository would write DefaultMaxSize (16 GiB) to the repo-server's disk on
// every render.
const (
	maxRatio   = 100
	ratioFloor = 64 << 20
)

// ratioReader fails once the output outgrows the compressed input.
type ratioReader struct {
	r  io.Reader
	in *counting.Reader
	n  int64
}

func (r *ratioReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	if r.n > ratioFloor && r.n > maxRatio*r.in.N {
		return n, fmt.Errorf("%w: archive expands more than %d times (%d compressed bytes gave %d): a compression bomb?",
			errdef.ErrLimitExceeded, maxRatio, r.in.N, r.n)
	}
	return n, err
}

func gunzipToTemp(f *os.File, o options) (*os.File, error) {
	tmp, err := os.CreateTemp(o.tempDir, "argocd-ocm-ctf-*.tar")
	if err != nil {
		return nil, err
	}
	err = gunzipTo(o.context(), tmp, f, o)
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil
}

// index records where each regular file's data starts. archive/tar reads the
// underlying file without buffering, so after Next the file offset is the data.
func (t *tarStore) index(o options) error {
	t.entries = map[string]tarEntry{}
	tr := tar.NewReader(t.f)
	var total int64
	for count := 0; ; count++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: not a CTF or component archive: the file is not a tar or tgz archive (tar: %v); %s", errdef.ErrInvalidInput, err, RepositoryForms)
		}
		if count >= o.maxEntries {
			return fmt.Errorf("%w: archive has more than %d entries", errdef.ErrLimitExceeded, o.maxEntries)
		}
		name := path.Clean(strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/"))
		switch h.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		default:
			// CTFs hold plain files only; links and devices are refused, not followed.
			return fmt.Errorf("%w: archive entry %s is not a regular file or directory", errdef.ErrUnsafeArchive, errdef.Quote(h.Name))
		}
		if !validName(name) {
			return fmt.Errorf("%w: archive entry %s: path escapes the archive root", errdef.ErrUnsafeArchive, errdef.Quote(h.Name))
		}
		total += h.Size
		if total > o.maxSize {
			return fmt.Errorf("%w: archive is larger than %d bytes", errdef.ErrLimitExceeded, o.maxSize)
		}
		off, err := t.f.Seek(0, io.SeekCurrent)
		if err != nil {
			return err
		}
		t.entries[name] = tarEntry{offset: off, size: h.Size}
	}
	return nil
}
