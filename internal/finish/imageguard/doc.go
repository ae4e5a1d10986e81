// Package imageguard refuses rendered output that would run an image its
// component version does not declare: the image origin guard.
//
// Design notes: docs/design.md, section internal/finish/imageguard.
package imageguard
