// Package ctf reads OCM's offline forms: the Common Transport Format (CTF) as a
// directory, a tar or a tgz, and the legacy component archive in the same three
// forms. The form is detected by content, never by file name.
//
// Design notes: docs/design.md, section internal/source/ocm/ctf.
package ctf
