// Package counting counts the bytes that pass through a reader or a writer.
package counting

import "io"

// Reader reads from R and counts the bytes read in N.
type Reader struct {
	R io.Reader
	N int64
}

func (c *Reader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}

// Writer writes to W and counts the bytes written in N.
type Writer struct {
	W io.Writer
	N int64
}

func (c *Writer) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}
