package cache

import (
	"errors"
	"io"
	"os"
)

// errNotRegular: a cache path holds something other than a regular file (a
// FIFO, device, socket, directory or symbolic link). It is a miss, and what
// is there is removed so that the entry can be stored again.
var errNotRegular = errors.New("not a regular file")

// readSmall reads a small cache file (a derived link, a hint) of at most
// limit bytes; more is an error. What is not a regular file is removed.
func readSmall(p string, limit int) ([]byte, error) {
	f, err := openRegular(p, os.O_RDONLY, 0)
	if errors.Is(err, errNotRegular) {
		os.RemoveAll(p) // does not follow a link; a planted directory goes with what it holds
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err == nil && len(b) > limit {
		err = errors.New("cache file too large")
	}
	return b, err
}
