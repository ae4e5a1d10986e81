package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// Component names of the benchmark fixtures.
const (
	compPodinfo = "example.com/demo/podinfo"        // the demo chart (examples.Demo)
	compExtras  = "example.com/demo/podinfo-extras" // the demo kustomization (examples.Demo)
	compLarge   = "bench.example.com/large-chart"
	compShop    = "bench.example.com/shop-kustomize"
	compUnused  = "bench.example.com/unused-blob"
	compBigTree = "bench.example.com/big-tree"
	benchVer    = "1.0.0"
)

// largeChartFiles is a synthetic chart in the style of a platform umbrella
// chart: nServices services, each a Deployment, Service, ServiceAccount,
// ConfigMap, HPA and PodDisruptionBudget built from shared helpers, a CRD
// with a large schema and a values schema. It gives the template engine
// real work (include, tpl, toYaml, range, sha256sum), unlike the tiny demo.
func largeChartFiles(nServices int) map[string][]byte {
	f := map[string][]byte{}
	f["Chart.yaml"] = []byte("apiVersion: v2\nname: platform\ndescription: synthetic benchmark chart\ntype: application\nversion: 1.0.0\nappVersion: \"1.0.0\"\n")
	var v strings.Builder
	v.WriteString("global:\n  registry: registry.example.com\n  pullPolicy: IfNotPresent\n  labels:\n    team: platform\n    tier: backend\n")
	v.WriteString("podSecurityContext:\n  runAsNonRoot: true\n  runAsUser: 1000\n  fsGroup: 2000\n")
	v.WriteString("securityContext:\n  allowPrivilegeEscalation: false\n  readOnlyRootFilesystem: true\n  capabilities:\n    drop: [ALL]\n")
	v.WriteString("services:\n")
	for i := 0; i < nServices; i++ {
		fmt.Fprintf(&v, `  - name: svc-%02[1]d
    replicas: %[2]d
    port: %[3]d
    image:
      repository: team/svc-%02[1]d
      tag: "1.%[1]d.0"
    env:
      LOG_LEVEL: info
      SERVICE_INDEX: "%[1]d"
      UPSTREAM: "http://svc-%02[4]d:8080"
      FEATURE_FLAGS: "a,b,c"
    config:
      greeting: "hello from {{ .Release.Name }} svc-%02[1]d"
      timeout: 30s
      retries: 3
    resources:
      requests: {cpu: 100m, memory: 128Mi}
      limits: {cpu: 500m, memory: 256Mi}
    autoscaling: {enabled: %[5]t, min: 2, max: 10, cpu: 80}
`, i, 1+i%3, 8000+i, (i+1)%nServices, i%2 == 0)
	}
	f["values.yaml"] = []byte(v.String())
	f["values.schema.json"] = []byte(`{
  "$schema": "https://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["services"],
  "properties": {
    "services": {"type": "array", "items": {"type": "object", "required": ["name", "port", "image"],
      "properties": {"name": {"type": "string"}, "replicas": {"type": "integer", "minimum": 0},
        "port": {"type": "integer"}, "image": {"type": "object", "required": ["repository", "tag"],
          "properties": {"repository": {"type": "string"}, "tag": {"type": "string"}}}}}}
  }
}
`)
	f["templates/_helpers.tpl"] = []byte(`{{- define "platform.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "platform.fullname" -}}
{{- $root := index . 0 }}{{- $svc := index . 1 }}
{{- printf "%s-%s" $root.Release.Name $svc.name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "platform.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "platform.selectorLabels" -}}
{{- $root := index . 0 }}{{- $svc := index . 1 }}
app.kubernetes.io/name: {{ include "platform.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ $svc.name }}
{{- end }}
{{- define "platform.labels" -}}
{{- $root := index . 0 }}
helm.sh/chart: {{ include "platform.chart" $root }}
{{ include "platform.selectorLabels" . }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
{{- range $k, $v := $root.Values.global.labels }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end }}
`)
	f["templates/deployment.yaml"] = []byte(`{{- range $svc := .Values.services }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "platform.fullname" (list $ $svc) }}
  labels:
    {{- include "platform.labels" (list $ $svc) | nindent 4 }}
spec:
  {{- if not $svc.autoscaling.enabled }}
  replicas: {{ $svc.replicas }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "platform.selectorLabels" (list $ $svc) | nindent 6 }}
  template:
    metadata:
      annotations:
        checksum/config: {{ tpl (toYaml $svc.config) $ | sha256sum }}
      labels:
        {{- include "platform.labels" (list $ $svc) | nindent 8 }}
    spec:
      serviceAccountName: {{ include "platform.fullname" (list $ $svc) }}
      securityContext:
        {{- toYaml $.Values.podSecurityContext | nindent 8 }}
      containers:
        - name: {{ $svc.name }}
          image: "{{ $.Values.global.registry }}/{{ $svc.image.repository }}:{{ $svc.image.tag }}"
          imagePullPolicy: {{ $.Values.global.pullPolicy }}
          securityContext:
            {{- toYaml $.Values.securityContext | nindent 12 }}
          ports:
            - name: http
              containerPort: {{ $svc.port }}
              protocol: TCP
          env:
            {{- range $k, $v := $svc.env }}
            - name: {{ $k }}
              value: {{ $v | quote }}
            {{- end }}
          envFrom:
            - configMapRef:
                name: {{ include "platform.fullname" (list $ $svc) }}
          livenessProbe:
            httpGet: {path: /healthz, port: http}
          readinessProbe:
            httpGet: {path: /readyz, port: http}
          resources:
            {{- toYaml $svc.resources | nindent 12 }}
          volumeMounts:
            - {name: tmp, mountPath: /tmp}
      volumes:
        - {name: tmp, emptyDir: {}}
{{- end }}
`)
	f["templates/service.yaml"] = []byte(`{{- range $svc := .Values.services }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "platform.fullname" (list $ $svc) }}
  labels:
    {{- include "platform.labels" (list $ $svc) | nindent 4 }}
spec:
  type: ClusterIP
  ports:
    - port: 8080
      targetPort: http
      protocol: TCP
      name: http
  selector:
    {{- include "platform.selectorLabels" (list $ $svc) | nindent 4 }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "platform.fullname" (list $ $svc) }}
  labels:
    {{- include "platform.labels" (list $ $svc) | nindent 4 }}
{{- end }}
`)
	f["templates/configmap.yaml"] = []byte(`{{- range $svc := .Values.services }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "platform.fullname" (list $ $svc) }}
  labels:
    {{- include "platform.labels" (list $ $svc) | nindent 4 }}
data:
  {{- range $k, $v := $svc.config }}
  {{ $k | upper }}: {{ tpl (toString $v) $ | quote }}
  {{- end }}
  config.yaml: |
    {{- tpl (toYaml $svc.config) $ | nindent 4 }}
{{- end }}
`)
	f["templates/scaling.yaml"] = []byte(`{{- range $svc := .Values.services }}
{{- if $svc.autoscaling.enabled }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "platform.fullname" (list $ $svc) }}
  labels:
    {{- include "platform.labels" (list $ $svc) | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "platform.fullname" (list $ $svc) }}
  minReplicas: {{ $svc.autoscaling.min }}
  maxReplicas: {{ $svc.autoscaling.max }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: {type: Utilization, averageUtilization: {{ $svc.autoscaling.cpu }}}
{{- end }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "platform.fullname" (list $ $svc) }}
  labels:
    {{- include "platform.labels" (list $ $svc) | nindent 4 }}
spec:
  minAvailable: 1
  selector:
    matchLabels:
      {{- include "platform.selectorLabels" (list $ $svc) | nindent 6 }}
{{- end }}
`)
	f["crds/widgets.yaml"] = examples.LargeCRD(6, 5)
	return f
}

