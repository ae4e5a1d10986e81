// Package pipeline is the one path from a request to manifests. Render runs
// each stage once, in order: resolve the component version (and verify its
// signatures), plan (a Planner decides the steps and the work that finishes
// their output), fetch and verify only the resources to render and render
// them (Helm, kustomize or plain manifests), place them in Argo CD's sync,
// finish the whole output (the plan's Finishers), and return the objects in
// a stable order for the caller to emit. The request is only read: the
// resolved version travels in the component version and the Result.
//
// The planner is the deployment definitions' (packages internal/planning/config
// and config/rgd: a ComponentDeployment, else a kro RGD the component
// ships, else the request alone decides its resources, values, release and
// path), built by the renderer for each render through the planning
// contract of internal/planning/plan, and it reads what it needs of the
// resources through the same verified access the render uses. Build
// renderers with an Engine (NewEngine and its options); the CLI's `render`
// (people) and `generate` (Argo CD) are two front ends of it.
//
// Every error it returns is an *errdef.Error naming the Application, component,
// version and resource, so the caller can print it as one line.
package pipeline
