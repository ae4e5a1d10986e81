package cmpservice

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/bytesize"
)

// Limits bound what one generation's repository stream may cost. The
// repo-server tars the Application's repository (or, with
// argocd.argoproj.io/manifest-generate-paths, those paths), which any
// Application author fills.
type Limits struct {
	// StreamBytes bounds the compressed stream. Default 512 MiB.
	StreamBytes int64
	// TarBytes bounds the uncompressed tar stream, the Application's
	// directory and everything around it. Default 2 GiB.
	TarBytes int64
	// Bytes bounds the files unpacked: the Application's directory.
	// Default 256 MiB.
	Bytes int64
	// Files bounds the entries unpacked. Default 20000.
	Files int
	// Depth bounds the directories of an entry below the Application's
	// directory. Default 64.
	Depth int
}

func (l Limits) withDefaults() Limits {
	if l.StreamBytes <= 0 {
		l.StreamBytes = 512 << 20
	}
	if l.TarBytes <= 0 {
		l.TarBytes = 2 << 30
	}
	if l.Bytes <= 0 {
		l.Bytes = 256 << 20
	}
	if l.Files <= 0 {
		l.Files = 20000
	}
	if l.Depth <= 0 {
		l.Depth = 64
	}
	return l
}

// hint ends a size limit's message: what keeps the stream small.
const hint = " (annotate the Application with argocd.argoproj.io/manifest-generate-paths: . so that Argo CD streams its directory only)"

// recvFunc receives the next message of a stream; io.EOF ends it.
type recvFunc func(*streamRequest) error

// receive reads a repository stream: its metadata, then the tgz chunks,
// unpacking the Application's directory (metadata.AppRelPath) under dir as
// the chunks arrive. It returns the metadata and the directory unpacked.
// The stream's checksum is verified before it returns; on any error the
// caller removes dir.
func receive(ctx context.Context, recv recvFunc, dir string, lim Limits) (*metadata, string, error) {
	var first streamRequest
	if err := recv(&first); err != nil {
		return nil, "", fmt.Errorf("receiving the stream's metadata: %w", err)
	}
	md := first.Metadata
	if md == nil {
		return nil, "", fmt.Errorf("%w: the stream does not start with its metadata", errdef.ErrInvalidInput)
	}
	rel, err := appRelPath(md.AppRelPath)
	if err != nil {
		return md, "", err
	}
	appDir := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(appDir, 0o700); err != nil {
		return md, "", err
	}

	pr, pw := io.Pipe()
	unpacked := make(chan error, 1)
	go func() {
		err := unpack(pr, appDir, rel, lim)
		// The rest (the tar stream's padding, a stream that ended early
		// with an error) is read and dropped: the receiver must reach the
		// end to verify the checksum.
		if err != nil {
			pr.CloseWithError(err)
		} else {
			_, _ = io.Copy(io.Discard, pr)
		}
		unpacked <- err
	}()
	sum := sha256.New()
	// The repo-server sends 1 KiB chunks by default: handed to the unpacker
	// 64 KiB at a time, not one pipe hand-off per chunk.
	bw := bufio.NewWriterSize(pw, 64<<10)
	var n int64
	var recvErr error
	for {
		if err := ctx.Err(); err != nil {
			recvErr = err
			break
		}
		var msg streamRequest
		if err := recv(&msg); err != nil {
			if !errors.Is(err, io.EOF) {
				recvErr = fmt.Errorf("receiving the stream: %w", err)
			}
			break
		}
		if !msg.HasChunk {
			recvErr = fmt.Errorf("%w: a second metadata message in the stream", errdef.ErrInvalidInput)
			break
		}
		if n += int64(len(msg.Chunk)); n > lim.StreamBytes {
			recvErr = fmt.Errorf("%w: the repository stream is larger than %s%s", errdef.ErrLimitExceeded, bytesize.Format(lim.StreamBytes), hint)
			break
		}
		sum.Write(msg.Chunk)
		if _, err := bw.Write(msg.Chunk); err != nil {
			break // unpack failed: its error says why
		}
	}
	if recvErr == nil {
		_ = bw.Flush() // an error is unpack's, which it returns
	}
	pw.CloseWithError(recvErr) // nil: io.EOF for the reader
	uerr := <-unpacked
	switch {
	case recvErr != nil:
		return md, "", recvErr
	case uerr != nil:
		return md, "", uerr
	case hex.EncodeToString(sum.Sum(nil)) != md.Checksum:
		return md, "", fmt.Errorf("%w: the repository stream does not match its checksum", errdef.ErrInvalidInput)
	}
	return md, appDir, nil
}

// appRelPath checks the Application's path in the stream: relative, inside
// it, with forward slashes. "." is the stream's root.
func appRelPath(p string) (string, error) {
	clean := path.Clean(filepath.ToSlash(p))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: the Application's path %s leaves the repository stream", errdef.ErrInvalidInput, errdef.Quote(p))
	}
	return clean, nil
}

