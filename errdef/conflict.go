package errdef

import "errors"

// ErrConflict: the target already holds different content under a name
// (a tag naming another manifest, a component version with another
// descriptor); nothing is overwritten.
var ErrConflict = errors.New("conflict")
