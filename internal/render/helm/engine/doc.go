// Package engine is Helm's template engine (helm.sh/helm/v4 v4.3.2,
// pkg/engine: engine.go, funcs.go and files.go, Apache License 2.0, The Helm
// Authors) as helm template runs it, with one addition: the parsed templates
// of a chart can be kept between renders (Templates), which Helm's engine
// does not allow — it parses every template of a chart in every render, and
// its function map, its Files type and its error formatting, which a render
// from kept parse trees needs exactly, are not exported.
//
// Changes to Helm's files are marked "argocd-ocm-plugin:": the engine of
// helm template only (not strict, not linting, no DNS lookups, no cluster:
// lookup returns an empty map, no custom functions), render adds the kept
// parse trees of a template instead of parsing it when the Engine has
// Templates, and the functions that are the same in every render are
// registered once per process on an empty set each render clones (only
// include and tpl are bound per render, see initFunMap). funcs.go and
// files.go are unchanged.
//
// Without Templates a render is Helm's, step for step; with them, the same
// set of templates is built (see Templates). TestSameAsHelm renders real and
// hostile charts with both engines and compares outputs and errors, and
// TestCopiedFromHelm fails when the Helm version in go.mod is not the one
// these files were copied from: a Helm upgrade must bring its engine's
// changes here.
package engine
