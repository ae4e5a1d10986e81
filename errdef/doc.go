// Package errdef holds the sentinel errors of argocd-ocm-plugin and the one error
// type that every stage of the pipeline returns to its caller.
//
// Sentinels classify a failure (errors.Is works through any wrapping); Error adds
// the context a user needs to act on it: which Application, component, version
// and resource failed. The CLI prints Error as a single line on stderr, which is
// exactly what Argo CD shows in its UI.
package errdef
