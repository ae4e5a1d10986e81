package ctf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
)

// A CTF is written in directory form only (Writer); the tar and tgz forms
// are packed from a directory and unpacked into one (Pack, Extract), as
// OCM's own bindings do, so that blobs and the index are written in one
// place, by the rules the reader checks.

// KeyOrder is the order of the top-level keys of artifact-index.json.
// Readers ignore it; files compared byte for byte do not.
type KeyOrder int

const (
	// OCMKeyOrder is schemaVersion, then artifacts, as the OCM CLI writes it.
	OCMKeyOrder KeyOrder = iota
	// SortedKeyOrder is artifacts, then schemaVersion: how internal/testsupport/ocmbuild
	// has always written the committed fixtures (testdata/), kept so that
	// they do not change.
	SortedKeyOrder
)

// EncodeIndex returns ix as artifact-index.json, its entries sorted (in
// place, stably) by repository and tag, as the OCM CLI writes them.
func EncodeIndex(ix Index, order KeyOrder) ([]byte, error) {
	sort.SliceStable(ix.Artifacts, func(i, j int) bool {
		a, b := ix.Artifacts[i], ix.Artifacts[j]
		if a.Repository != b.Repository {
			return a.Repository < b.Repository
		}
		return a.Tag < b.Tag
	})
	if order == SortedKeyOrder {
		return json.Marshal(struct {
			Artifacts     []IndexArtifact `json:"artifacts"`
			SchemaVersion int             `json:"schemaVersion"`
		}{ix.Artifacts, ix.SchemaVersion})
	}
	return json.Marshal(ix)
}

// BlobFileName maps "sha256:<hex>" to "blobs/sha256.<hex>"; it refuses
// anything that is not a digest, so the name stays inside blobs/.
func BlobFileName(d string) (string, error) {
	alg, h, err := blob.ParseDigest(d)
	if err != nil {
		return "", err
	}
	return BlobsDir + "/" + alg + "." + h, nil
}

// Files returns the files of a CTF in memory, by slash-separated name: the
// index (its entries sorted, see EncodeIndex) and blobs, keyed by digest.
func Files(ix Index, blobs map[string][]byte, order KeyOrder) (map[string][]byte, error) {
	files := make(map[string][]byte, len(blobs)+1)
	for d, b := range blobs {
		name, err := BlobFileName(d)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	idx, err := EncodeIndex(ix, order)
	if err != nil {
		return nil, err
	}
	files[IndexFileName] = idx
	return files, nil
}

// blobDigest is the digest a blob file name (the part after blobs/) says,
// false when it names none.
func blobDigest(file string) (string, bool) {
	alg, hex, ok := strings.Cut(file, ".")
	d, err := blob.Normalize(alg + ":" + hex)
	return d, ok && err == nil
}

// Writer adds blobs and tags to a CTF in directory form. A blob is written
// to a temporary file, verified and renamed into place, so a blob file is
// either complete and correct or absent; the index is rewritten
// (atomically) on every Tag, so an interrupted writer leaves a CTF that
// holds what was finished. Errors name the CTF as "CTF <name>". Blobs may
// be written concurrently (oras.CopyGraph does, through Storage); the index
// is guarded.
type Writer struct {
	dir   string
	name  string // how messages call it
	mu    sync.Mutex
	index Index
}

// OpenWriter opens the CTF directory dir for writing: its index when it has
// one, else a new CTF (dir and blobs/ are created). name is how messages
// call it.
func OpenWriter(dir, name string) (*Writer, error) {
	w := &Writer{dir: dir, name: name, index: Index{SchemaVersion: 1}}
	b, err := os.ReadFile(filepath.Join(dir, IndexFileName))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &w.index); err != nil {
			return nil, fmt.Errorf("%w: CTF %s: %s: %v", errdef.ErrInvalidDescriptor, name, IndexFileName, err)
		}
		if w.index.SchemaVersion != 1 {
			return nil, fmt.Errorf("%w: CTF %s: %s: schemaVersion %d, want 1", errdef.ErrInvalidDescriptor, name, IndexFileName, w.index.SchemaVersion)
		}
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Join(dir, BlobsDir), 0o755); err != nil {
			return nil, fmt.Errorf("CTF %s: %w", name, err)
		}
	default:
		return nil, fmt.Errorf("CTF %s: %w", name, err)
	}
	return w, nil
}

