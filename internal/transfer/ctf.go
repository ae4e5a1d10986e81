package transfer

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// ctfDir is a CTF in directory form: artifact-index.json and flat
// blobs/<alg>.<hex>. Blobs are written to a temporary file, verified and
// renamed into place, so a blob file is either complete and correct or
// absent; the index is rewritten (atomically) after every manifest, so an
// interrupted transfer leaves a CTF that holds what was finished.
type ctfDir struct {
	dir   string
	name  string // how messages call it
	index ctf.Index
}

func openCTFDir(dir, name string, create bool) (*ctfDir, error) {
	c := &ctfDir{dir: dir, name: name, index: ctf.Index{SchemaVersion: 1}}
	b, err := os.ReadFile(filepath.Join(dir, ctf.IndexFileName))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &c.index); err != nil {
			return nil, fmt.Errorf("%w: CTF %s: %s: %v", errdef.ErrInvalidDescriptor, name, ctf.IndexFileName, err)
		}
		if c.index.SchemaVersion != 1 {
			return nil, fmt.Errorf("%w: CTF %s: %s: schemaVersion %d, want 1", errdef.ErrInvalidDescriptor, name, ctf.IndexFileName, c.index.SchemaVersion)
		}
	case errors.Is(err, fs.ErrNotExist) && create:
		if err := os.MkdirAll(filepath.Join(dir, ctf.BlobsDir), 0o755); err != nil {
			return nil, fmt.Errorf("CTF %s: %w", name, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("CTF %s: %w: no %s", name, errdef.ErrNotFound, ctf.IndexFileName)
	default:
		return nil, fmt.Errorf("CTF %s: %w", name, err)
	}
	return c, nil
}

// blobPath maps "sha256:<hex>" to blobs/sha256.<hex> (validated).
func (c *ctfDir) blobPath(d string) (string, error) {
	alg, h, err := blob.ParseDigest(d)
	if err != nil {
		return "", err
	}
	return filepath.Join(c.dir, ctf.BlobsDir, alg+"."+h), nil
}

func (c *ctfDir) Resolve(_ context.Context, repo, tag string) (ocispec.Descriptor, error) {
	for _, a := range c.index.Artifacts {
		if a.Repository == repo && a.Tag == tag {
			d, err := blob.Normalize(a.Digest)
			if err != nil {
				return ocispec.Descriptor{}, fmt.Errorf("%w: CTF %s: %s:%s has digest %q", errdef.ErrInvalidDescriptor, c.name, repo, tag, a.Digest)
			}
			mt := a.MediaType
			if mt == "" {
				mt = ocispec.MediaTypeImageManifest
			}
			desc := ocispec.Descriptor{MediaType: mt, Digest: digestOf(d), Size: -1}
			if fi, err := c.stat(d); err == nil {
				desc.Size = fi.Size()
			}
			return desc, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s:%s %w in CTF %s", repo, tag, errdef.ErrNotFound, c.name)
}

func (c *ctfDir) stat(d string) (fs.FileInfo, error) {
	p, err := c.blobPath(d)
	if err != nil {
		return nil, err
	}
	return os.Lstat(p)
}

func (c *ctfDir) Fetch(_ context.Context, _ string, d ocispec.Descriptor) (io.ReadCloser, error) {
	p, err := c.blobPath(d.Digest.String())
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("CTF %s: blob %s %w", c.name, d.Digest, errdef.ErrNotFound)
	}
	return os.Open(p)
}

// Exists reports whether the CTF holds the blob: a regular file of its name
// whose content has its digest. A file of that name with other content is a
// conflict (nothing is overwritten).
func (c *ctfDir) Exists(_ context.Context, _ string, d ocispec.Descriptor) (bool, error) {
	fi, err := c.stat(d.Digest.String())
	if err != nil {
		return false, nil
	}
	if !fi.Mode().IsRegular() || (d.Size >= 0 && fi.Size() != d.Size) {
		return false, fmt.Errorf("%w: CTF %s: blob file %s is not the blob (%d bytes, want %d); nothing was overwritten", errdef.ErrConflict, c.name, d.Digest, fi.Size(), d.Size)
	}
	p, _ := c.blobPath(d.Digest.String())
	f, err := os.Open(p)
	if err != nil {
		return false, fmt.Errorf("CTF %s: %w", c.name, err)
	}
	defer f.Close()
	v, err := blob.NewVerifier(f, d.Digest.String(), fi.Size())
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(io.Discard, v); err != nil {
		return false, fmt.Errorf("%w: CTF %s: blob file %s: %w; nothing was overwritten", errdef.ErrConflict, c.name, d.Digest, err)
	}
	return true, nil
}

func (c *ctfDir) Push(_ context.Context, _ string, d ocispec.Descriptor, r io.Reader) error {
	p, err := c.blobPath(d.Digest.String())
	if err != nil {
		return err
	}
	v, err := blob.NewVerifier(r, d.Digest.String(), d.Size)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".partial-*")
	if err != nil {
		return fmt.Errorf("CTF %s: %w", c.name, err)
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
		return fmt.Errorf("CTF %s: blob %s: %w", c.name, d.Digest, err)
	}
	return nil
}

