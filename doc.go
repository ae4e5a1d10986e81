// Package argocdocm renders OCM component versions as the argocd-ocm-plugin
// sidecar does for Argo CD: a Request in, a Result (component, version,
// verified signatures, objects) out, each stage once and in order: resolve
// (and verify), plan, fetch and verify, render, finish. Build renderers with
// an Engine, which owns what outlives one render (docs/api.md).
//
// Every error it returns is an *errdef.Error naming the Application,
// component, version and resource, so the caller can print it as one line.
package argocdocm
