package cmpservice

import (
	"os"
	"path/filepath"
	"sync"
)

// streamDirs hands out the empty directories streams are unpacked into and
// takes them back emptied, keeping up to max of them: making and removing
// a directory per request was ~0.9 ms of a warm generation's 4.4 ms in the
// render server on this project's bench machine, emptying one ~0.03 ms. A
// directory goes back only once it is verified empty, so that no stream
// ever sees another's files.
//
// A directory is emptied after its request has ended (release): removing
// what a stream unpacked costs about as much as unpacking it, which the
// repo-server would otherwise wait for. Both depend on the file system's
// state: values files two directories deep unpack in ~0.25 ms on a fresh
// ext4, and took up to 1 ms on the bench machine's (ext4 without a journal)
// right after a bench run, its inode allocation skipping inodes freed
// minutes before (ext4's recently_deleted, most of that time in a profile).
type streamDirs struct {
	parent string
	max    int

	mu   sync.Mutex
	free []string

	emptying sync.WaitGroup // releases not yet done
}

// get returns an empty directory of its own for one stream.
func (d *streamDirs) get() (string, error) {
	d.mu.Lock()
	if n := len(d.free); n > 0 {
		dir := d.free[n-1]
		d.free = d.free[:n-1]
		d.mu.Unlock()
		return dir, nil
	}
	d.mu.Unlock()
	return os.MkdirTemp(d.parent, "app-")
}

// release puts dir back in the background once done is closed (the
// request has ended: its answer and status are sent); emptying it while
// the answer was sent delayed the answer (the emptying's system calls held
// one of the sidecar's two processors). wait waits for every release.
func (d *streamDirs) release(dir string, done <-chan struct{}) {
	d.emptying.Go(func() {
		<-done
		d.put(dir)
	})
}

// wait returns once every directory released is emptied (or removed).
func (d *streamDirs) wait() { d.emptying.Wait() }

// put empties dir and keeps it for a later stream, or removes it when it
// cannot be emptied or enough are kept.
func (d *streamDirs) put(dir string) {
	if !emptied(dir) {
		_ = os.RemoveAll(dir)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.free) >= d.max {
		_ = os.Remove(dir)
		return
	}
	d.free = append(d.free, dir)
}

// emptied removes what dir holds and reports whether it is then empty and
// still a directory of this process's only (mode 0700, as MkdirTemp made
// it): what a stream unpacked is regular files, directories and links
// below it, which RemoveAll takes without following a link.
func emptied(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if os.RemoveAll(filepath.Join(dir, e.Name())) != nil {
			return false
		}
	}
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return false
	}
	names, err := f.Readdirnames(1)
	return len(names) == 0 && err != nil // io.EOF: nothing left
}
