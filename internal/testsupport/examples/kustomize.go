package examples

import (
	"fmt"
	"strings"
)

// LargeKustomizeTree is a platform as teams ship one: n services, each a
// kustomization of its own (Deployment, Service, ServiceAccount, a
// configMapGenerator) using a shared component (a PodDisruptionBudget and
// a JSON patch), and a prod overlay over all of them with a prefix, a
// namespace, labels, replicas, images, a strategic merge patch by label
// selector and a generator merge. Service directories carry names
// kyaml's in-memory file system refused ("svc-07 (eu)+").
func LargeKustomizeTree(n int) map[string][]byte {
	f := map[string][]byte{}
	f["components/monitoring/kustomization.yaml"] = []byte(`apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources: [pdb.yaml]
patches:
  - target: {kind: Deployment}
    patch: |-
      - op: add
        path: /spec/template/metadata/annotations
        value: {prometheus.io/scrape: "true", prometheus.io/port: "9090"}
`)
	f["components/monitoring/pdb.yaml"] = []byte("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb\nspec:\n  maxUnavailable: 1\n")
	var services, images, replicas strings.Builder
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("svc-%02d", i)
		dir := fmt.Sprintf("services/%s (eu)+", name)
		fmt.Fprintf(&services, "  - ../../%s\n", dir)
		f[dir+"/kustomization.yaml"] = []byte(fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
nameSuffix: -%[1]s
resources: [workload.yaml]
components: [../../components/monitoring]
labels:
  - pairs: {app.kubernetes.io/name: %[1]s}
    includeSelectors: true
configMapGenerator:
  - name: config
    literals: [SERVICE=%[1]s, LOG_LEVEL=info, "INDEX=%[2]d"]
`, name, i))
		f[dir+"/workload.yaml"] = []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels: {tier: backend}
spec:
  replicas: 1
  template:
    metadata:
      labels: {tier: backend}
    spec:
      serviceAccountName: app
      containers:
        - name: main
          image: registry.example.com/platform/%[1]s:1.0.0
          ports: [{containerPort: 8080, name: http}]
          envFrom: [{configMapRef: {name: config}}]
          resources:
            requests: {cpu: 50m, memory: 64Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: app
spec:
  ports: [{port: 80, targetPort: http}]
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: app
`, name))
		fmt.Fprintf(&images, "  - name: registry.example.com/platform/%s\n    newName: mirror.example.com/platform/%s\n    newTag: 1.0.1\n", name, name)
		if i%2 == 0 {
			fmt.Fprintf(&replicas, "  - name: app-%s\n    count: 3\n", name)
		}
	}
	f["overlays/prod/kustomization.yaml"] = []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" + services.String() +
		"namespace: platform-prod\nnamePrefix: prod-\nlabels:\n  - pairs: {env: prod}\n" +
		"commonAnnotations: {example.com/owner: platform-team}\n" +
		"patches:\n  - target: {kind: Deployment, labelSelector: tier=backend}\n    patch: |-\n      apiVersion: apps/v1\n      kind: Deployment\n      metadata: {name: any}\n" +
		"      spec:\n        template:\n          spec:\n            containers:\n              - name: main\n                resources:\n                  limits: {cpu: \"1\", memory: 512Mi}\n" +
		"configMapGenerator:\n  - name: config-svc-00\n    behavior: merge\n    literals: [LOG_LEVEL=debug]\n" +
		"images:\n" + images.String() + "replicas:\n" + replicas.String())
	return f
}
