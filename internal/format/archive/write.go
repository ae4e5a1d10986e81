package archive

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"time"
)

// FixedTime is the modification time of every entry a Writer writes, and
// of the gzip stream around it, as the OCM CLI writes them: the same
// content always gives the same bytes (and digest).
var FixedTime = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)

// Writer writes a tar deterministically, the reader's counterpart: entries
// in the order they are added, regular files of mode 0644 (WithFileMode),
// directories 0755, no owners, FixedTime, PAX headers (WithUSTAR).
type Writer struct {
	tw     *tar.Writer
	zw     *gzip.Writer
	format tar.Format
	mode   int64
}

// WriteOption configures NewWriter.
type WriteOption func(*Writer)

// WithGzip gzips the tar.
func WithGzip() WriteOption {
	return func(w *Writer) { w.zw = gzip.NewWriter(nil) }
}

// WithUSTAR writes USTAR headers instead of PAX (the OCM CLI's descriptor
// layer); a name or size USTAR cannot hold is an error.
func WithUSTAR() WriteOption { return func(w *Writer) { w.format = tar.FormatUSTAR } }

// WithFileMode gives regular files mode instead of 0644.
func WithFileMode(mode int64) WriteOption { return func(w *Writer) { w.mode = mode } }

// NewWriter writes a tar to out; Close finishes it.
func NewWriter(out io.Writer, opts ...WriteOption) *Writer {
	w := &Writer{format: tar.FormatPAX, mode: 0o644}
	for _, o := range opts {
		o(w)
	}
	if w.zw != nil {
		w.zw.Reset(out)
		w.zw.ModTime = FixedTime
		out = w.zw
	}
	w.tw = tar.NewWriter(out)
	return w
}

// File adds the regular file name of size bytes, read from r.
func (w *Writer) File(name string, size int64, r io.Reader) error {
	if err := w.tw.WriteHeader(&tar.Header{Name: name, Mode: w.mode, Size: size, ModTime: FixedTime, Typeflag: tar.TypeReg, Format: w.format}); err != nil {
		return err
	}
	_, err := io.Copy(w.tw, r)
	return err
}

// Dir adds the directory name (with a trailing slash, as tar writes them).
func (w *Writer) Dir(name string) error {
	return w.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, ModTime: FixedTime, Typeflag: tar.TypeDir, Format: w.format})
}

// Close writes the end of the tar (and of the gzip stream). It does not
// close the underlying writer.
func (w *Writer) Close() error {
	if err := w.tw.Close(); err != nil {
		return err
	}
	if w.zw != nil {
		return w.zw.Close()
	}
	return nil
}
