package archive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/archive"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/counting"
)

// ent describes one tar entry; typ defaults to a regular file.
type ent struct {
	name string
	typ  byte
	body string
	link string
	pax  map[string]string
}

func file(name, body string) ent        { return ent{name: name, typ: tar.TypeReg, body: body} }
func dir(name string) ent               { return ent{name: name, typ: tar.TypeDir} }
func symlink(name, to string) ent       { return ent{name: name, typ: tar.TypeSymlink, link: to} }
func hardlink(name, to string) ent      { return ent{name: name, typ: tar.TypeLink, link: to} }
func special(name string, typ byte) ent { return ent{name: name, typ: typ} }

func writeTar(tb testing.TB, w io.Writer, entries []ent) {
	tb.Helper()
	tw := tar.NewWriter(w)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Linkname: e.link, Mode: 0o644, PAXRecords: e.pax}
		switch typ {
		case tar.TypeReg:
			hdr.Size = int64(len(e.body))
		case tar.TypeXGlobalHeader:
			hdr = &tar.Header{Name: e.name, Typeflag: typ, PAXRecords: e.pax}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			tb.Fatalf("WriteHeader(%q): %v", e.name, err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			tb.Fatalf("Write(%q): %v", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
}

func mkTar(tb testing.TB, entries ...ent) []byte {
	tb.Helper()
	var b bytes.Buffer
	writeTar(tb, &b, entries)
	return b.Bytes()
}

func gz(tb testing.TB, data []byte) []byte {
	tb.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func contents(tb testing.TB, tree *archive.Tree) map[string]string {
	tb.Helper()
	got := map[string]string{}
	for _, name := range tree.Files() {
		data, err := tree.ReadFile(name)
		if err != nil {
			tb.Fatalf("ReadFile(%q): %v", name, err)
		}
		got[name] = string(data)
	}
	return got
}

// checkErr asserts err wraps want and that its message contains every one of
// mention (typically the %q-quoted offending entry).
func checkErr(tb testing.TB, err, want error, mention ...string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got no error, want %v", want)
	}
	if !errors.Is(err, want) {
		tb.Fatalf("error %q does not wrap %v", err, want)
	}
	for _, m := range mention {
		if !strings.Contains(err.Error(), m) {
			tb.Fatalf("error %q does not mention %s", err, m)
		}
	}
}

func TestReadTree(t *testing.T) {
	big := strings.Repeat("x", 600)
	longName := strings.Repeat("a/", 2100) + "f"

	tests := []struct {
		name    string
		input   []byte
		opts    []archive.Option
		want    map[string]string // files and contents on success
		wantErr error
		mention []string // substrings the error must contain
	}{
		{
			name: "nested dirs",
			input: mkTar(t, dir("chart/"), file("chart/Chart.yaml", "name: c"), dir("chart/templates/"),
				file("chart/templates/cm.yaml", "kind: ConfigMap"), file("top", "t")),
			want: map[string]string{"chart/Chart.yaml": "name: c", "chart/templates/cm.yaml": "kind: ConfigMap", "top": "t"},
		},
		{
			name:  "gzip detected by content",
			input: gz(t, mkTar(t, file("a/b/c.txt", "deep"), file("a/d.txt", "d"))),
			want:  map[string]string{"a/b/c.txt": "deep", "a/d.txt": "d"},
		},
		{
			name:  "dot slash prefix and root entry",
			input: mkTar(t, dir("./"), dir("./a/"), file("./a/f", "1"), file("./g", "2")),
			want:  map[string]string{"a/f": "1", "g": "2"},
		},
		{
			name:  "inner dot dot that stays inside is cleaned",
			input: mkTar(t, file("a/../b", "1"), file("c//d/./e", "2")),
			want:  map[string]string{"b": "1", "c/d/e": "2"},
		},
		{
			name:  "empty archive",
			input: mkTar(t),
			want:  map[string]string{},
		},
		{
			name:  "pax global header ignored",
			input: mkTar(t, ent{name: "pax_global_header", typ: tar.TypeXGlobalHeader, pax: map[string]string{"comment": "x"}}, file("f", "1")),
			want:  map[string]string{"f": "1"},
		},
		{
			name:  "duplicate file later wins",
			input: mkTar(t, file("f", "old"), file("f", "new")),
			want:  map[string]string{"f": "new"},
		},
		{
			name:  "long names via pax",
			input: mkTar(t, file(strings.Repeat("n", 300)+"/f", "1")),
			want:  map[string]string{strings.Repeat("n", 300) + "/f": "1"},
		},

		// Paths.
		{name: "traversal", input: mkTar(t, file("../etc/passwd", "x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`archive entry "../etc/passwd": path escapes the archive root: unsafe archive`}},
		{name: "traversal after cleaning", input: mkTar(t, file("a/../../x", "x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"a/../../x"`, "escapes"}},
		{name: "traversal via dot slash", input: mkTar(t, file("./../x", "x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"./../x"`, "escapes"}},
		{name: "bare dot dot dir", input: mkTar(t, dir("../")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"../"`, "escapes"}},
		{name: "absolute path", input: mkTar(t, file("/etc/passwd", "x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"/etc/passwd"`, "absolute"}},
		{name: "windows drive with backslash", input: mkTar(t, file(`C:\Windows\x`, "x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"C:\\Windows\\x"`, "backslash"}},
		{name: "windows drive with slash", input: mkTar(t, file("C:/Windows/x", "x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"C:/Windows/x"`, "absolute"}},
		{name: "backslash traversal", input: mkTar(t, file(`a\..\..\x`, "x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"a\\..\\..\\x"`, "backslash"}},
		{name: "root named as a file", input: mkTar(t, file(".", "x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"."`, "root"}},
		{name: "name too long", input: mkTar(t, file(longName, "x")),
			wantErr: errdef.ErrLimitExceeded, mention: []string{"longer than 4096"}},

		// Links.
		{name: "symlink inside becomes a copy, even before its target",
			input: mkTar(t, symlink("a/link", "../b/target"), file("b/target", "payload")),
			want:  map[string]string{"a/link": "payload", "b/target": "payload"}},
		{name: "symlink chain", input: mkTar(t, symlink("l1", "l2"), symlink("l2", "d/l3"), symlink("d/l3", "../f"), file("f", "end")),
			want: map[string]string{"l1": "end", "l2": "end", "d/l3": "end", "f": "end"}},
		{name: "hardlink inside becomes a copy", input: mkTar(t, file("d/f", "data"), hardlink("x/h", "./d/f")),
			want: map[string]string{"d/f": "data", "x/h": "data"}},
		{name: "hardlink to symlink", input: mkTar(t, file("f", "data"), symlink("d/s", "../f"), hardlink("h", "d/s")),
			want: map[string]string{"f": "data", "d/s": "data", "h": "data"}},
		{name: "symlink escaping relative", input: mkTar(t, symlink("a/link", "../../etc/passwd")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`archive entry "a/link": symlink target "../../etc/passwd" escapes the archive root`}},
		{name: "symlink escaping absolute", input: mkTar(t, symlink("link", "/etc/passwd")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"link"`, `"/etc/passwd"`, "absolute"}},
		{name: "symlink with backslash target", input: mkTar(t, symlink("link", `..\..\x`)),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"link"`, "backslash"}},
		{name: "symlink target too long", input: mkTar(t, symlink("link", longName)),
			wantErr: errdef.ErrLimitExceeded, mention: []string{`archive entry "link"`, "longer than 4096"}},
		{name: "symlink to a directory is refused", input: mkTar(t, dir("d/"), file("d/f", "x"), symlink("link", "d")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"link"`, "is a directory; only links to regular files are supported"}},
		{name: "symlink to an implied directory is refused", input: mkTar(t, file("d/f", "x"), symlink("link", "d")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"link"`, "is a directory"}},
		{name: "symlink to the root is refused", input: mkTar(t, symlink("a/link", "..")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"a/link"`, "is a directory"}},
		{name: "dangling symlink", input: mkTar(t, symlink("link", "missing")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"link"`, `"missing" is not a file in the archive`}},
		{name: "symlink cycle", input: mkTar(t, symlink("a", "b"), symlink("b", "a")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`archive entry "a"`, "cycle"}},
		{name: "self symlink", input: mkTar(t, symlink("d/a", "a")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"d/a"`, "cycle"}},
		{name: "symlink chain too deep", input: func() []byte {
			var es []ent
			for i := range 20 {
				es = append(es, symlink(fmt.Sprintf("l%02d", i), fmt.Sprintf("l%02d", i+1)))
			}
			return mkTar(t, append(es, file("l20", "x"))...)
		}(), wantErr: errdef.ErrLimitExceeded, mention: []string{`"l00"`, "levels of links"}},
		{name: "hardlink escaping", input: mkTar(t, hardlink("h", "../outside")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"h"`, `hardlink target "../outside" escapes`}},
		{name: "hardlink escaping after cleaning", input: mkTar(t, hardlink("h", "a/../../x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"h"`, "escapes"}},
		{name: "hardlink absolute", input: mkTar(t, hardlink("h", "/etc/shadow")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"h"`, "absolute"}},
		{name: "write through a link-named directory", input: mkTar(t, file("f", "x"), symlink("a", "f"), file("a/evil", "x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"a/evil"`, `parent "a" is a file`}},

		// Types.
		{name: "char device", input: mkTar(t, special("dev/null", tar.TypeChar)),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"dev/null"`, "device"}},
		{name: "block device", input: mkTar(t, special("dev/sda", tar.TypeBlock)),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"dev/sda"`, "device"}},
		{name: "fifo", input: mkTar(t, special("pipe", tar.TypeFifo)),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"pipe"`, "FIFO"}},
		{name: "contiguous file type", input: mkTar(t, special("c", tar.TypeCont)),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"c"`, "unsupported entry type"}},
		{name: "unknown type", input: mkTar(t, special("z", 'Z')),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"z"`, "unsupported entry type"}},

		// Shape conflicts.
		{name: "file then dir at same path", input: mkTar(t, file("a", "x"), dir("a/")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"a/"`, "both a file and a directory"}},
		{name: "dir then file at same path", input: mkTar(t, dir("a"), file("a", "x")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"a"`, "both a file and a directory"}},
		{name: "file under a file", input: mkTar(t, file("a", "x"), file("a/b", "y")),
			wantErr: errdef.ErrUnsafeArchive, mention: []string{`"a/b"`, `parent "a" is a file`}},

		// Limits.
		{name: "too many entries", input: mkTar(t, file("1", ""), dir("d"), file("3", "")),
			opts: []archive.Option{archive.WithMaxFiles(2)}, wantErr: errdef.ErrLimitExceeded, mention: []string{`"3"`, "more than 2 entries"}},
		{name: "file count at the limit", input: mkTar(t, file("1", ""), file("2", "")),
			opts: []archive.Option{archive.WithMaxFiles(2)}, want: map[string]string{"1": "", "2": ""}},
		{name: "file over max file size", input: mkTar(t, file("small", "ok"), file("big", big)),
			opts: []archive.Option{archive.WithMaxFileSize(100)}, wantErr: errdef.ErrLimitExceeded, mention: []string{`"big"`, "per-file limit of 100 bytes"}},
		{name: "file at max file size", input: mkTar(t, file("f", big)),
			opts: []archive.Option{archive.WithMaxFileSize(600)}, want: map[string]string{"f": big}},
		{name: "total over max size", input: mkTar(t, file("a", big), file("b", big)),
			opts: []archive.Option{archive.WithMaxSize(1000)}, wantErr: errdef.ErrLimitExceeded, mention: []string{`"b"`, "total size exceeds the limit of 1000 bytes"}},
		{name: "max file size defaults to max size", input: mkTar(t, file("f", big)),
			opts: []archive.Option{archive.WithMaxSize(599)}, wantErr: errdef.ErrLimitExceeded, mention: []string{`"f"`, "599"}},
		{name: "duplicates count against the limit", input: mkTar(t, file("f", big), file("f", big)),
			opts: []archive.Option{archive.WithMaxSize(1000)}, wantErr: errdef.ErrLimitExceeded, mention: []string{`"f"`, "total size"}},
		{name: "link copies count against the limit", input: mkTar(t, file("f", big), symlink("l", "f")),
			opts: []archive.Option{archive.WithMaxSize(1000)}, wantErr: errdef.ErrLimitExceeded, mention: []string{`"l"`, "link copies"}},
		{name: "non-positive options keep defaults", input: mkTar(t, file("f", big)),
			opts: []archive.Option{archive.WithMaxSize(0), archive.WithMaxFiles(-1), archive.WithMaxFileSize(-5)}, want: map[string]string{"f": big}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := archive.ReadTree(bytes.NewReader(tt.input), tt.opts...)
			if tt.wantErr != nil {
				checkErr(t, err, tt.wantErr, tt.mention...)
				if tree != nil {
					t.Fatal("got a tree alongside an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadTree: %v", err)
			}
			got := contents(t, tree)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("files = %q, want %q", got, tt.want)
			}
			var size int64
			for _, c := range tt.want {
				size += int64(len(c))
			}
			if tree.Size() != size {
				t.Fatalf("Size() = %d, want %d", tree.Size(), size)
			}
		})
	}
}

func TestReadTreeDefaultLimits(t *testing.T) {
	// A header declaring more than the default total is refused before any
	// content is read, so the test needs no body.
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: "huge", Typeflag: tar.TypeReg, Size: archive.DefaultMaxSize + 1}); err != nil {
		t.Fatal(err)
	}
	tw.Flush() // reports the missing body; the header is already written
	_, err := archive.ReadTree(bytes.NewReader(b.Bytes()))
	checkErr(t, err, errdef.ErrLimitExceeded, `"huge"`, fmt.Sprint(archive.DefaultMaxSize))

	entries := make([]ent, archive.DefaultMaxFiles+1)
	for i := range entries {
		entries[i] = dir(fmt.Sprintf("d%d", i))
	}
	_, err = archive.ReadTree(bytes.NewReader(mkTar(t, entries[:archive.DefaultMaxFiles]...)))
	if err != nil {
		t.Fatalf("%d entries: %v", archive.DefaultMaxFiles, err)
	}
	_, err = archive.ReadTree(bytes.NewReader(mkTar(t, entries...)))
	checkErr(t, err, errdef.ErrLimitExceeded, fmt.Sprintf("%q", entries[archive.DefaultMaxFiles].name))
}

// zeros is an endless stream of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// bombStream streams a tar (gzipped if compress) of files of fileSize zero
// bytes each through a pipe, so nothing is generated beyond what the reader
// pulls. The returned done reports the writer's final error.
func bombStream(t *testing.T, compress bool, files int, fileSize int64) (*io.PipeReader, <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := func() error {
			var w io.Writer = pw
			var zw *gzip.Writer
			if compress {
				zw = gzip.NewWriter(pw)
				w = zw
			}
			tw := tar.NewWriter(w)
			for i := range files {
				if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("bomb-%d.bin", i), Typeflag: tar.TypeReg, Size: fileSize, Mode: 0o644}); err != nil {
					return err
				}
				if _, err := io.Copy(tw, io.LimitReader(zeros{}, fileSize)); err != nil {
					return err
				}
			}
			if err := tw.Close(); err != nil {
				return err
			}
			if zw != nil {
				return zw.Close()
			}
			return nil
		}()
		pw.CloseWithError(err)
		done <- err
	}()
	return pr, done
}

func TestGzipBomb(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name     string
		compress bool
		files    int
		size     int64
		mention  string
	}{
		// One 64 MiB file of zeros: ~64 KiB gzipped.
		{name: "one huge file", compress: true, files: 1, size: 64 << 20, mention: `"bomb-0.bin"`},
		// Many files each under the limit: only the running total stops them.
		{name: "many small files", compress: true, files: 512, size: 128 << 10, mention: `"bomb-8.bin"`},
		{name: "many small files uncompressed", compress: false, files: 512, size: 128 << 10, mention: `"bomb-8.bin"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr, done := bombStream(t, tt.compress, tt.files, tt.size)
			in := &counting.Reader{R: pr} // the bytes ReadTree pulls from its input

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := archive.ReadTree(in, archive.WithMaxSize(limit))
			runtime.ReadMemStats(&after)
			pr.Close() // stop the generator

			checkErr(t, err, errdef.ErrLimitExceeded, tt.mention)
			if werr := <-done; !errors.Is(werr, io.ErrClosedPipe) {
				t.Fatalf("generator finished (err %v): the whole bomb was read", werr)
			}
			// Input consumed: at most the limit plus headers, tar padding and
			// read-ahead buffers.
			if in.N > limit+64<<10 {
				t.Fatalf("read %d input bytes, want at most ~%d", in.N, limit)
			}
			// Bounded memory: a few times the limit at most, not the bomb size.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Fatalf("allocated %d bytes reading a bomb with a %d byte limit", alloc, limit)
			}
		})
	}
}

// TestReadTreeAllocatesFilesOnce: each file is read into one slice of its
// declared size; growing a buffer (io.ReadAll) allocated about twice the
// file, and held up to twice it at the end.
func TestReadTreeAllocatesFilesOnce(t *testing.T) {
	const size = 8<<20 + 7
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", compress), func(t *testing.T) {
			pr, done := bombStream(t, compress, 1, size)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			tree, err := archive.ReadTree(pr)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if werr := <-done; werr != nil {
				t.Fatal(werr)
			}
			if tree.Size() != size {
				t.Fatalf("tree size %d, want %d", tree.Size(), size)
			}
			// The file, plus buffers (the generator's gzip writer takes
			// most of the slack); io.ReadAll took about 2.5 times the file.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size+2<<20 {
				t.Fatalf("reading a %d byte file allocated %d bytes", size, alloc)
			}
		})
	}
}

func TestCorruptInput(t *testing.T) {
	valid := mkTar(t, file("chart/values.yaml", strings.Repeat("v", 3000)))
	validGz := gz(t, valid)
	badCRC := bytes.Clone(validGz)
	badCRC[len(badCRC)-8] ^= 0xff // first CRC-32 byte of the gzip trailer

	tests := []struct {
		name    string
		input   []byte
		wantErr error
		mention string
	}{
		{name: "empty input", input: nil, wantErr: io.ErrUnexpectedEOF, mention: "empty input"},
		{name: "not a tar, short", input: []byte("this is not an archive\n"), wantErr: io.ErrUnexpectedEOF, mention: "reading archive"},
		{name: "not a tar, long", input: bytes.Repeat([]byte("not a tar "), 200), wantErr: tar.ErrHeader, mention: "reading archive"},
		{name: "gzip of not a tar", input: gz(t, bytes.Repeat([]byte("not a tar "), 200)), wantErr: tar.ErrHeader, mention: "reading archive"},
		{name: "truncated tar mid-file", input: valid[:1500], wantErr: io.ErrUnexpectedEOF, mention: `archive entry "chart/values.yaml": reading contents`},
		{name: "truncated gzip", input: validGz[:len(validGz)/2], wantErr: io.ErrUnexpectedEOF, mention: "reading archive"},
		{name: "gzip missing trailer", input: validGz[:len(validGz)-8], wantErr: io.ErrUnexpectedEOF, mention: "gzip"},
		{name: "gzip bad checksum", input: badCRC, wantErr: gzip.ErrChecksum, mention: "gzip"},
		{name: "gzip magic then garbage", input: append([]byte{0x1f, 0x8b}, bytes.Repeat([]byte("x"), 32)...), wantErr: gzip.ErrHeader, mention: "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := archive.ReadTree(bytes.NewReader(tt.input))
			checkErr(t, err, tt.wantErr, tt.mention)
			if tree != nil {
				t.Fatal("got a tree alongside an error")
			}
		})
	}
}

func TestIsGzip(t *testing.T) {
	for _, tt := range []struct {
		in   []byte
		want bool
	}{
		{gz(t, []byte("x")), true},
		{[]byte{0x1f, 0x8b}, true},
		{[]byte{0x1f}, false},
		{nil, false},
		{mkTar(t, file("a.tgz", "named like gzip, is not")), false},
	} {
		if got := archive.IsGzip(tt.in); got != tt.want {
			t.Errorf("IsGzip(% x...) = %v, want %v", tt.in[:min(len(tt.in), 4)], got, tt.want)
		}
	}
}

func TestReadFile(t *testing.T) {
	tree, err := archive.ReadTree(bytes.NewReader(mkTar(t, file("a/f", "data"))))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"missing", "a", "./a/f", "/a/f"} {
		_, err := tree.ReadFile(name)
		checkErr(t, err, errdef.ErrNotFound, fmt.Sprintf("%q", name))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ReadFile(%q) error %v does not wrap fs.ErrNotExist", name, err)
		}
	}

	// The returned slice is the caller's: changing it must not change the tree.
	data, _ := tree.ReadFile("a/f")
	data[0] = 'X'
	files := tree.Files()
	files[0] = "changed"
	if again, _ := tree.ReadFile("a/f"); string(again) != "data" {
		t.Fatalf("tree mutated through ReadFile result: %q", again)
	}
	if got := tree.Files(); !reflect.DeepEqual(got, []string{"a/f"}) {
		t.Fatalf("tree mutated through Files result: %q", got)
	}
}

func fsTree(t *testing.T) *archive.Tree {
	t.Helper()
	tree, err := archive.ReadTree(bytes.NewReader(gz(t, mkTar(t,
		dir("chart/"), file("chart/Chart.yaml", "apiVersion: v2"),
		file("chart/templates/deploy.yaml", "kind: Deployment"),
		file("chart/templates/svc.yaml", "kind: Service"),
		dir("empty/"),
		symlink("chart/values.yaml", "../base/values.yaml"), file("base/values.yaml", "replicas: 1"),
		file("README.md", "readme"),
	))))
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func TestFS(t *testing.T) {
	tree := fsTree(t)
	fsys := tree.FS()
	if err := fstest.TestFS(fsys, tree.Files()...); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(fsys, "empty", "chart/templates"); err != nil {
		t.Fatal(err)
	}

	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, fmt.Sprintf("%s:%v", e.Name(), e.IsDir()))
	}
	if want := []string{"README.md:false", "base:true", "chart:true", "empty:true"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("ReadDir(.) = %q, want %q", names, want)
	}
	if data, err := fs.ReadFile(fsys, "chart/values.yaml"); err != nil || string(data) != "replicas: 1" {
		t.Fatalf("link copy via FS = %q, %v", data, err)
	}
	for _, name := range []string{"missing", "chart/missing"} {
		if _, err := fs.Stat(fsys, name); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat(%q) = %v, want fs.ErrNotExist", name, err)
		}
	}
	for _, name := range []string{"../x", "/chart", "chart/", "./chart"} {
		if _, err := fsys.Open(name); !errors.Is(err, fs.ErrInvalid) {
			t.Fatalf("Open(%q) = %v, want fs.ErrInvalid", name, err)
		}
	}
	if _, err := fs.ReadFile(fsys, "chart"); err == nil {
		t.Fatal("ReadFile of a directory succeeded")
	}
	if _, err := fs.ReadDir(fsys, "README.md"); err == nil {
		t.Fatal("ReadDir of a file succeeded")
	}
}

func TestWriteTo(t *testing.T) {
	tree := fsTree(t)
	dir := filepath.Join(t.TempDir(), "out") // created by WriteTo
	if err := tree.WriteTo(dir); err != nil {
		t.Fatal(err)
	}

	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if info.Mode().Perm() != 0o755 {
				t.Errorf("dir %s mode %v, want 0755", rel, info.Mode().Perm())
			}
		case d.Type().IsRegular():
			if info.Mode().Perm() != 0o644 {
				t.Errorf("file %s mode %v, want 0644", rel, info.Mode().Perm())
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[filepath.ToSlash(rel)] = string(data)
		default:
			t.Errorf("%s: unexpected type %v (links must be copies)", rel, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := contents(t, tree); !reflect.DeepEqual(got, want) {
		t.Fatalf("written files = %q, want %q", got, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, "empty")); err != nil || !fi.IsDir() {
		t.Fatalf("explicit empty dir not written: %v", err)
	}

	// Round trip: reading the written tree back as a tar gives the same files.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	back, err := archive.ReadTree(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(contents(t, back), contents(t, tree)) {
		t.Fatalf("round trip = %q, want %q", contents(t, back), contents(t, tree))
	}
}

// A symlink planted in the target directory beforehand must not redirect a
// write outside it.
func TestWriteToPlantedSymlink(t *testing.T) {
	tree, err := archive.ReadTree(bytes.NewReader(mkTar(t, file("a/evil", "x"))))
	if err != nil {
		t.Fatal(err)
	}
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "a")); err != nil {
		t.Skip("symlinks unsupported:", err)
	}
	err = tree.WriteTo(dir)
	if err == nil {
		t.Fatal("WriteTo followed a symlink out of the target directory")
	}
	if !strings.Contains(err.Error(), `"a`) {
		t.Fatalf("error %q does not name the path", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote outside the target: %v", entries)
	}
}

func TestSecureJoin(t *testing.T) {
	root := filepath.FromSlash("/srv/root")
	tests := []struct {
		name string
		want string // "" means an error is expected
	}{
		{"a/b", filepath.Join(root, "a", "b")},
		{"", root},
		{".", root},
		{"a/../b", filepath.Join(root, "b")},
		{"a/./b/", filepath.Join(root, "a", "b")},
		{"..a/b", filepath.Join(root, "..a", "b")}, // a name starting with dots is not a parent
		{"..", ""},
		{"../x", ""},
		{"a/../../x", ""},
		{"a/b/../../../x", ""},
		{"/etc/passwd", ""},
		{"C:/x", ""},
		{`C:\x`, ""},
		{`a\..\..\x`, ""},
		{"a\x00b", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := archive.SecureJoin(root, tt.name)
			if tt.want == "" {
				checkErr(t, err, errdef.ErrUnsafeArchive, fmt.Sprintf("%q", tt.name))
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("SecureJoin(%q, %q) = %q, %v; want %q", root, tt.name, got, err, tt.want)
			}
		})
	}

	// A relative root works too.
	if got, err := archive.SecureJoin(".", "a/b"); err != nil || got != filepath.Join("a", "b") {
		t.Fatalf("SecureJoin(., a/b) = %q, %v", got, err)
	}
}
