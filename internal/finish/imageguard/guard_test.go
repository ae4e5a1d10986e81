package imageguard_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/imageguard"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

var (
	dApp    = "sha256:" + strings.Repeat("a", 64) // podinfo: in the reference and as resource digest
	dWorker = "sha256:" + strings.Repeat("b", 64) // worker: resource digest only
	dPinned = "sha256:" + strings.Repeat("c", 64) // pinned in the reference only
	dLocal  = "sha256:" + strings.Repeat("d", 64) // a local blob image: resource digest only
	dEvil   = "sha256:" + strings.Repeat("e", 64)
)

func digestOf(d string) *ocm.Digest {
	return &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: strings.TrimPrefix(d, "sha256:")}
}

func imageRes(name, version, ref string, d *ocm.Digest) ocm.Resource {
	return ocm.Resource{ElementMeta: ocm.ElementMeta{Name: name, Version: version}, Type: "ociImage",
		Access: ocm.Access{Type: "ociArtifact", Fields: map[string]any{"type": "ociArtifact", "imageReference": ref}}, Digest: d}
}

func descriptor() *ocm.Descriptor {
	return &ocm.Descriptor{Name: "example.com/shop", Version: "1.0.0", Resources: []ocm.Resource{
		imageRes("app", "6.7.0", "ghcr.io/stefanprodan/podinfo:6.7.0@"+dApp, digestOf(dApp)),
		imageRes("worker", "1.2.0", "registry.example.com/acme/worker:1.2.0", digestOf(dWorker)),
		imageRes("redis", "7.4", "redis:7.4", nil),
		imageRes("untagged", "2.0.0", "quay.io/acme/tool", nil),
		imageRes("pinned", "3.0.0", "quay.io/acme/pinned@"+dPinned, nil),
		{ElementMeta: ocm.ElementMeta{Name: "local", Version: "1.0.0"}, Type: "ociArtifact",
			Access: ocm.Access{Type: "localBlob", Fields: map[string]any{"type": "localBlob"}}, Digest: digestOf(dLocal)},
		{ElementMeta: ocm.ElementMeta{Name: "chart", Version: "1.0.0"}, Type: "helmChart",
			Access: ocm.Access{Type: "ociArtifact", Fields: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/acme/charts/shop:1.0.0"}},
			Digest: digestOf("sha256:" + strings.Repeat("f", 64))},
	}}
}

func decode(t *testing.T, s string) []manifests.Object {
	t.Helper()
	objs, err := manifests.Decode("test.yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func deployment(image string) string {
	return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: shop}\nspec:\n  template:\n    spec:\n      containers: [{name: api, image: %q}]\n", image)
}

// Images alone, in a Deployment: what matches, what does not, and why.
func TestImages(t *testing.T) {
	g := imageguard.New(descriptor())
	signed := imageguard.New(descriptor(), imageguard.SignedDigestsOnly())
	for _, tc := range []struct {
		image         string
		allowed       bool // without SignedDigestsOnly
		signedAllowed bool
		mention       string // in the refusal without SignedDigestsOnly
	}{
		// By digest: any registry, any repository, with or without a tag.
		{"ghcr.io/stefanprodan/podinfo@" + dApp, true, true, ""},
		{"ghcr.io/stefanprodan/podinfo:6.7.0@" + dApp, true, true, ""},
		{"mirror.internal:5000/copy/podinfo@" + dApp, true, true, ""},
		{"evil.example.com/miner:latest@" + dApp, true, true, ""}, // the runtime pulls dApp: the component's content
		{"registry.example.com/acme/worker@" + dWorker, true, true, ""},
		{"anywhere.example/x@" + dLocal, true, true, ""},
		{"quay.io/acme/pinned@" + dPinned, true, false, ""}, // pinned by an access only: not signed
		{"ghcr.io/stefanprodan/podinfo@" + dEvil, false, false, `none has the digest "` + dEvil + `"`},
		{"ghcr.io/stefanprodan/podinfo:6.7.0@" + dEvil, false, false, "none has the digest"},
		{"ghcr.io/acme/charts/shop@sha256:" + strings.Repeat("f", 64), false, false, "none has the digest"}, // a chart's digest is no image
		// Upper-case hex is no digest (go-digest, as distribution reads references).
		{"ghcr.io/stefanprodan/podinfo@sha256:" + strings.ToUpper(strings.Repeat("a", 64)), false, false, "is not a valid image reference"},

		// By tag: the exact reference only.
		{"ghcr.io/stefanprodan/podinfo:6.7.0", true, false, ""},
		{"GHCR.IO/stefanprodan/podinfo:6.7.0", true, false, ""}, // host names are case-insensitive
		{"registry.example.com/acme/worker:1.2.0", true, false, ""},
		{"redis:7.4", true, false, ""},
		{"docker.io/redis:7.4", true, false, ""},
		{"docker.io/library/redis:7.4", true, false, ""},
		{"index.docker.io/library/redis:7.4", true, false, ""},
		{"quay.io/acme/tool", true, false, ""},
		{"quay.io/acme/tool:latest", true, false, ""},
		{"quay.io/acme/tool:2.0.0", true, false, ""}, // the tag automatic localisation gives it
		{"ghcr.io/stefanprodan/podinfo:6.7.1", false, false, `"ghcr.io/stefanprodan/podinfo:6.7.1"`},
		{"ghcr.io/stefanprodan/podinfo", false, false, "podinfo:latest"},
		{"ghcr.io/stefanprodan/podinfo:latest", false, false, "podinfo:latest"},
		{"mirror.internal:5000/stefanprodan/podinfo:6.7.0", false, false, "none has the reference"}, // a mirror by tag is another image
		{"ghcr.io:443/stefanprodan/podinfo:6.7.0", false, false, "none has the reference"},
		{"ghcr.io/stefanprodan/podinfo-evil:6.7.0", false, false, ""},
		{"ghcr.io/evil/stefanprodan/podinfo:6.7.0", false, false, ""},
		{"evil.example.com/miner", false, false, "evil.example.com/miner:latest"},
		{"redis:7.4.1", false, false, ""},
		{"library/redis:7.4-evil", false, false, ""},
		{"quay.io/acme/pinned", false, false, ""},            // a digest-only reference has no tag
		{"quay.io/acme/pinned:3.0.0", false, false, ""},      // … not even its version
		{"ghcr.io/acme/charts/shop:1.0.0", false, false, ""}, // a chart is no image

		// Not references at all.
		{"https://ghcr.io/stefanprodan/podinfo:6.7.0", false, false, "not a valid image reference"},
		{"oci://ghcr.io/stefanprodan/podinfo@" + dApp, false, false, "not a valid image reference"},
		{" ghcr.io/stefanprodan/podinfo:6.7.0", false, false, "not a valid image reference"},
		{"ghcr.io/stefanprodan/podinfo:6.7.0\n", false, false, "not a valid image reference"},
		{"ghcr.io/StefanProdan/podinfo:6.7.0", false, false, "not a valid image reference"},
		{"ghcr.io/stefanprodan/podinfo@sha256:abc", false, false, "not a valid image reference"},
		{"ghcr.io/stefanprodan/podinfo:6.7.0@@" + dApp, false, false, "not a valid image reference"},
		{strings.Repeat("a", 5000), false, false, "not a valid image reference"},
	} {
		objs := decode(t, deployment(tc.image))
		err := g.Check(objs)
		if tc.allowed != (err == nil) {
			t.Errorf("%q: allowed %v, got %v", tc.image, tc.allowed, err)
		}
		if err != nil {
			checkLine(t, tc.image, err)
			if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), `Deployment shop/api containers[api] (spec.template.spec.containers[0].image)`) {
				t.Errorf("%q: %v, want it to name the object, the container and %q", tc.image, err, tc.mention)
			}
		}
		if err := signed.Check(objs); tc.signedAllowed != (err == nil) {
			t.Errorf("%q signed only: allowed %v, got %v", tc.image, tc.signedAllowed, err)
		}
	}
}

