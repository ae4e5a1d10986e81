// Package hooks places rendered objects in Argo CD's sync: sync waves and
// resource hooks, written as the annotations Argo CD reads
// (argocd.argoproj.io/sync-wave, argocd.argoproj.io/hook,
// argocd.argoproj.io/hook-delete-policy).
//
// Design notes: docs/design.md, section internal/finish/hooks.
package hooks
