// Package config turns a component version into a render plan: the
// deployment definition (apiVersion deploy.argocd-ocm-plugin.io/v1alpha1,
// kind ComponentDeployment), its instance parameters, CEL expressions in
// ${…}, value layering with provenance, ConfigData compatibility and the
// report behind `render --explain`.
//
// Where the definition comes from, first match wins (an explicit definition
// replaces the shipped one, they are never merged):
//
//  1. Request.DefinitionFile: --definition FILE, the Argo CD parameter
//     "definition" (a file in the Application's source directory), or
//     "resource:NAME" for a definition resource of the component;
//  2. the component's one resource of type deploymentDefinition;
//  3. none: the request alone decides what to render, as
//     the pipeline does without a planner.
//
// Values of a render are layered, lowest first; maps merge deeply, lists and
// scalars replace:
//
//	chart defaults < config resources (helmValues, ConfigData defaults)
//	  < localization (image mappings, localization-hint labels)
//	  < definition values < instance values (values files < values < --set)
//
// Instance parameters reach the values through the definition's
// expressions. Expressions see parameters, component, resources,
// references, app and cluster (and values, in patches), are bounded by a
// cost limit and a timeout, and fail with their location and text (package
// expr evaluates them).
//
// The planner is pure: it reads what it needs of the component's resources
// through the plan.Input the pipeline builds (its Reader), and returns a
// plan.Plan that carries the work finishing the output (patches on the
// steps, automatic localisation and the report on the plan), which the
// pipeline runs once every step is rendered.
//
// Concerns with a shape of their own live in sub-packages that import
// nothing of config: expr (the ${…} evaluator), ordering (sync waves, hooks
// and jobs), overlay (the kustomize overlay of a directoryTree render) and
// explain (the --explain report and the provenance of values); callers
// name their types there (explain.Report, ordering.Job).
//
// See docs/deployment-definition.md for the format.
package config
