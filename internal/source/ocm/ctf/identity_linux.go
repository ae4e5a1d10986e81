//go:build linux

package ctf

import (
	"os"
	"syscall"
	"time"
)

// identity is fi's device, inode, size and modification and change times.
func identity(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), size: fi.Size(), mtime: fi.ModTime(),
		ctime: time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))}, true
}