func checkLine(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, errdef.ErrNotAllowed) {
		t.Errorf("%s: %v is not ErrNotAllowed", what, err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") || len(msg) > 900 {
		t.Errorf("%s: message is not one short line (%d bytes): %q", what, len(msg), msg)
	}
}

// Under SignedDigestsOnly a tag that would match says what to do.
func TestSignedTagHint(t *testing.T) {
	err := imageguard.New(descriptor(), imageguard.SignedDigestsOnly()).Check(decode(t, deployment("ghcr.io/stefanprodan/podinfo:6.7.0")))
	if err == nil || !strings.Contains(err.Error(), `names image resource "app" by tag, which the component's signature does not cover`) ||
		!strings.Contains(err.Error(), "pin it by digest") {
		t.Fatalf("got %v", err)
	}
}

const evil = "evil.example.com/miner:latest"
const good = "ghcr.io/stefanprodan/podinfo:6.7.0"

// Every place an image runs from, in every workload kind.
func TestWorkloads(t *testing.T) {
	g := imageguard.New(descriptor())
	for _, tc := range []struct {
		name, doc, mention string // mention "" means allowed
	}{
		{"pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {containers: [{name: c, image: IMG}]}",
			"Pod ns/p containers[c] (spec.containers[0].image): image \"" + evil + "\""},
		{"pod init", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {initContainers: [{name: init, image: IMG}], containers: [{name: c, image: " + good + "}]}",
			"Pod p initContainers[init] (spec.initContainers[0].image)"},
		{"pod ephemeral", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: " + good + "}], ephemeralContainers: [{name: debug, image: IMG}]}",
			"Pod p ephemeralContainers[debug] (spec.ephemeralContainers[0].image)"},
		{"pod image volume", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: " + good + "}], volumes: [{name: tools, image: {reference: IMG}}]}",
			"Pod p volumes[tools] (spec.volumes[0].image.reference)"},
		{"deployment sidecar", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: app, image: " + good + "}, {name: miner, image: IMG}]}}}",
			"Deployment d containers[miner] (spec.template.spec.containers[1].image)"},
		{"extensions deployment", "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: c, image: IMG}]}}}",
			"Deployment d containers[c]"},
		{"statefulset", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {template: {spec: {initContainers: [{name: i, image: IMG}]}}}",
			"StatefulSet s initContainers[i]"},
		{"daemonset", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: s}\nspec: {template: {spec: {containers: [{name: c, image: IMG}]}}}", "DaemonSet s containers[c]"},
		{"replicaset", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: s}\nspec: {template: {spec: {containers: [{name: c, image: IMG}]}}}", "ReplicaSet s containers[c]"},
		{"replicationcontroller", "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: s}\nspec: {template: {spec: {containers: [{name: c, image: IMG}]}}}", "ReplicationController s containers[c]"},
		{"job", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {containers: [{name: c, image: IMG}]}}}", "Job j containers[c] (spec.template.spec.containers[0].image)"},
		{"cronjob", "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: cj}\nspec: {jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: IMG}]}}}}}",
			"CronJob cj containers[c] (spec.jobTemplate.spec.template.spec.containers[0].image)"},
		{"podtemplate", "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: pt}\ntemplate: {spec: {containers: [{name: c, image: IMG}]}}", "PodTemplate pt containers[c] (template.spec.containers[0].image)"},
		{"rollout", "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec: {template: {spec: {containers: [{name: c, image: IMG}]}}}", "Rollout r containers[c] (spec.template.spec.containers[0].image)"},
		{"rollout with workloadRef", "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec: {workloadRef: {apiVersion: apps/v1, kind: Deployment, name: IMG}}", ""},
		// Pod specs elsewhere: found wherever they are.
		{"knative service", "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: k}\nspec: {template: {spec: {containers: [{image: IMG}]}}}", "Service k containers[] (spec.template.spec.containers[0].image)"},
		{"keda scaledjob", "apiVersion: keda.sh/v1alpha1\nkind: ScaledJob\nmetadata: {name: k}\nspec: {jobTargetRef: {template: {spec: {containers: [{name: c, image: IMG}]}}}}", "spec.jobTargetRef.template.spec.containers[0].image"},
		{"argo workflow container", "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec: {templates: [{name: main, container: {image: IMG}}]}", "Workflow w container (spec.templates[0].container.image)"},
		{"argo workflow script", "apiVersion: argoproj.io/v1alpha1\nkind: WorkflowTemplate\nmetadata: {name: w}\nspec: {templates: [{name: main, script: {image: IMG, source: x}}]}", "spec.templates[0].script.image"},
		{"argo workflow inline step", "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec: {templates: [{name: main, steps: [[{name: s, inline: {container: {image: IMG}}}]]}]}", "spec.templates[0].steps[0][0].inline.container.image"},
		{"argo workflow inline dag task", "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nmetadata: {name: w}\nspec: {templates: [{name: main, dag: {tasks: [{name: t, inline: {script: {image: IMG}}}]}}]}", "spec.templates[0].dag.tasks[0].inline.script.image"},
		{"tekton task", "apiVersion: tekton.dev/v1\nkind: Task\nmetadata: {name: t}\nspec: {steps: [{name: s, image: IMG}]}", "Task t steps[s] (spec.steps[0].image)"},
		{"a List", "apiVersion: v1\nkind: List\nitems: [{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {template: {spec: {containers: [{name: c, image: IMG}]}}}}]", "containers[c]"},
		{"pod spec in a field of another name", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: c, image: " + good + "}]}, extra: {containers: [{name: x, image: IMG}]}}}", "Deployment d containers[x] (spec.template.extra.containers[0].image)"},
		{"argo cd application", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\nspec: {project: admin, source: {repoURL: IMG}}", "Application argocd/a: is an Argo CD Application"},
		{"argo cd applicationset", "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: a}\nspec: {}", "is an Argo CD ApplicationSet"},
		// Shapes the guard cannot read are refused where they run.
		{"containers not a list", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: {c: {image: IMG}}}}}", "Deployment d containers (spec.template.spec.containers): is not a list"},
		{"container not a map", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [IMG]}", "Pod p containers[0] (spec.containers[0]): is not a container"},
		{"image not a string", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: [IMG]}]}", "Pod p containers[c] (spec.containers[0].image): has an image that is not a string"},
		{"pod spec not a map", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: [IMG]}}", "has a pod spec at spec.template.spec that is not a map"},
		// Harmless: no image, other objects, schemas.
		{"crd schema", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: {versions: [{name: v1, schema: {openAPIV3Schema: {default: {containers: [{image: IMG}]}}}}]}", ""},
		{"configmap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {image: IMG, containers: IMG}", ""},
		{"other lists", "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {containers: 3, steps: [[{name: a}], \"x\"], container: {name: c}}", ""},
	} {
		// Allowed with the component's image, refused with another.
		// (Wrong shapes and Applications are refused whatever the image.)
		refusedAnyway := strings.Contains(tc.mention, ": is not a") || strings.Contains(tc.mention, "that is not a") || strings.Contains(tc.mention, "is an Argo CD")
		if err := g.Check(decode(t, strings.ReplaceAll(tc.doc, "IMG", good))); (err != nil) != refusedAnyway {
			t.Errorf("%s with the component's image: %v", tc.name, err)
		}
		err := g.Check(decode(t, strings.ReplaceAll(tc.doc, "IMG", evil)))
		if tc.mention == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: got %v, want it to mention %q", tc.name, err, tc.mention)
			continue
		}
		checkLine(t, tc.name, err)
	}
}

