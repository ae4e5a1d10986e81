// Package rgd renders kro ResourceGraphDefinitions (RGDs) shipped in a
// component version, unchanged, without kro, Flux or the OCM controllers in
// the cluster: the RGD is read as a deployment definition of its own.
//
//   - schema.spec (kro's SimpleSchema) becomes the instance parameters,
//     typed, defaulted and validated by package deployment (dotted names for
//     nested fields: parameters.podinfo.message); schema.metadata.name and
//     namespace are the Application's name and destination namespace.
//   - ${…} expressions run in package expr's sandbox (cost limit, timeout,
//     result size), in the order their references make (a DAG; a cycle is
//     refused).
//   - RGDs are found in the component (media type compared without
//     parameters), else, when asked for or when the component reads as a
//     platform, in the components it references (digest-checked, bounded);
//     rgd:REF/RESOURCE names a referenced one. Such an RGD is evaluated
//     against the component being deployed.
//   - Custom SimpleSchema types (spec.schema.types) expand into nested
//     parameters; lists and maps of them are checked item by item.
//     forEach over the instance spec expands a plain node per item
//     (cartesian product, capped).
//   - OCM Resource nodes (delivery.ocm.software/v1alpha1 Resource) are
//     resolved in the component being deployed (byReference, referencePath),
//     and their status is computed as OCM's controller would: the
//     additionalStatusFields over the descriptor resource, with toOCI().
//   - Deployer nodes are interpreted, not emitted: an Argo CD Application or
//     a Flux HelmRelease/Kustomization (with its OCIRepository or
//     GitRepository) means "render this OCM resource with these values or
//     patches", with the pipeline's Helm and kustomize renderers (a tree
//     may be an ociArtifact with one Flux content layer); the
//     resource is the one whose computed status the block names, never
//     pulled from the computed URL. One block is rendered (Argo CD's by
//     default, Flux's on request).
//   - Other nodes are emitted after substitution, chained RGDs (a node of
//     another RGD's kind of the same component) are expanded, OCM
//     Repository/Component/Deployer nodes are dropped; node order becomes
//     Argo CD sync waves.
//
// The Argo CD block's destination.namespace is not used: the release
// namespace is the rendering Application's (or helm.namespace).
//
// What needs a cluster (the status of other nodes, externalRef,
// includeWhen/forEach over other nodes, Flux postRenderers and
// valuesFrom) or would leak (a Secret filled from a plain parameter) is
// refused with one line naming the node.
//
// The package is a planner (plan.Planner) wrapping deployment.DefinitionPlanner: a
// ComponentDeployment definition, explicit or shipped, still wins; see
// GraphPlanner. It is shaped like kro: package schema reads SimpleSchema,
// package graph decodes and orders the nodes, package cel holds the
// expression language; this package finds the RGD in the component,
// evaluates the graph for one instance and turns it into a plan. It reads
// the component's resources through plan.Input's Reader only.
package rgd
