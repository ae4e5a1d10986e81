// Package explain is the report behind `render --explain`: the definition
// a render used, the instance parameters, every value with the layers that
// set it (Origin, Leaf), what each CEL expression evaluated to, the patches
// and jobs, what automatic localisation did and the output's Argo CD sync
// order, and the text written for people (Report.WriteText).
//
// Package config fills a Report while it plans and renders; this package
// holds only the report's data and its writer, so it imports nothing of
// config.
package explain