// A component without image resources: every workload is refused, and the
// message says why.
var descriptorWithoutImages = ocm.Descriptor{Name: "example.com/chart-only", Version: "1.0.0", Resources: []ocm.Resource{
	{ElementMeta: ocm.ElementMeta{Name: "chart", Version: "1.0.0"}, Type: "helmChart", Access: ocm.Access{Type: "localBlob"}}}}

func TestNoImageResources(t *testing.T) {
	g := imageguard.New(&descriptorWithoutImages)
	for _, image := range []string{good, "ghcr.io/stefanprodan/podinfo@" + dApp} {
		err := g.Check(decode(t, deployment(image)))
		if err == nil || !strings.Contains(err.Error(), "the component declares no image resources (ociImage/ociArtifact), so the guard refuses every workload image") {
			t.Errorf("%s: %v", image, err)
		}
	}
	if err := g.Check(decode(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n")); err != nil {
		t.Errorf("no workload: %v", err)
	}
}

// Several violations: the first (in object order) is reported, with a count.
func TestFirstOfMany(t *testing.T) {
	objs := decode(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"+deployment("a.example/one:1")+"---\n"+deployment("b.example/two:2")+
		"---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: three, image: c.example/three:3}, {name: four, image: d.example/four:4}]}\n")
	g := imageguard.New(descriptor())
	vs := g.Violations(objs)
	if len(vs) != 4 || vs[0].Index != 1 || vs[3].Index != 3 || vs[3].Container != "containers[four]" {
		t.Fatalf("violations %+v", vs)
	}
	err := g.Check(objs)
	var v *imageguard.Violation
	if !errors.As(err, &v) || v.Index != 1 || !strings.Contains(err.Error(), `"a.example/one:1"`) || !strings.HasSuffix(err.Error(), "(and 3 more refused)") {
		t.Fatalf("got %v", err)
	}
}

// Names and images from the output are capped and cannot break the line.
func TestHostileNames(t *testing.T) {
	long := strings.Repeat("x", 10000)
	objs := []manifests.Object{{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p\nfake: line" + long, "namespace": "n\r"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c\u2028" + long, "image": "evil.example.com/" + long}}},
	}}
	err := imageguard.New(descriptor()).Check(objs)
	checkLine(t, "hostile names", err)
	if err == nil || strings.Count(err.Error(), "x") > 700 {
		t.Fatalf("got %v", err)
	}
}

