package config

import "github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/config/explain"

// The report behind `render --explain` and the provenance of values live in
// package explain; these names keep the planner's API as it was.
type (
	Report       = explain.Report
	RenderReport = explain.RenderReport
	PatchReport  = explain.PatchReport
	JobReport    = explain.JobReport
	ParamValue   = explain.ParamValue
	Leaf         = explain.Leaf
	Origin       = explain.Origin
)

// Value layers, lowest first (see explain.LayerChart).
const (
	LayerChart        = explain.LayerChart
	LayerConfig       = explain.LayerConfig
	LayerLocalization = explain.LayerLocalization
	LayerDefinition   = explain.LayerDefinition
	LayerInstance     = explain.LayerInstance
)
