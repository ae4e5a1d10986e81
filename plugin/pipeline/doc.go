// Package pipeline is the one path from a request to manifests: resolve the
// component version, read only the resources to render (verified), render them
// (Helm, kustomize or plain manifests) and return the objects in a stable order.
// The CLI's `render` (people) and `generate` (Argo CD) are two front ends of it.
//
// Every error it returns is an *errdef.Error naming the Application, component,
// version and resource, so the caller can print it as one line.
package pipeline
