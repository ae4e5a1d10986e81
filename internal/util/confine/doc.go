// Package confine opens the files an Argo CD Application names (its
// repository, value files, deployment definition and platform configs) inside
// the Application's directory, and nowhere else.
//
// The root is the directory argocd-cmp-server runs generate in: the
// Application's path (spec.source.path) inside the repository checkout it
// unpacked for this one request (the render server receives the same
// directory as the client's working directory). Files elsewhere in the
// checkout, other requests' checkouts, the sidecar's own files (its docker
// config, service account token, cache) and /proc or /dev are outside it.
//
// Guarantees of a Root:
//   - names are resolved by the kernel beneath the root (os.Root): "..",
//     absolute names and symbolic links (absolute, escaping, chained) that
//     leave it are refused, also when they only leave it on the way;
//   - only regular files and directories are opened; FIFOs, sockets and
//     devices are refused after a stat through the root and before any open,
//     and every open is non-blocking and re-checked on the opened handle, so a
//     file swapped for a FIFO or a symbolic link in between is refused too;
//   - a refusal has one shape, whatever the outside target is or whether it
//     exists: `repository "../x": not a file or directory inside the
//     Application's directory`; only a name that stays inside and is missing
//     says so (that tells the tenant nothing it cannot see in its own git);
//   - quoted names are capped (MaxQuoted bytes).
//
// Callers read through the returned handles (*os.File, *os.Root), never by
// path again. The CLI's render command, for people, does not use this
// package: it reads any path its user gives it.
package confine