func (c *ctfDir) PushManifest(ctx context.Context, repo string, d ocispec.Descriptor, b []byte, tag string) error {
	ok, err := c.Exists(ctx, repo, d)
	if err != nil {
		return err
	}
	if !ok {
		if err := c.Push(ctx, repo, d, strings.NewReader(string(b))); err != nil {
			return err
		}
	}
	if tag == "" {
		return nil
	}
	entry := ctf.IndexArtifact{Repository: repo, Tag: tag, Digest: d.Digest.String(), MediaType: d.MediaType}
	replaced := false
	for i, a := range c.index.Artifacts {
		if a.Repository == repo && a.Tag == tag {
			c.index.Artifacts[i], replaced = entry, true
		}
	}
	if !replaced {
		c.index.Artifacts = append(c.index.Artifacts, entry)
	}
	return c.writeIndex()
}

// writeIndex writes artifact-index.json as the OCM CLI does (entries sorted
// by repository and tag), atomically.
func (c *ctfDir) writeIndex() error {
	sort.SliceStable(c.index.Artifacts, func(i, j int) bool {
		a, b := c.index.Artifacts[i], c.index.Artifacts[j]
		if a.Repository != b.Repository {
			return a.Repository < b.Repository
		}
		return a.Tag < b.Tag
	})
	b, err := json.Marshal(c.index)
	if err != nil {
		return err
	}
	p := filepath.Join(c.dir, ctf.IndexFileName)
	tmp := p + ".partial"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("CTF %s: %w", c.name, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("CTF %s: %w", c.name, err)
	}
	return nil
}

func (c *ctfDir) Commit(bool) error   { return nil }
func (c *ctfDir) Close() error        { return nil }
func (c *ctfDir) Registry() *location { return nil }
func (c *ctfDir) String() string      { return c.name }

// ctfArchive is a CTF target in tar or tgz form. It reads the existing
// archive (if any) until the first write; then it works in a staging
// directory next to it (<file>.transfer), which an interrupted transfer
// leaves behind and the next run resumes from; Commit packs the staging
// directory into the archive (written beside it and renamed) and removes it.
// An archive that needs nothing new is not rewritten.
type ctfArchive struct {
	path     string
	gz       bool
	existing *ctfReader // the archive as it is, nil if none
	staging  *ctfDir    // nil until the first write
}

func stagingDir(p string) string { return p + ".transfer" }

func openCTFArchive(p string) (*ctfArchive, error) {
	a := &ctfArchive{path: p, gz: !strings.HasSuffix(strings.ToLower(p), ".tar")}
	if _, err := os.Stat(stagingDir(p)); err == nil {
		s, err := openCTFDir(stagingDir(p), p, true)
		if err != nil {
			return nil, err
		}
		a.staging = s // resume an interrupted transfer
		return a, nil
	}
	if _, err := os.Stat(p); err == nil {
		r, err := openCTFReader(p)
		if err != nil {
			return nil, err
		}
		a.existing = r
	}
	return a, nil
}

func (a *ctfArchive) reader() store {
	if a.staging != nil {
		return a.staging
	}
	if a.existing != nil {
		return a.existing
	}
	return emptyStore{name: a.path}
}

func (a *ctfArchive) Resolve(ctx context.Context, repo, tag string) (ocispec.Descriptor, error) {
	return a.reader().Resolve(ctx, repo, tag)
}

func (a *ctfArchive) Fetch(ctx context.Context, repo string, d ocispec.Descriptor) (io.ReadCloser, error) {
	return a.reader().Fetch(ctx, repo, d)
}

func (a *ctfArchive) Exists(ctx context.Context, repo string, d ocispec.Descriptor) (bool, error) {
	return a.reader().Exists(ctx, repo, d)
}

