//go:build !unix

package cache

import (
	"context"
	"time"
)

// Without flock, only the in-process lock deduplicates downloads; writes are
// still atomic (temp file + rename), so concurrent processes at worst
// download a blob twice.
type fileLock struct{}

func lockFile(context.Context, string, time.Duration, func(time.Time) bool) (*fileLock, error) {
	return &fileLock{}, nil
}
func tryLockFile(string) (*fileLock, bool, error) { return &fileLock{}, true, nil }
func (l *fileLock) unlock()                       {}
