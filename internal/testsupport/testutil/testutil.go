// Package testutil holds small helpers that tests of several packages
// share: reading decoded JSON by path, a buffer goroutines write while
// the test reads it, and the CPU time a piece of work used.
package testutil

import (
	"bytes"
	"sync"
)

// Dig walks decoded JSON (map[string]any and []any) along path, a key
// (string) or an index (int) a step; nil where the path leads nowhere.
func Dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k < 0 || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// SyncBuffer is a bytes.Buffer safe for concurrent use: a log or stderr
// that goroutines (a server, a worker) write while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
