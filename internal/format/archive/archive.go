package archive

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/counting"
)

// IsGzip reports whether b starts with the gzip magic bytes 1f 8b.
func IsGzip(b []byte) bool {
	return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b
}

// maxTrailer bounds how much of the gzip stream after the tar end marker is
// read to verify the gzip checksum; tar pads to 10 KiB records, so this is
// plenty, and it stops a bomb from hiding behind the end marker.
const maxTrailer = 1 << 20

// ReadTree reads a tar or gzip-compressed tar archive (detected by content,
// never by name) into memory, refusing unsafe entries and enforcing the limits
// set by opts (see WithMaxSize, WithMaxFiles, WithMaxFileSize).
//
// Unsafe entries give errors wrapping errdef.ErrUnsafeArchive, exceeded limits
// errdef.ErrLimitExceeded; both name the offending entry. A truncated or
// corrupt stream gives an error wrapping the underlying io, tar or gzip error.
//
// r is consumed as a stream, never held whole: each file is read into a slice
// of its own size as its entry comes by. ReadTree stops shortly after the tar
// end marker (for gzip, at the end of the gzip stream or 1 MiB of decompressed
// data past the marker, whichever comes first), so r may have bytes left; a caller that verifies r's digest at EOF must read the
// rest itself before trusting the tree.
func ReadTree(r io.Reader, opts ...Option) (*Tree, error) {
	o := newOptions(opts)

	br := bufio.NewReader(r)
	magic, _ := br.Peek(2) // a short read just means "not gzip"
	var src io.Reader = br
	var gz *gzip.Reader
	if IsGzip(magic) {
		var err error
		if gz, err = gzip.NewReader(br); err != nil {
			return nil, fmt.Errorf("reading archive: gzip: %w", err)
		}
		src = gz
	}

	cr := &counting.Reader{R: src}
	rd := reader{o: o, nodes: map[string]*node{}}
	if err := rd.readAll(tar.NewReader(cr)); err != nil {
		return nil, err
	}
	if cr.N == 0 {
		// archive/tar reads zero bytes as an empty archive; an empty blob is
		// far more likely a broken upload than an intended empty tar (which
		// is 1024 zero bytes), so say so.
		return nil, fmt.Errorf("reading archive: empty input, not a tar archive: %w", io.ErrUnexpectedEOF)
	}
	if gz != nil {
		// Drain the rest of the gzip stream so a corrupt or truncated tail
		// (bad CRC, cut-off trailer) is reported instead of silently accepted.
		if _, err := io.Copy(io.Discard, io.LimitReader(gz, maxTrailer)); err != nil {
			return nil, fmt.Errorf("reading archive: gzip: %w", err)
		}
	}
	return rd.build()
}

type nodeKind int

const (
	kindFile nodeKind = iota
	kindDir
	kindSymlink
	kindHardlink
)

// node is one entry as read from the stream, before links are resolved.
type node struct {
	raw    string // header name as found in the archive, for error messages
	kind   nodeKind
	data   []byte
	target string // cleaned, root-relative link target
}

type reader struct {
	o       options
	nodes   map[string]*node
	entries int
	total   int64 // bytes read so far plus link copies, checked against maxSize
}

func unsafeErr(raw, format string, args ...any) error {
	return fmt.Errorf("archive entry %s: %s: %w", errdef.Quote(raw), fmt.Sprintf(format, args...), errdef.ErrUnsafeArchive)
}

func limitErr(raw, format string, args ...any) error {
	return fmt.Errorf("archive entry %s: %s: %w", errdef.Quote(raw), fmt.Sprintf(format, args...), errdef.ErrLimitExceeded)
}

func (rd *reader) readAll(tr *tar.Reader) error {
	last := "" // name of the previous entry, to locate stream errors
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if last != "" {
				return fmt.Errorf("reading archive after entry %s: %w", errdef.Quote(last), err)
			}
			return fmt.Errorf("reading archive: %w", err)
		}
		last = hdr.Name
		rd.entries++
		if rd.entries > rd.o.maxFiles {
			return limitErr(hdr.Name, "more than %d entries", rd.o.maxFiles)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue // pax global headers carry metadata only
		}
		if err := rd.add(tr, hdr); err != nil {
			return err
		}
	}
}

