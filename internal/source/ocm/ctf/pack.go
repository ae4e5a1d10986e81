package ctf

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
)

// maxExtractEntries bounds the entries of an archive Extract unpacks.
const maxExtractEntries = 1 << 20

// Pack writes the CTF directory dir (artifact-index.json, blobs/…) as a tar,
// or a tgz when gz is set, at dst: into a temporary file beside it, synced,
// then renamed over dst. Hidden files of blobs/ (a Writer's partial blobs)
// are left out.
func Pack(dir, dst string, gz bool) (err error) {
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
	var opts []archive.WriteOption
	if gz {
		opts = append(opts, archive.WithGzip())
	}
	tw := archive.NewWriter(bw, opts...)
	add := func(name string, fi fs.FileInfo, src string) error {
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		return tw.File(name, fi.Size(), f)
	}
	idx := filepath.Join(dir, IndexFileName)
	fi, err := os.Stat(idx)
	if err != nil {
		return fmt.Errorf("CTF %s: %w", dst, err)
	}
	if err := add(IndexFileName, fi, idx); err != nil {
		return fmt.Errorf("CTF %s: %w", dst, err)
	}
	if err := tw.Dir(BlobsDir + "/"); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(dir, BlobsDir))
	if err != nil {
		return fmt.Errorf("CTF %s: %w", dst, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue // partial blobs of an interrupted run
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if err := add(BlobsDir+"/"+e.Name(), fi, filepath.Join(dir, BlobsDir, e.Name())); err != nil {
			return fmt.Errorf("CTF %s: %w", dst, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
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

// Extract unpacks the CTF tar or tgz src into the directory dir (created
// when missing), to add to
// it with a Writer and Pack it again: only artifact-index.json and blobs
// named by their digest, each verified against its name (as a Writer writes
// it); links, devices and any other entry are refused.
func Extract(src, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, BlobsDir), 0o755); err != nil {
		return fmt.Errorf("CTF %s: %w", src, err)
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("CTF %s: %w", src, err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); archive.IsGzip(magic) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%w: CTF %s: gzip: %v", errdef.ErrInvalidInput, src, err)
		}
		r = zr
	}
	tr := tar.NewReader(r)
	w := &Writer{dir: dir, name: src}
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: CTF %s: tar: %v", errdef.ErrInvalidInput, src, err)
		}
		if n > maxExtractEntries {
			return fmt.Errorf("%w: CTF %s has more than %d entries", errdef.ErrLimitExceeded, src, maxExtractEntries)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
		switch {
		case h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeXGlobalHeader:
			continue
		case h.Typeflag != tar.TypeReg:
			return fmt.Errorf("%w: CTF %s: entry %s is not a regular file", errdef.ErrUnsafeArchive, src, errdef.Quote(h.Name))
		case name == IndexFileName:
			// Copied as it is: OpenWriter checks it.
			b, err := io.ReadAll(io.LimitReader(tr, maxIndexSize))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, IndexFileName), b, 0o644); err != nil {
				return err
			}
		case strings.HasPrefix(name, BlobsDir+"/") && !strings.Contains(name[len(BlobsDir)+1:], "/"):
			d, ok := blobDigest(name[len(BlobsDir)+1:])
			if !ok {
				return fmt.Errorf("%w: CTF %s: blob file %s is not named by a digest", errdef.ErrInvalidInput, src, errdef.Quote(h.Name))
			}
			if err := w.PutBlob(d, h.Size, tr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: CTF %s: unexpected entry %s", errdef.ErrInvalidInput, src, errdef.Quote(h.Name))
		}
	}
}
