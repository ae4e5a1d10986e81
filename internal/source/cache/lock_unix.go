//go:build unix

package cache

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// fileLock is an exclusive flock on an open file. flock locks belong to the
// open file description, so two opens in one process exclude each other too,
// and the kernel releases the lock when the holder dies.
type fileLock struct{ f *os.File }

// lockFile takes an exclusive lock on path, creating it, polling until ctx
// ends, timeout passes or stalled says the holder makes no progress; the
// last two return errLockTimeout.
func lockFile(ctx context.Context, path string, timeout time.Duration, stalled func(time.Time) bool) (*fileLock, error) {
	f, err := openLock(path)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &fileLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, err
		}
		if now := time.Now(); now.After(deadline) || stalled(now) {
			f.Close()
			return nil, errLockTimeout
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}

// tryLockFile takes the lock only if it is free (ok=false otherwise).
func tryLockFile(path string) (*fileLock, bool, error) {
	f, err := openLock(path)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return &fileLock{f: f}, true, nil
}

// openLock opens the lock file path, creating it. What is there and is not
// a regular file (a FIFO or device would block the open, a symbolic link
// lead elsewhere) is removed and the lock file created anew.
func openLock(path string) (*os.File, error) {
	f, err := openRegular(path, os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, errNotRegular) {
		os.RemoveAll(path)
		f, err = openRegular(path, os.O_RDWR|os.O_CREATE, 0o644)
	}
	return f, err
}

func (l *fileLock) unlock() {
	if l == nil {
		return
	}
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}
