// Package imageguard refuses rendered output that would run an image its
// component version does not declare: the image origin guard.
//
// A signature protects a component's artifacts, not what gets deployed:
// values or a definition from git can still point a signed chart at
// evil.example.com/miner. With the guard on, every workload image must be one
// of the component's image resources (type ociImage or ociArtifact), so a
// component cannot be made to run an image it does not declare, whatever
// values git supplies.
//
// # What is checked
//
// The containers, initContainers and ephemeralContainers of Pods and of every
// pod template (Deployment, StatefulSet, DaemonSet, ReplicaSet,
// ReplicationController, Job, CronJob's jobTemplate, PodTemplate and Argo
// Rollout; see localize.PodSpecPath), and the image volumes of those pod
// specs (volumes[].image.reference). Their shape is checked strictly: a
// containers field that is not a list, an entry that is not a map or an image
// that is not a string is refused, because the guard cannot vouch for what it
// cannot read. An Argo Rollout with workloadRef has no template of its own:
// the Deployment it refers to is checked where it is rendered.
//
// Every other object is searched too, to any depth, for lists named
// containers, initContainers, ephemeralContainers, sidecars or steps and maps
// named container or script whose entries carry an image (the pod specs
// embedded by Knative, KEDA, OpenKruise, Argo Workflows, Tekton and the
// like); there, entries of another shape are left alone. CustomResourceDefinitions
// (schemas, not workloads) are not searched. Operators that take an image from
// a field of another name (spec.image of a Prometheus, say) are not
// recognised: pair the guard with admission control in the cluster for those.
//
// Argo CD Applications and ApplicationSets in a component's output are
// refused: what they deploy comes from another source, which the guard cannot
// see. (A platform's own child Applications are not component output; each
// renders under the guard of its own project.)
//
// # How an image matches
//
// The component's image resources yield two sets:
//
//   - digests: the resource digest (normalisation ociArtifactDigest/v1, the
//     manifest digest a signature covers) and, unless only signed digests
//     count, the digest pinned in the access's image reference;
//   - references by tag, unless only signed digests count:
//     registry/repository:tag of the access's image reference (a pinned
//     digest dropped). An untagged, undigested reference stands for its
//     ":latest" and for ":<resource version>", the tag automatic localisation
//     gives it.
//
// A workload image pinned by digest (repo@D or repo:tag@D) matches when D is
// in the digests, whatever its registry and repository: a runtime pulls it by
// digest and checks the content, so it is the component's image wherever it
// is served from (a mirror, a localised copy). A workload image by tag
// matches only when registry/repository:tag equals one of the references, the
// registry compared case-insensitively and Docker Hub names normalised as
// package localize parses them (nginx = docker.io/library/nginx:latest). After
// localisation the workload carries the component's location (pinned by
// digest when the component knows it), which therefore matches.
//
// A signature does not cover accesses (they change when a component is
// transferred): with SignedDigestsOnly, which the pipeline sets when it
// verified the component's signatures, only resource digests count, and an
// image by tag is refused with a hint to pin it by digest (automatic
// localisation does).
//
// Only the rendered component's own image resources count, not those of its
// references.
package imageguard
