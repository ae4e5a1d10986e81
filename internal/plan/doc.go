// Package plan is the contract between the pipeline (plugin/pipeline) and
// the planner that decides what a component version renders into (the
// deployment definitions' planner, internal/config): a Plan of Steps, the
// Finishers that finish the whole output, and Resources, the verified
// access through which a planner reads what it needs before anything
// renders.
//
// It is internal because only this module's packages plan: a program that
// embeds the plugin renders through pipeline.Engine, whose planner is the
// request's own (its selected resources, values, release and path). The
// pipeline imports this package, so this one cannot name the pipeline's
// types: a planner is a Planner of pipeline.Request, and SetPlanner and
// ResourcesOf take the *pipeline.Renderer as it is.
package plan