// unpack reads a tgz stream and writes the entries below rel (the
// Application's directory, "." for all) into appDir: directories, regular
// files and symbolic links (those leaving appDir point nowhere: linkTarget).
// Nothing else is written: the plugin reads only the Application's
// directory, through a root that refuses links leaving it, so what it could
// not read anyway is not unpacked.
func unpack(r io.Reader, appDir, rel string, lim Limits) error {
	// Every write goes through the root: a link unpacked earlier cannot
	// take a later entry outside appDir.
	root, err := os.OpenRoot(appDir)
	if err != nil {
		return err
	}
	defer root.Close()
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%w: the repository stream is not gzip: %v", errdef.ErrInvalidInput, err)
	}
	tarBytes := &limitedReader{r: zr, n: lim.TarBytes}
	tr := tar.NewReader(tarBytes)
	var files int
	var bytes int64
	links := map[string]bool{} // the links unpacked: no entry goes below one
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if tarBytes.n < 0 {
				return fmt.Errorf("%w: the repository stream unpacks to more than %s%s", errdef.ErrLimitExceeded, bytesize.Format(lim.TarBytes), hint)
			}
			return fmt.Errorf("%w: the repository stream is not a tar archive: %v", errdef.ErrInvalidInput, err)
		}
		name, ok := below(h.Name, rel)
		if !ok {
			continue
		}
		if files++; files > lim.Files {
			return fmt.Errorf("%w: the Application's directory has more than %d files", errdef.ErrLimitExceeded, lim.Files)
		}
		if strings.Count(name, "/") >= lim.Depth {
			return fmt.Errorf("%w: %s is nested deeper than %d directories", errdef.ErrLimitExceeded, errdef.Quote(name), lim.Depth)
		}
		if l := linkAbove(name, links); l != "" {
			// The repo-server never streams one (it walks the checkout
			// without following links); argocd-cmp-server refuses it too:
			// the link's target, checked by name, is not where it leads.
			return fmt.Errorf("%w: %s is below the symbolic link %s", errdef.ErrInvalidInput, errdef.Quote(name), errdef.Quote(l))
		}
		dst := filepath.FromSlash(name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = root.MkdirAll(dst, 0o700)
		case tar.TypeReg:
			if bytes += h.Size; bytes > lim.Bytes {
				return fmt.Errorf("%w: the Application's directory holds more than %s", errdef.ErrLimitExceeded, bytesize.Format(lim.Bytes))
			}
			err = writeFile(root, dst, tr)
		case tar.TypeSymlink:
			if err = root.MkdirAll(filepath.Dir(dst), 0o700); err == nil {
				err = root.Symlink(linkTarget(name, h.Linkname), dst)
			}
			links[name] = true
		}
		if err != nil {
			return fmt.Errorf("unpacking %s: %w", errdef.Quote(name), err)
		}
	}
}

// linkAbove returns the link among links that name is below, if any.
func linkAbove(name string, links map[string]bool) string {
	for i := range len(name) {
		if name[i] == '/' && links[name[:i]] {
			return name[:i]
		}
	}
	return ""
}

// below returns an entry's name relative to rel when the entry is inside
// it ("." for rel itself).
func below(entry, rel string) (string, bool) {
	name := path.Clean(strings.TrimPrefix(entry, "./"))
	if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
		return "", false
	}
	if rel == "." {
		return name, true
	}
	if name == rel {
		return ".", true
	}
	rest, ok := strings.CutPrefix(name, rel+"/")
	return rest, ok
}

// outside is what a link leaving the Application's directory points to once
// unpacked: an absolute name, which the plugin's reads (through os.Root)
// refuse to follow, as they refuse the link argocd-cmp-server unpacks into
// the rest of the repository, and which names nothing for any reader (no
// directory is below /dev/null).
const outside = "/dev/null/outside-the-application-directory"

// linkTarget is the target a link at name (relative to the Application's
// directory) is unpacked with, as argocd-cmp-server's Untgz has it: an
// absolute target is taken relative to the link's directory; a target that
// leaves the Application's directory is outside.
func linkTarget(name, target string) string {
	target = path.Clean(target)
	if path.IsAbs(target) {
		// Clean leaves no ".." after the root: "/../x" is "/x".
		if target = strings.TrimLeft(target, "/"); target == "" {
			target = "."
		}
	}
	if !inside(name, target) {
		return outside
	}
	return target
}

// inside reports whether a link at name (relative to the Application's
// directory) to target stays inside it.
func inside(name, target string) bool {
	if path.IsAbs(target) {
		return false
	}
	to := path.Join(path.Dir(name), target)
	return to != ".." && !strings.HasPrefix(to, "../")
}

func writeFile(root *os.Root, dst string, r io.Reader) error {
	if err := root.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	f, err := root.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// limitedReader reads at most n bytes and then fails (n < 0 tells why).
type limitedReader struct {
	r io.Reader
	n int64
}

var errTooLarge = errors.New("stream too large")

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		l.n = -1
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
