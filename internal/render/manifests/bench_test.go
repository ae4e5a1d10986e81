package manifests_test

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
)

// platformManifest is what `helm template --include-crds` prints for a
// platform umbrella chart of nServices services (the chart of the benchmark
// harness, bench/harness/fixtures.go): per service a ServiceAccount, a
// ConfigMap, a Service, a Deployment, a PodDisruptionBudget and, for every
// second service, a HorizontalPodAutoscaler, plus a CustomResourceDefinition
// with a large schema; in Helm's layout ("# Source:" comments, toYaml
// blocks, quoted strings). nServices = 40 gives 221 objects.
func platformManifest(nServices int) []byte {
	var b strings.Builder
	b.WriteString("---\n# Source: platform/crds/widgets.yaml\n")
	b.Write(examples.LargeCRD(6, 5))
	labels := func(indent string, i int) string {
		p := strings.Repeat(" ", len(indent))
		return fmt.Sprintf("%[1]shelm.sh/chart: platform-1.0.0\n%[1]sapp.kubernetes.io/name: platform\n%[1]sapp.kubernetes.io/instance: release\n"+
			"%[1]sapp.kubernetes.io/component: svc-%02[2]d\n%[1]sapp.kubernetes.io/version: \"1.0.0\"\n%[1]sapp.kubernetes.io/managed-by: Helm\n"+
			"%[1]steam: \"platform\"\n%[1]stier: \"backend\"\n", p, i)
	}
	selector := func(indent string, i int) string {
		return fmt.Sprintf("%[1]sapp.kubernetes.io/name: platform\n%[1]sapp.kubernetes.io/instance: release\n%[1]sapp.kubernetes.io/component: svc-%02[2]d\n", indent, i)
	}
	for i := 0; i < nServices; i++ {
		fmt.Fprintf(&b, "---\n# Source: platform/templates/service.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: release-svc-%02d\n  labels:\n%s", i, labels("    ", i))
	}
	for i := 0; i < nServices; i++ {
		cfg := fmt.Sprintf("greeting: hello from release svc-%02d\nretries: 3\ntimeout: 30s\n", i)
		fmt.Fprintf(&b, "---\n# Source: platform/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release-svc-%02d\n  labels:\n%s"+
			"data:\n  GREETING: \"hello from release svc-%02[1]d\"\n  RETRIES: \"3\"\n  TIMEOUT: \"30s\"\n  config.yaml: |\n    %[3]s",
			i, labels("    ", i), strings.ReplaceAll(strings.TrimSuffix(cfg, "\n"), "\n", "\n    ")+"\n")
	}
	for i := 0; i < nServices; i++ {
		fmt.Fprintf(&b, "---\n# Source: platform/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: release-svc-%02d\n  labels:\n%s"+
			"spec:\n  type: ClusterIP\n  ports:\n    - port: 8080\n      targetPort: http\n      protocol: TCP\n      name: http\n  selector:\n%s",
			i, labels("    ", i), selector("    ", i))
	}
	for i := 0; i < nServices; i++ {
		replicas := ""
		if i%2 != 0 {
			replicas = fmt.Sprintf("  replicas: %d\n", 1+i%3)
		}
		sum := sha256.Sum256([]byte(fmt.Sprint(i)))
		fmt.Fprintf(&b, `---
# Source: platform/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: release-svc-%02[1]d
  labels:
%[2]sspec:
%[3]s  selector:
    matchLabels:
%[4]s  template:
    metadata:
      annotations:
        checksum/config: %[5]x
      labels:
%[6]s    spec:
      serviceAccountName: release-svc-%02[1]d
      securityContext:
        fsGroup: 2000
        runAsNonRoot: true
        runAsUser: 1000
      containers:
        - name: svc-%02[1]d
          image: "registry.example.com/team/svc-%02[1]d:1.%[1]d.0"
          imagePullPolicy: IfNotPresent
          securityContext:
            allowPrivilegeEscalation: false
            capabilities:
              drop:
              - ALL
            readOnlyRootFilesystem: true
          ports:
            - name: http
              containerPort: %[7]d
              protocol: TCP
          env:
            - name: FEATURE_FLAGS
              value: "a,b,c"
            - name: LOG_LEVEL
              value: "info"
            - name: SERVICE_INDEX
              value: "%[1]d"
            - name: UPSTREAM
              value: "http://svc-%02[8]d:8080"
          envFrom:
            - configMapRef:
                name: release-svc-%02[1]d
          livenessProbe:
            httpGet: {path: /healthz, port: http}
          readinessProbe:
            httpGet: {path: /readyz, port: http}
          resources:
            limits:
              cpu: 500m
              memory: 256Mi
            requests:
              cpu: 100m
              memory: 128Mi
          volumeMounts:
            - {name: tmp, mountPath: /tmp}
      volumes:
        - {name: tmp, emptyDir: {}}
`, i, labels("    ", i), replicas, selector("      ", i), sum, labels("        ", i), 8000+i, (i+1)%nServices)
	}
	for i := 0; i < nServices; i++ {
		if i%2 == 0 {
			fmt.Fprintf(&b, "---\n# Source: platform/templates/scaling.yaml\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: release-svc-%02d\n  labels:\n%s"+
				"spec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: release-svc-%02[1]d\n  minReplicas: 2\n  maxReplicas: 10\n  metrics:\n"+
				"    - type: Resource\n      resource:\n        name: cpu\n        target: {type: Utilization, averageUtilization: 80}\n", i, labels("    ", i))
		}
		fmt.Fprintf(&b, "---\n# Source: platform/templates/scaling.yaml\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: release-svc-%02d\n  labels:\n%s"+
			"spec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n%s", i, labels("    ", i), selector("      ", i))
	}
	return []byte(b.String())
}

