// Package deployment is the deployment-definition planner: it turns a
// component version and a request into a render plan from a
// ComponentDeployment (apiVersion deploy.argocd-ocm-plugin.io/v1alpha1) —
// explicit, shipped, or none (the request alone decides) — with its
// instance parameters, ${…} expressions (package expr), layered values,
// ConfigData, patches, jobs and waves (package ordering) and the --explain
// report (package explain). It is pure: it reads resources only through the
// plan.Input's Reader. docs/deployment-definition.md is the format and
// the value layering.
package deployment