func (a *ctfArchive) write() (*ctfDir, error) {
	if a.staging != nil {
		return a.staging, nil
	}
	dir := stagingDir(a.path)
	if err := os.MkdirAll(filepath.Join(dir, ctf.BlobsDir), 0o755); err != nil {
		return nil, fmt.Errorf("CTF %s: staging directory: %w", a.path, err)
	}
	if a.existing != nil {
		if err := extractCTF(a.path, dir); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	s, err := openCTFDir(dir, a.path, true)
	if err != nil {
		return nil, err
	}
	a.staging = s
	return s, nil
}

func (a *ctfArchive) Push(ctx context.Context, repo string, d ocispec.Descriptor, r io.Reader) error {
	s, err := a.write()
	if err != nil {
		return err
	}
	return s.Push(ctx, repo, d, r)
}

func (a *ctfArchive) PushManifest(ctx context.Context, repo string, d ocispec.Descriptor, b []byte, tag string) error {
	s, err := a.write()
	if err != nil {
		return err
	}
	return s.PushManifest(ctx, repo, d, b, tag)
}

// Commit packs the staging directory into the archive when this run or an
// interrupted one wrote anything.
func (a *ctfArchive) Commit(bool) error {
	if a.staging == nil {
		return nil
	}
	if a.existing != nil {
		a.existing.Close()
		a.existing = nil
	}
	if err := packCTF(a.staging.dir, a.path, a.gz); err != nil {
		return err
	}
	if err := os.RemoveAll(a.staging.dir); err != nil {
		return fmt.Errorf("CTF %s: remove staging directory: %w", a.path, err)
	}
	a.staging = nil
	return nil
}

func (a *ctfArchive) Close() error {
	if a.existing != nil {
		return a.existing.Close()
	}
	return nil
}

func (a *ctfArchive) Registry() *location { return nil }
func (a *ctfArchive) String() string      { return a.path }

// fixedTime is the modification time of every entry, as the OCM CLI writes it.
var fixedTime = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)

