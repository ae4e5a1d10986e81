// Package cmp is the Argo CD config management plugin contract: it builds a
// pipeline request from the environment Argo CD gives a plugin's generate
// command (see shared/docs/argocd-cmp.md).
//
// Inputs are read from plugin parameters (ARGOCD_APP_PARAMETERS, what the UI
// edits) first and from ARGOCD_ENV_<NAME> (spec.source.plugin.env) second.
// Only ARGOCD_ENV_-prefixed names are read from the Application: unprefixed
// variables belong to the sidecar and must not be settable by an Application.
package cmp