// Deep nesting is refused, not recursed into without end.
func TestDepth(t *testing.T) {
	var v any = map[string]any{"containers": []any{map[string]any{"image": evil}}}
	for i := 0; i < imageguard.MaxDepth+10; i++ {
		v = map[string]any{"x": v}
	}
	err := imageguard.New(descriptor()).Check([]manifests.Object{{"apiVersion": "example.com/v1", "kind": "Deep", "metadata": map[string]any{"name": "d"}, "spec": v}})
	if err == nil || !strings.Contains(err.Error(), "nests deeper than") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkCheck: a large output (1000 Deployments with two containers, 1000
// ConfigMaps, 100 CRs with nested lists), all allowed.
func BenchmarkCheck(b *testing.B) {
	var objs []manifests.Object
	for i := 0; i < 1000; i++ {
		objs = append(objs, manifests.Object{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": fmt.Sprint("d", i), "namespace": "shop", "labels": map[string]any{"a": "b", "c": "d"}},
			"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"a": "b"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}, "spec": map[string]any{
					"containers": []any{
						map[string]any{"name": "app", "image": good, "ports": []any{map[string]any{"containerPort": int64(8080)}},
							"env": []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": "2"}}},
						map[string]any{"name": "cache", "image": "redis:7.4"},
					},
					"volumes": []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}}}}}},
			manifests.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprint("c", i)},
				"data": map[string]any{"config.yaml": strings.Repeat("key: value\n", 50)}})
	}
	for i := 0; i < 100; i++ {
		objs = append(objs, manifests.Object{"apiVersion": "example.com/v1", "kind": "Thing", "metadata": map[string]any{"name": fmt.Sprint("t", i)},
			"spec": map[string]any{"items": []any{map[string]any{"a": []any{int64(1), int64(2), map[string]any{"b": "c"}}}}}})
	}
	g := imageguard.New(descriptor())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := g.Check(objs); err != nil {
			b.Fatal(err)
		}
	}
}