// add validates one entry and records it; later entries replace earlier ones,
// as when extracting with tar.
func (rd *reader) add(tr *tar.Reader, hdr *tar.Header) error {
	name, skip, err := cleanName(hdr.Name)
	if err != nil {
		return err
	}

	n := &node{raw: hdr.Name}
	switch hdr.Typeflag {
	case tar.TypeReg:
		n.kind = kindFile
	case tar.TypeDir:
		n.kind = kindDir
	case tar.TypeSymlink:
		n.kind = kindSymlink
	case tar.TypeLink:
		n.kind = kindHardlink
	case tar.TypeChar, tar.TypeBlock:
		return unsafeErr(hdr.Name, "device files are not supported")
	case tar.TypeFifo:
		return unsafeErr(hdr.Name, "FIFOs are not supported")
	default:
		return unsafeErr(hdr.Name, "unsupported entry type %s", errdef.Quote(string(hdr.Typeflag)))
	}
	if skip {
		if n.kind == kindDir {
			return nil // the root itself
		}
		return unsafeErr(hdr.Name, "only a directory may name the archive root")
	}

	switch n.kind {
	case kindFile:
		if n.data, err = rd.readData(tr, hdr); err != nil {
			return err
		}
	case kindSymlink:
		if n.target, err = symlinkTarget(hdr.Name, name, hdr.Linkname); err != nil {
			return err
		}
	case kindHardlink:
		if n.target, err = hardlinkTarget(hdr.Name, hdr.Linkname); err != nil {
			return err
		}
	}

	if old, ok := rd.nodes[name]; ok && (old.kind == kindDir) != (n.kind == kindDir) {
		return unsafeErr(hdr.Name, "path is both a file and a directory")
	}
	rd.nodes[name] = n
	return nil
}

// readData reads a regular file's contents into a slice of exactly the
// declared size. archive/tar delivers exactly hdr.Size bytes for a regular
// file (sparse holes as zeros) and refuses negative sizes, and the checks
// below bound that size by the per-file limit and the remaining budget before
// anything is allocated, so an oversized or bomb entry still costs bounded
// memory. One exact allocation, unlike io.ReadAll's doubling, keeps a large
// file at 1× its size instead of up to 2× while it is read.
func (rd *reader) readData(tr *tar.Reader, hdr *tar.Header) ([]byte, error) {
	switch {
	case hdr.Size < 0:
		return nil, unsafeErr(hdr.Name, "negative size %d", hdr.Size)
	case hdr.Size > rd.o.maxFileSize:
		return nil, limitErr(hdr.Name, "size %d exceeds the per-file limit of %d bytes", hdr.Size, rd.o.maxFileSize)
	case hdr.Size > rd.o.maxSize-rd.total:
		return nil, limitErr(hdr.Name, "total size exceeds the limit of %d bytes", rd.o.maxSize)
	}
	data := make([]byte, hdr.Size)
	if _, err := io.ReadFull(tr, data); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // some bytes were declared, none came
		}
		return nil, fmt.Errorf("archive entry %s: reading contents: %w", errdef.Quote(hdr.Name), err)
	}
	rd.total += hdr.Size
	return data, nil
}

// cleanName validates an entry name and returns it cleaned and slash-separated.
// skip is true for names that denote the root ("", ".", "./").
func cleanName(raw string) (name string, skip bool, err error) {
	if err := checkPath(raw, raw, "path"); err != nil {
		return "", false, err
	}
	name = path.Clean(raw)
	if name == "." {
		return "", true, nil
	}
	if escapes(name) {
		return "", false, unsafeErr(raw, "path escapes the archive root")
	}
	return name, false, nil
}

// checkPath refuses the forms that are unsafe before any cleaning. what is
// "path" for an entry name, or "symlink target"/"hardlink target" for p a
// link target, which is then quoted in the message.
func checkPath(raw, p, what string) error {
	if what != "path" {
		what = fmt.Sprintf("%s %s", what, errdef.Quote(p))
	}
	switch {
	case len(p) > maxNameLen:
		return limitErr(errdef.Cut(raw), "%s longer than %d bytes", what, maxNameLen)
	case strings.IndexByte(p, 0) >= 0:
		return unsafeErr(raw, "%s contains a NUL byte", what)
	case strings.IndexByte(p, '\\') >= 0:
		// A separator on Windows; refused everywhere so no platform can
		// read it as one.
		return unsafeErr(raw, "%s contains a backslash", what)
	case strings.HasPrefix(p, "/") || hasVolume(p):
		return unsafeErr(raw, "%s is absolute", what)
	case !utf8.ValidString(p):
		// io/fs names are UTF-8: such an entry could be listed but never
		// opened through the tree's FS (kustomize's view of it).
		return unsafeErr(raw, "%s is not valid UTF-8", what)
	}
	return nil
}

