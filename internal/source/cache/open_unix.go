//go:build unix

package cache

import (
	"errors"
	"os"
	"syscall"
)

// openRegular opens the cache file p with flag (os.O_RDONLY for an entry,
// os.O_RDWR|os.O_CREATE for a lock) and returns it only when it is a
// regular file, else errNotRegular. Anyone who can write the cache
// directory can put a FIFO or a device where an entry was, and a plain open
// of those blocks until the deadline: the open never blocks (O_NONBLOCK),
// never follows a symbolic link (O_NOFOLLOW), and the file it returns reads
// in blocking mode like any other.
func openRegular(p string, flag int, perm os.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, flag|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EMLINK), // a symbolic link (EMLINK on FreeBSD)
		errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.EOPNOTSUPP), // a socket
		errors.Is(err, syscall.EISDIR): // a directory opened for writing
		return nil, errNotRegular
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, errNotRegular
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}
