package generator

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// MinTokenLen is the shortest token accepted: a guessable token would make
// the listing (and the registry credentials behind it) everyone's.
const MinTokenLen = 16

// TokenFile reads the token from a file (a mounted Secret) and reads it
// again when the file changes: Kubernetes replaces a Secret volume's files
// atomically (a symlink swap), so a rotated token is in force within the
// kubelet's sync period without a restart. The file is checked (one stat)
// at most once per CheckInterval; a file that becomes unreadable, empty or
// too short refuses every request until it is fixed, it never falls back to
// an older token.
type TokenFile struct {
	Path string
	// CheckInterval between stats (default 1s).
	CheckInterval time.Duration

	mu      sync.Mutex
	checked time.Time
	stat    os.FileInfo
	token   []byte
	err     error
}

// Load reads the file now; use it at start so a missing token fails early.
func (t *TokenFile) Load() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reload(time.Now())
	return t.err
}

// Token implements TokenSource.
func (t *TokenFile) Token() ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	iv := t.CheckInterval
	if iv <= 0 {
		iv = time.Second
	}
	if now.Sub(t.checked) >= iv {
		fi, err := os.Stat(t.Path)
		t.checked = now
		if err != nil || t.stat == nil || !os.SameFile(fi, t.stat) || !fi.ModTime().Equal(t.stat.ModTime()) || fi.Size() != t.stat.Size() {
			t.reload(now)
		}
	}
	return t.token, t.err
}

// reload reads the file; t.mu is held. Errors never hold the content.
func (t *TokenFile) reload(now time.Time) {
	t.checked = now
	fi, err := os.Stat(t.Path)
	if err != nil {
		t.stat, t.token, t.err = nil, nil, fmt.Errorf("%w: token file %s: %v", errdef.ErrInvalidInput, t.Path, err)
		return
	}
	b, err := os.ReadFile(t.Path)
	if err != nil {
		t.stat, t.token, t.err = nil, nil, fmt.Errorf("%w: token file %s: %v", errdef.ErrInvalidInput, t.Path, err)
		return
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinTokenLen {
		t.stat, t.token, t.err = fi, nil, fmt.Errorf("%w: token file %s holds %d bytes, fewer than %d", errdef.ErrInvalidInput, t.Path, len(b), MinTokenLen)
		return
	}
	t.stat, t.token, t.err = fi, b, nil
}
