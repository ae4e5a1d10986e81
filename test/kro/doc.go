// Package kro is the conformance suite of the plugin's RGD renderer against
// kro itself: kro's controller, built from the kro module version the
// plugin links (go.mod here pins it with kro's own Kubernetes libraries),
// runs against a real kube-apiserver; each case applies an RGD and an
// instance, and the objects kro creates must equal what
// `argocd-ocm-plugin render --definition RGD` renders for the same
// instance spec. Cases are RGDs whose result needs no cluster state: kro's
// own examples, OCM's, and RGDs of this directory that use every CEL
// library, includeWhen, readyWhen, forEach with several iterators, nested
// schema.types, defaults and markers.
//
// Run it with `make kro-conformance` (root; it builds kube-apiserver and
// kro's controller); without them the suite skips, saying so.
package kro
