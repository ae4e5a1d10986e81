// Package archive extracts tar and gzip-compressed tar archives into memory,
// treating every archive as hostile.
//
// Archives come from untrusted OCI registries, so ReadTree refuses anything that
// could escape the extraction root or surprise a later renderer: absolute or
// escaping paths, backslashes, NUL bytes, device files, FIFOs, links whose
// targets leave the tree or are not regular files, and paths that are both a
// file and a directory. Refusals wrap errdef.ErrUnsafeArchive; inputs over a
// configured size or count wrap errdef.ErrLimitExceeded. Limits are enforced
// while streaming, so a decompression bomb is refused after reading at most
// the limit plus one byte.
//
// Links are never materialised as links: a symlink or hardlink that resolves
// to a regular file inside the archive becomes a copy of that file, so neither
// Tree.FS nor Tree.WriteTo ever exposes a link to a consumer.
package archive
