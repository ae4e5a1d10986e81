// Package plan is the contract between the pipeline (argocdocm) and
// the planner that decides what a component version renders into (the
// deployment definitions' planner, internal/planning/deployment, and the RGD planner,
// internal/planning/rgd): the Input a planner plans from, a Plan of Steps,
// the Finishers that finish the whole output, and Resources, the verified
// access through which a planner reads what it needs before anything
// renders. Both sides import this package and neither imports the other:
// the pipeline builds an Input from its Request for the Planner set on the
// renderer.
//
// It is internal because only this module's packages plan: a program that
// embeds the plugin renders through argocdocm.Engine, whose default planner
// is the request's own (its selected resources, values, release and path).
package plan
