// Package hooks places rendered objects in Argo CD's sync: sync waves and
// resource hooks, written as the annotations Argo CD reads
// (argocd.argoproj.io/sync-wave, argocd.argoproj.io/hook,
// argocd.argoproj.io/hook-delete-policy).
//
//   - ArgoHooks, Phases and DeletionHooks read an object the way Argo CD does
//     (gitops-engine's pkg/sync/hook, pkg/sync/hook/helm and
//     pkg/sync/syncwaves, and Argo CD's controller/hook.go), Helm hooks
//     included. They change nothing; reports and tests use them.
//   - Apply writes the placement a deployment definition asks for: a wave
//     and/or a hook for all objects of a render, which never overwrites an
//     annotation the chart or kustomization set itself, and per-object rules,
//     which do.
//   - ApplyDefaults gives Namespaces and CustomResourceDefinitions without a
//     wave of their own a wave before every other wave, when (and only when)
//     the output uses sync waves at all.
//
// Everything is a pure function of its input: same objects in, same
// annotations out.
package hooks