// shopTree is a synthetic kustomize tree: a base of n apps (Deployment,
// Service, ConfigMap generator) and a prod overlay with a prefix, a
// namespace, labels, image overrides, replicas and strategic-merge and
// JSON patches.
func shopTree(n int) map[string][]byte {
	f := map[string][]byte{}
	var res, gens strings.Builder
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("app-%02d", i)
		fmt.Fprintf(&res, "  - %s.yaml\n", name)
		f["base/"+name+".yaml"] = []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
        - name: main
          image: registry.example.com/shop/%[1]s:1.0.0
          ports: [{containerPort: 8080, name: http}]
          envFrom: [{configMapRef: {name: %[1]s-config}}]
          resources:
            requests: {cpu: 50m, memory: 64Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  selector: {app: %[1]s}
  ports: [{port: 80, targetPort: http}]
`, name))
		fmt.Fprintf(&gens, "  - name: %[1]s-config\n    literals: [APP=%[1]s, LOG_LEVEL=info, INDEX=\"%[2]d\"]\n", name, i)
	}
	f["base/kustomization.yaml"] = []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" + res.String() +
		"labels:\n  - pairs: {part-of: shop}\n    includeSelectors: false\nconfigMapGenerator:\n" + gens.String())
	var patches, images, replicas strings.Builder
	for i := 0; i < n; i += 2 {
		name := fmt.Sprintf("app-%02d", i)
		fmt.Fprintf(&patches, `  - target: {kind: Deployment, name: %[1]s}
    patch: |-
      - op: add
        path: /spec/template/metadata/annotations
        value: {prod/patched: "true"}
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: %[1]s}
      spec:
        template:
          spec:
            containers:
              - name: main
                resources:
                  limits: {cpu: "1", memory: 512Mi}
`, name)
		fmt.Fprintf(&images, "  - name: registry.example.com/shop/%s\n    newTag: 1.0.1\n", name)
		fmt.Fprintf(&replicas, "  - name: %s\n    count: 3\n", name)
	}
	f["overlays/prod/kustomization.yaml"] = []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../base\n" +
		"namespace: shop-prod\nnamePrefix: prod-\nlabels:\n  - pairs: {env: prod}\n    includeSelectors: true\n" +
		"patches:\n" + patches.String() + "images:\n" + images.String() + "replicas:\n" + replicas.String())
	return f
}

// writeFiles writes files under dir.
func writeFiles(dir string, files map[string][]byte) {
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fatalf("%v", err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			fatalf("%v", err)
		}
	}
}

// randomBytes returns n bytes of deterministic incompressible data.
func randomBytes(n int64, seed byte) []byte {
	b := make([]byte, n)
	var s [32]byte
	s[0] = seed
	r := rand.NewChaCha8(s)
	_, _ = r.Read(b)
	return b
}

// bigTreeTgz is a directoryTree resource: a small kustomization plus one
// large file of incompressible data, as a tgz (fast compression: the data
// does not compress anyway).
func bigTreeTgz(size int64) []byte {
	small := map[string][]byte{
		"kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n"),
		"deployment.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: big\nspec:\n  selector:\n    matchLabels: {app: big}\n" +
			"  template:\n    metadata:\n      labels: {app: big}\n    spec:\n      containers:\n        - name: main\n          image: registry.example.com/big:1.0.0\n"),
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(small))
	for n := range small {
		names = append(names, n)
	}
	sort.Strings(names)
	put := func(name string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			fatalf("%v", err)
		}
		if _, err := tw.Write(data); err != nil {
			fatalf("%v", err)
		}
	}
	for _, n := range names {
		put(n, small[n])
	}
	put("data/payload.bin", randomBytes(size, 2))
	if err := tw.Close(); err != nil {
		fatalf("%v", err)
	}
	if err := zw.Close(); err != nil {
		fatalf("%v", err)
	}
	return buf.Bytes()
}

// chartComponent is a component version with one chart resource (an OCI
// artifact set, as the OCM CLI's helm input writes it) plus extra resources.
func chartComponent(name string, chartTgz []byte, tag string, extra ...ocmbuild.Resource) *ocmbuild.Component {
	set, err := ocmbuild.ChartArtifactSet(chartTgz, tag, false)
	if err != nil {
		fatalf("artifact set of %s: %v", name, err)
	}
	res := append([]ocmbuild.Resource{{Name: "chart", Type: "helmChart", Data: set, MediaType: ocmbuild.MediaTypeArtifactSet}}, extra...)
	return &ocmbuild.Component{Name: name, Version: benchVer, Provider: "bench.example.com", Resources: res}
}

// treeComponent is a component version with one directoryTree resource.
func treeComponent(name string, tgz []byte) *ocmbuild.Component {
	return &ocmbuild.Component{Name: name, Version: benchVer, Provider: "bench.example.com",
		Resources: []ocmbuild.Resource{{Name: "manifests", Type: "directoryTree", Data: tgz, MediaType: ocmbuild.MediaTypeTgz}}}
}
