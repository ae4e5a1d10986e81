// Package overlay is the kustomize overlay a render builds over a
// directoryTree's kustomization: the definition's kustomize field (Spec,
// checked and decoded once its ${…} are evaluated), the images field that
// localises the tree's images before rendering (Images), the join with
// what the planner derives (Join) and the text --explain shows (Text).
//
// Package config decides when a render gets an overlay and evaluates its
// expressions; this package imports nothing of config.
package overlay
