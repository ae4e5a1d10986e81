// Package cache is the plugin's content-addressed blob cache on disk, shared by
// every process of the plugin on one machine (Argo CD runs many generations in
// parallel in one sidecar).
//
// Design notes: docs/design.md, section internal/source/cache.
package cache
