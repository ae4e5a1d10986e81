// Package localize points rendered workloads at the component's own copies of
// its images, so that one component version deploys into any environment,
// air-gapped ones included, without anyone editing image references.
//
// The image resources of a component version (type ociImage or ociArtifact,
// access ociArtifact, or a localBlob with an ociArtifact globalAccess) say
// where each image lives now — after `ocm transfer --copy-resources` that is
// the target registry. Two ways use them:
//
//   - explicit: a Mapping puts parts of an image resource's location (full
//     reference, registry/repository, registry, tag, digest) at value paths
//     before rendering. It is the OCM CLI's image mapping and ocm-controller's
//     localization rule; the "localization-hint" label of an image resource
//     is one too (see Hint).
//   - automatic (opt-in): Rewrite changes, after rendering, every container,
//     init container and ephemeral container image of Pods and pod templates
//     (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob,
//     ReplicationController, PodTemplate, Argo Rollout) that matches an image resource
//     (see Match) to the component's location, pinned by digest when the
//     component knows it. Images that match nothing are left alone and
//     reported.
//
// Registry credentials never take part: only references are rewritten.
package localize
