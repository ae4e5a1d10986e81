// Package ctf reads OCM's offline forms: the Common Transport Format (CTF) as a
// directory, a tar or a tgz, and the legacy component archive in the same three
// forms. The form is detected by content, never by file name.
//
// A tgz is decompressed once into a private temporary file (bounded by
// WithMaxSize and WithContext) and indexed; blobs are then read by offset, so a
// large bundle is never held in memory. With an Unpacker and a blob cache
// (WithUnpacker, WithCache) the tar is kept in the cache instead, unpacked at
// most once per content digest, and a long-lived Unpacker remembers archives
// and indexes between opens. Every blob is verified against its digest as it
// is read.
//
// It also writes CTFs, the one place that does: a Writer adds verified blobs
// (written beside their place, renamed in) and tags (the index rewritten
// atomically) to a directory; Pack makes a tar or tgz of a directory and
// Extract unpacks one to add to it; EncodeIndex and Files give the index and
// files of a CTF built in memory.
package ctf