// Dir is the CTF's directory.
func (w *Writer) Dir() string { return w.dir }

// Artifacts lists the index entries (a copy).
func (w *Writer) Artifacts() []IndexArtifact {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.index.Artifacts)
}

func (w *Writer) blobPath(d string) (string, error) {
	name, err := BlobFileName(d)
	if err != nil {
		return "", err
	}
	return filepath.Join(w.dir, filepath.FromSlash(name)), nil
}

// Stat describes the blob file of digest d, not following a link.
func (w *Writer) Stat(d string) (fs.FileInfo, error) {
	p, err := w.blobPath(d)
	if err != nil {
		return nil, err
	}
	return os.Lstat(p)
}

// Open opens the blob of digest d, unverified: an error wrapping
// errdef.ErrNotFound unless it is a regular file.
func (w *Writer) Open(d string) (io.ReadCloser, error) {
	p, err := w.blobPath(d)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("CTF %s: blob %s %w", w.name, d, errdef.ErrNotFound)
	}
	return os.Open(p)
}

// Has reports whether the CTF holds the blob of digest d and size (-1:
// unknown): a regular file of its name whose content has its digest. A file
// of that name with other content is a conflict (errdef.ErrConflict;
// nothing is overwritten).
func (w *Writer) Has(d string, size int64) (bool, error) {
	fi, err := w.Stat(d)
	if err != nil {
		return false, nil
	}
	if !fi.Mode().IsRegular() || (size >= 0 && fi.Size() != size) {
		return false, fmt.Errorf("%w: CTF %s: blob file %s is not the blob (%d bytes, want %d); nothing was overwritten", errdef.ErrConflict, w.name, d, fi.Size(), size)
	}
	p, _ := w.blobPath(d)
	f, err := os.Open(p)
	if err != nil {
		return false, fmt.Errorf("CTF %s: %w", w.name, err)
	}
	defer f.Close()
	v, err := blob.NewVerifier(f, d, fi.Size())
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(io.Discard, v); err != nil {
		return false, fmt.Errorf("%w: CTF %s: blob file %s: %w; nothing was overwritten", errdef.ErrConflict, w.name, d, err)
	}
	return true, nil
}

// PutBlob writes the blob of digest d and size (-1: unknown) read from r,
// verified before it takes its place.
func (w *Writer) PutBlob(d string, size int64, r io.Reader) error {
	p, err := w.blobPath(d)
	if err != nil {
		return err
	}
	v, err := blob.NewVerifier(r, d, size)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".partial-*")
	if err != nil {
		return fmt.Errorf("CTF %s: %w", w.name, err)
	}
	_, err = io.Copy(tmp, v)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("CTF %s: blob %s: %w", w.name, d, err)
	}
	return nil
}

// Tag makes repo:tag name the manifest or index of digest d (replacing what
// it named) and writes the index.
func (w *Writer) Tag(repo, tag, d, mediaType string) error {
	entry := IndexArtifact{Repository: repo, Tag: tag, Digest: d, MediaType: mediaType}
	w.mu.Lock()
	defer w.mu.Unlock()
	replaced := false
	for i, a := range w.index.Artifacts {
		if a.Repository == repo && a.Tag == tag {
			w.index.Artifacts[i], replaced = entry, true
		}
	}
	if !replaced {
		w.index.Artifacts = append(w.index.Artifacts, entry)
	}
	return w.writeIndex()
}

// writeIndex replaces artifact-index.json atomically.
func (w *Writer) writeIndex() error {
	b, err := EncodeIndex(w.index, OCMKeyOrder)
	if err != nil {
		return err
	}
	p := filepath.Join(w.dir, IndexFileName)
	tmp := p + ".partial"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("CTF %s: %w", w.name, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("CTF %s: %w", w.name, err)
	}
	return nil
}
