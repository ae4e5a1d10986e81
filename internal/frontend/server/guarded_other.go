//go:build !unix

package server

import "errors"

// LimitOwnMemory: no address-space limit here (see guarded.go).
func LimitOwnMemory(int, int64) (int64, error) { return 0, errors.ErrUnsupported }

// OutOfMemory: see guarded.go.
func OutOfMemory([]byte) bool { return false }
