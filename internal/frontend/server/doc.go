// Package server is the sidecar's long-lived render mode: a server on a unix
// socket that runs the plugin's generate and parameters commands in one warm
// process, and the client the thin argocd-ocm-client binary uses to reach it.
//
// Design notes: docs/design.md, section internal/frontend/server.
package server