// packCTF writes dir (artifact-index.json, blobs/…) as a tar or tgz at dst:
// into a temporary file beside it, synced, then renamed over dst.
func packCTF(dir, dst string, gz bool) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".partial-*")
	if err != nil {
		return fmt.Errorf("CTF %s: %w", dst, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	var w io.Writer = bw
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(bw)
		zw.ModTime = fixedTime
		w = zw
	}
	tw := tar.NewWriter(w)
	add := func(name string, fi fs.FileInfo, src string) error {
		h := &tar.Header{Name: name, Mode: 0o644, Size: fi.Size(), ModTime: fixedTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	}
	idx := filepath.Join(dir, ctf.IndexFileName)
	fi, err := os.Stat(idx)
	if err != nil {
		return fmt.Errorf("CTF %s: %w", dst, err)
	}
	if err := add(ctf.IndexFileName, fi, idx); err != nil {
		return fmt.Errorf("CTF %s: %w", dst, err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: ctf.BlobsDir + "/", Mode: 0o755, ModTime: fixedTime, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(dir, ctf.BlobsDir))
	if err != nil {
		return fmt.Errorf("CTF %s: %w", dst, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue // partial uploads of an interrupted run
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if err := add(ctf.BlobsDir+"/"+e.Name(), fi, filepath.Join(dir, ctf.BlobsDir, e.Name())); err != nil {
			return fmt.Errorf("CTF %s: %w", dst, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// Bounds of an archive a transfer extracts to add to it.
const (
	maxArchiveEntries = 1 << 20
)

// extractCTF unpacks a CTF tar or tgz into dir: only artifact-index.json
// and blobs named by their digest, each verified against its name.
func extractCTF(src, dir string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("CTF %s: %w", src, err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%w: CTF %s: gzip: %v", errdef.ErrInvalidInput, src, err)
		}
		r = zr
	}
	tr := tar.NewReader(r)
	staging := &ctfDir{dir: dir, name: src}
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: CTF %s: tar: %v", errdef.ErrInvalidInput, src, err)
		}
		if n > maxArchiveEntries {
			return fmt.Errorf("%w: CTF %s has more than %d entries", errdef.ErrLimitExceeded, src, maxArchiveEntries)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
		switch {
		case h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeXGlobalHeader:
			continue
		case h.Typeflag != tar.TypeReg:
			return fmt.Errorf("%w: CTF %s: entry %q is not a regular file", errdef.ErrUnsafeArchive, src, h.Name)
		case name == ctf.IndexFileName:
			b, err := io.ReadAll(io.LimitReader(tr, 64<<20))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, ctf.IndexFileName), b, 0o644); err != nil {
				return err
			}
		case strings.HasPrefix(name, ctf.BlobsDir+"/") && !strings.Contains(name[len(ctf.BlobsDir)+1:], "/"):
			alg, hex, ok := strings.Cut(name[len(ctf.BlobsDir)+1:], ".")
			d, err := blob.Normalize(alg + ":" + hex)
			if !ok || err != nil {
				return fmt.Errorf("%w: CTF %s: blob file %q is not named by a digest", errdef.ErrInvalidInput, src, h.Name)
			}
			if err := staging.Push(context.Background(), "", ocispec.Descriptor{Digest: digestOf(d), Size: h.Size}, tr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: CTF %s: unexpected entry %q", errdef.ErrInvalidInput, src, h.Name)
		}
	}
}

// ctfReader reads a CTF in any form (directory, tar, tgz) through package
// ctf, which confines and bounds what it reads.
type ctfReader struct {
	r    *ctf.Repository
	name string
}

func openCTFReader(p string) (*ctfReader, error) {
	repo, err := ctf.Open(p)
	if err != nil {
		return nil, err
	}
	r, ok := repo.(*ctf.Repository)
	if !ok {
		repo.Close()
		return nil, fmt.Errorf("%w: %s is a component archive: transfer reads CTFs and OCI registries (convert it with `ocm transfer componentarchive`)", errdef.ErrInvalidInput, p)
	}
	return &ctfReader{r: r, name: p}, nil
}

func (c *ctfReader) Resolve(_ context.Context, repo, tag string) (ocispec.Descriptor, error) {
	for _, a := range c.r.Artifacts() {
		if a.Repository == repo && a.Tag == tag {
			d, err := blob.Normalize(a.Digest)
			if err != nil {
				return ocispec.Descriptor{}, fmt.Errorf("%w: CTF %s: %s:%s has digest %q", errdef.ErrInvalidDescriptor, c.name, repo, tag, a.Digest)
			}
			mt := a.MediaType
			if mt == "" {
				mt = ocispec.MediaTypeImageManifest
			}
			return ocispec.Descriptor{MediaType: mt, Digest: digestOf(d), Size: -1}, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s:%s %w in CTF %s", repo, tag, errdef.ErrNotFound, c.name)
}

// Tags lists the tags of repo.
func (c *ctfReader) Tags(_ context.Context, repo string) ([]string, error) {
	var out []string
	for _, a := range c.r.Artifacts() {
		if a.Repository == repo && a.Tag != "" {
			out = append(out, a.Tag)
		}
	}
	return out, nil
}

func (c *ctfReader) Fetch(ctx context.Context, _ string, d ocispec.Descriptor) (io.ReadCloser, error) {
	return c.r.Fetch(ctx, d)
}

func (c *ctfReader) Exists(ctx context.Context, _ string, d ocispec.Descriptor) (bool, error) {
	rc, err := c.r.Fetch(ctx, d)
	if err != nil {
		return false, nil
	}
	rc.Close()
	return true, nil
}

func (c *ctfReader) Push(context.Context, string, ocispec.Descriptor, io.Reader) error {
	return fmt.Errorf("%w: CTF %s is read only here", errdef.ErrInvalidInput, c.name)
}

func (c *ctfReader) PushManifest(context.Context, string, ocispec.Descriptor, []byte, string) error {
	return fmt.Errorf("%w: CTF %s is read only here", errdef.ErrInvalidInput, c.name)
}

func (c *ctfReader) Commit(bool) error   { return nil }
func (c *ctfReader) Close() error        { return c.r.Close() }
func (c *ctfReader) Registry() *location { return nil }
func (c *ctfReader) String() string      { return c.name }

// emptyStore is a target that does not exist yet.
type emptyStore struct{ name string }

func (e emptyStore) Resolve(_ context.Context, repo, tag string) (ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, fmt.Errorf("%s:%s %w in %s", repo, tag, errdef.ErrNotFound, e.name)
}
func (e emptyStore) Fetch(_ context.Context, _ string, d ocispec.Descriptor) (io.ReadCloser, error) {
	return nil, fmt.Errorf("blob %s %w in %s", d.Digest, errdef.ErrNotFound, e.name)
}
func (e emptyStore) Exists(context.Context, string, ocispec.Descriptor) (bool, error) {
	return false, nil
}
func (e emptyStore) Push(context.Context, string, ocispec.Descriptor, io.Reader) error { return nil }
func (e emptyStore) PushManifest(context.Context, string, ocispec.Descriptor, []byte, string) error {
	return nil
}
func (e emptyStore) Commit(bool) error   { return nil }
func (e emptyStore) Close() error        { return nil }
func (e emptyStore) Registry() *location { return nil }
func (e emptyStore) String() string      { return e.name }

func digestOf(d string) digest.Digest { return digest.Digest(d) }
