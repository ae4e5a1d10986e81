// Package cmpservice serves Argo CD's config management plugin gRPC
// contract, ConfigManagementPluginService (argo-cd cmpserver/plugin/
// plugin.proto), from the render server's own process: the repo-server
// streams the Application's files to it and gets the manifests back, with no
// argocd-cmp-server and no process started per generation.
//
// It stands in for argocd-cmp-server running this plugin's plugin.yaml (no
// discovery, no git credentials, generate and a dynamic parameters
// announcement): the answers are those argocd-cmp-server gives, and the
// manifests are the generate command's, which the repo-server splits into
// objects as it splits argocd-cmp-server's. The repository stream is
// confined and bounded (Limits): only the Application's directory is
// unpacked, into a directory of its own, removed after the generation.
//
// The messages are encoded by hand with protowire (wire.go): the contract is
// four methods and eight small messages, and Argo CD's generated package
// cannot be linked here (it pins other Kubernetes libraries).
package cmpservice
