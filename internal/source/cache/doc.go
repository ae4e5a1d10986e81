// Package cache is the plugin's content-addressed blob cache on disk, shared by
// every process of the plugin on one machine (Argo CD runs many generations in
// parallel in one sidecar).
//
// # Layout
//
//	<dir>/blobs/<alg>/<hex>   content, named by its digest (sha256, sha512)
//	<dir>/tmp/<alg>-<hex>.*   downloads in progress (renamed into blobs/ when verified)
//	<dir>/locks/<alg>/<hex>   lock files (flock), one per digest ever fetched
//	<dir>/gc.lock             taken by the process that evicts
//	<dir>/derived/<kind>/<alg>/<hex>   "<digest> <size>" of content derived from
//	                          the blob <alg>:<hex> (e.g. a tgz's unpacked tar),
//	                          which is stored in blobs/ like any entry (Derived)
//	<dir>/vouches/<xx>/<hex>  empty files: a source served a digest's content to
//	                          a credential, verified (Vouch, FetchVouched); <hex>
//	                          is the SHA-256 of the three, <xx> its first byte,
//	                          at most 256 files a directory
//
// <dir> is DefaultDir(): $ARGOCD_OCM_CACHE_DIR, else
// $XDG_CACHE_HOME/argocd-ocm-plugin, else ~/.cache/argocd-ocm-plugin.
//
// # Guarantees
//
//   - Bytes handed out always match their digest: an entry is hashed on every
//     read, and a corrupted or truncated entry is deleted and fetched again.
//   - Writes are atomic: content goes to a temporary file, is verified while
//     it is written, synced and renamed into place. A download killed half-way
//     leaves only a temporary file, which the next process that takes the
//     digest's lock deletes.
//   - N concurrent requests for one digest, in one process or many, download
//     it once: goroutines wait on an in-process lock, processes on an flock of
//     the digest's lock file. Waiting ends with the caller's context, or after
//     WithLockTimeout (the waiter then downloads without caching).
//   - The cache stays under WithMaxSize (default DefaultMaxSize): after an
//     insert pushes it over, the least recently used entries (by modification
//     time, which a read refreshes) are deleted down to 90 % of the cap.
//   - A cache that cannot be written (read-only, full, missing permissions)
//     degrades to no cache with one warning; fetching still works.
//
// A digest is no secret, so a caller that must not be served another
// tenant's content because it names a digest uses FetchVouched: the cache
// answers only for a (credential, source, digest) that downloaded and
// verified the content before; otherwise the source is read and verified
// all the same.
//
// Memo is the other half of "ask the registry at most once": an in-process
// memo (tag → digest, tag lists) that lives as long as one generation.
package cache