func TestPlatformManifest(t *testing.T) {
	objs, err := manifests.Decode("platform", platformManifest(40))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 221 {
		t.Fatalf("%d objects, want 221", len(objs))
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o["kind"].(string)]++
	}
	want := map[string]int{"CustomResourceDefinition": 1, "ServiceAccount": 40, "ConfigMap": 40, "Service": 40, "Deployment": 40,
		"HorizontalPodAutoscaler": 20, "PodDisruptionBudget": 40}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
}

func benchObjects(b *testing.B) ([]byte, []manifests.Object) {
	data := platformManifest(40)
	objs, err := manifests.Decode("platform", data)
	if err != nil {
		b.Fatal(err)
	}
	return data, objs
}

// benchLoop runs f b.N times and reports, besides wall time, the process's
// CPU time per operation (cpu-ns/op: all threads, garbage collection
// included), which load from other work on a shared machine disturbs much
// less than wall time.
func benchLoop(b *testing.B, f func() error) {
	b.ReportAllocs()
	start := cpuNanos()
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	if start >= 0 {
		b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkDecode decodes the 221 objects of platformManifest(40) (about
// 330 KB of YAML), as the plugin decodes Helm's output of a large chart.
func BenchmarkDecode(b *testing.B) {
	data, _ := benchObjects(b)
	b.SetBytes(int64(len(data)))
	benchLoop(b, func() error {
		_, err := manifests.Decode("platform", data)
		return err
	})
}

// BenchmarkDecodeReference decodes the same stream with the original
// implementation (refDecode), for comparison.
func BenchmarkDecodeReference(b *testing.B) {
	data, _ := benchObjects(b)
	b.SetBytes(int64(len(data)))
	benchLoop(b, func() error {
		_, err := refDecode("platform", data)
		return err
	})
}

// BenchmarkEncode writes the 221 objects as YAML (what the CLI prints).
func BenchmarkEncode(b *testing.B) {
	_, objs := benchObjects(b)
	benchLoop(b, func() error { return manifests.Encode(io.Discard, objs) })
}

// BenchmarkEncodeJSON writes the 221 objects as a stream of JSON documents.
func BenchmarkEncodeJSON(b *testing.B) {
	_, objs := benchObjects(b)
	benchLoop(b, func() error { return manifests.EncodeJSON(io.Discard, objs) })
}

// realworldObjects decodes a golden of ../shared/fixtures/realworld (what
// helm template prints for a real chart), or skips.
func realworldObjects(b *testing.B, name string) ([]byte, []manifests.Object) {
	data, err := os.ReadFile(filepath.Join("../../../../shared/fixtures/realworld/golden", name))
	if err != nil {
		b.Skip(err)
	}
	objs, err := manifests.Decode(name, data)
	if err != nil {
		b.Fatal(err)
	}
	return data, objs
}

// BenchmarkEncodeKubePrometheusStack writes kube-prometheus-stack's 5 MB
// (4 MB of CustomResourceDefinitions) as YAML.
func BenchmarkEncodeKubePrometheusStack(b *testing.B) {
	data, objs := realworldObjects(b, "kube-prometheus-stack-default.yaml")
	b.SetBytes(int64(len(data)))
	benchLoop(b, func() error { return manifests.Encode(io.Discard, objs) })
}

// BenchmarkDecodeKubePrometheusStack decodes the same text.
func BenchmarkDecodeKubePrometheusStack(b *testing.B) {
	data, _ := realworldObjects(b, "kube-prometheus-stack-default.yaml")
	b.SetBytes(int64(len(data)))
	benchLoop(b, func() error {
		_, err := manifests.Decode("kps", data)
		return err
	})
}

// BenchmarkEncodeJSONKubePrometheusStack writes the same objects as
// generate does (JSON documents).
func BenchmarkEncodeJSONKubePrometheusStack(b *testing.B) {
	data, objs := realworldObjects(b, "kube-prometheus-stack-default.yaml")
	b.SetBytes(int64(len(data)))
	benchLoop(b, func() error { return manifests.EncodeJSON(io.Discard, objs) })
}

// BenchmarkEncodeKubePrometheusStackReference writes the same objects the
// way the writer's reference does (sigs.k8s.io/yaml.Marshal per object, and
// the document separators): what the port of yaml.v2's emitter saves
// `render -o yaml` (issue 30: keep the port only if users wait on it).
func BenchmarkEncodeKubePrometheusStackReference(b *testing.B) {
	data, objs := realworldObjects(b, "kube-prometheus-stack-default.yaml")
	b.SetBytes(int64(len(data)))
	benchLoop(b, func() error {
		for _, o := range objs {
			out, err := sigsyaml.Marshal(map[string]any(o))
			if err != nil {
				return err
			}
			io.WriteString(io.Discard, "---\n")
			io.Discard.Write(out)
		}
		return nil
	})
}
