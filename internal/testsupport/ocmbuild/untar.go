package ocmbuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
)

// Untar reads a (gzipped) tar of trusted, self-made test content into a map
// of regular files (a leading "./" dropped). Untrusted input goes through
// internal/format/archive instead.
func Untar(b []byte) (map[string][]byte, error) { return untarAll(b) }

// untarAll reads a (gzipped) tar of trusted, self-made content.
func untarAll(b []byte) (map[string][]byte, error) {
	var r io.Reader = bytes.NewReader(b)
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		r = zr
	}
	tr := tar.NewReader(r)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		c, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(h.Name, "./")] = c
	}
}