// hasVolume reports a Windows drive prefix such as "C:".
func hasVolume(p string) bool {
	if len(p) < 2 || p[1] != ':' {
		return false
	}
	c := p[0] | 0x20 // lower-case ASCII letters
	return 'a' <= c && c <= 'z'
}

func escapes(clean string) bool {
	return clean == ".." || strings.HasPrefix(clean, "../")
}

// symlinkTarget resolves a symlink target relative to the link's directory.
func symlinkTarget(raw, name, linkname string) (string, error) {
	if linkname == "" {
		return "", unsafeErr(raw, "empty symlink target")
	}
	if err := checkPath(raw, linkname, "symlink target"); err != nil {
		return "", err
	}
	target := path.Join(path.Dir(name), linkname)
	if escapes(target) {
		return "", unsafeErr(raw, "symlink target %s escapes the archive root", errdef.Quote(linkname))
	}
	return target, nil
}

// hardlinkTarget resolves a hardlink target relative to the archive root, as
// tar does.
func hardlinkTarget(raw, linkname string) (string, error) {
	if linkname == "" {
		return "", unsafeErr(raw, "empty hardlink target")
	}
	if err := checkPath(raw, linkname, "hardlink target"); err != nil {
		return "", err
	}
	target := path.Clean(linkname)
	if escapes(target) {
		return "", unsafeErr(raw, "hardlink target %s escapes the archive root", errdef.Quote(linkname))
	}
	return target, nil
}

// build resolves links into file copies and checks the finished tree.
func (rd *reader) build() (*Tree, error) {
	names := make([]string, 0, len(rd.nodes))
	for name := range rd.nodes {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic: the first offending entry is reported

	t := &Tree{files: map[string][]byte{}, dirs: map[string]bool{".": true}}
	for _, name := range names {
		n := rd.nodes[name]
		switch n.kind {
		case kindDir:
			t.dirs[name] = true
		case kindFile:
			t.files[name] = n.data
		default:
			data, err := rd.resolve(name, n)
			if err != nil {
				return nil, err
			}
			rd.total += int64(len(data))
			if rd.total > rd.o.maxSize {
				return nil, limitErr(n.raw, "total size with link copies exceeds the limit of %d bytes", rd.o.maxSize)
			}
			t.files[name] = data // shared, never mutated: ReadFile copies
		}
	}

	// Every parent of a file or directory must be a directory: a file "a"
	// next to "a/b" would make WriteTo and FS ambiguous, and is the shape of
	// the symlink-then-write-through-it attack.
	for _, name := range names {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if _, isFile := t.files[dir]; isFile {
				return nil, unsafeErr(rd.nodes[name].raw, "parent %s is a file", errdef.Quote(dir))
			}
			t.dirs[dir] = true
		}
	}

	t.names = make([]string, 0, len(t.files))
	for name, data := range t.files {
		t.names = append(t.names, name)
		t.size += int64(len(data))
	}
	sort.Strings(t.names)
	return t, nil
}

// resolve follows a chain of links from n to a regular file.
func (rd *reader) resolve(name string, n *node) ([]byte, error) {
	seen := map[string]bool{name: true}
	cur := n
	for depth := 0; ; depth++ {
		if depth >= maxLinkDepth {
			return nil, limitErr(n.raw, "more than %d levels of links", maxLinkDepth)
		}
		target := cur.target
		if seen[target] {
			return nil, unsafeErr(n.raw, "link cycle through %s", errdef.Quote(target))
		}
		seen[target] = true
		next, ok := rd.nodes[target]
		switch {
		case target == "." || (ok && next.kind == kindDir) || (!ok && rd.impliedDir(target)):
			return nil, unsafeErr(n.raw, "link target %s is a directory; only links to regular files are supported", errdef.Quote(target))
		case !ok:
			return nil, unsafeErr(n.raw, "link target %s is not a file in the archive", errdef.Quote(target))
		case next.kind == kindFile:
			return next.data, nil
		}
		cur = next
	}
}

// impliedDir reports whether some entry lives under dir.
func (rd *reader) impliedDir(dir string) bool {
	prefix := dir + "/"
	for name := range rd.nodes {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}
