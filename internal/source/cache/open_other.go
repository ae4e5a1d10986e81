//go:build !unix

package cache

import "os"

// openRegular opens the cache file p with flag and returns it only when it
// is a regular file (not a symbolic link), else errNotRegular.
func openRegular(p string, flag int, perm os.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	f, err := os.OpenFile(p, flag, perm)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, errNotRegular
	}
	return f, nil
}
